//! Reading the historian's user message back: the chunk from its header and one [`Line`] per
//! transcript line, each split into the pieces the renderer joined.
//!
//! The reader is lenient where a model would be: a line that does not look like `#N role:`
//! continues the one before it, and lines outside the chunk or out of order are skipped, so
//! any text gets an answer whose ordinals still come from the header alone.

use mc_core::historian::Chunk;

/// The header `historian_user_message` writes before the transcript.
const HEADER: &str = "Transcript of ordinals ";

/// A parsed historian user message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Transcript {
    /// The ordinals the answer must cover.
    pub(crate) chunk: Chunk,
    /// Its lines inside the chunk, ordinals strictly increasing.
    pub(crate) lines: Vec<Line>,
}

/// Who wrote a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Speaker {
    User,
    Assistant,
    Other,
}

/// One message's line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line {
    pub(crate) ordinal: u64,
    pub(crate) speaker: Speaker,
    /// What follows `role: `.
    pub(crate) content: String,
    /// Characters of the line as sent, prefix included: what the tiers are sized against.
    pub(crate) chars: usize,
}

/// One piece of a line, as the renderer wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece<'a> {
    Text(&'a str),
    /// `→ name(input)`; the input may be cut short.
    Call {
        name: &'a str,
        input: &'a str,
    },
    /// `← output` or `← error: output`.
    Result {
        text: &'a str,
        is_error: bool,
    },
    /// `[dropped]` or `[media]`: nothing to summarise.
    Placeholder,
}

/// The transcript in `message`, or `None` when it has no `Transcript of ordinals A to B:`
/// header line with `A <= B`. What comes before the header (the story so far, the project
/// memory) is context, not transcript.
pub(crate) fn read_transcript(message: &str) -> Option<Transcript> {
    let from = if message.starts_with(HEADER) {
        0
    } else {
        message.find(&format!("\n{HEADER}"))? + 1
    };
    let message = &message[from..];
    let (header, body) = message.split_once('\n').unwrap_or((message, ""));
    let chunk = read_header(header.trim())?;
    let mut lines: Vec<Line> = Vec::new();
    // Whether the last line read was kept: a continuation of a skipped line is skipped too.
    let mut keeping = false;
    for raw in body.split('\n') {
        let raw = raw.trim_end_matches('\r');
        match read_line(raw) {
            Some(line) => {
                let after_last = lines.last().is_none_or(|last| line.ordinal > last.ordinal);
                keeping = after_last && (chunk.start..=chunk.end).contains(&line.ordinal);
                if keeping {
                    lines.push(line);
                }
            }
            None if raw.trim().is_empty() => {}
            None => {
                if let (true, Some(last)) = (keeping, lines.last_mut()) {
                    last.content.push(' ');
                    last.content.push_str(raw.trim());
                    last.chars += 1 + raw.chars().count();
                }
            }
        }
    }
    Some(Transcript { chunk, lines })
}

fn read_header(header: &str) -> Option<Chunk> {
    let range = header.strip_prefix(HEADER)?.strip_suffix(':')?;
    let (start, end) = range.split_once(" to ")?;
    let start = start.trim().parse().ok()?;
    let end = end.trim().parse().ok()?;
    (start <= end).then_some(Chunk { start, end })
}

fn read_line(raw: &str) -> Option<Line> {
    let (number, rest) = raw.strip_prefix('#')?.split_once(' ')?;
    let ordinal = number.parse().ok()?;
    let (role, content) = rest.split_once(':')?;
    let speaker = match role {
        "user" => Speaker::User,
        "assistant" => Speaker::Assistant,
        "system" | "tool" => Speaker::Other,
        _ => return None,
    };
    let content = content.strip_prefix(' ').unwrap_or(content);
    Some(Line {
        ordinal,
        speaker,
        content: content.to_owned(),
        chars: raw.chars().count(),
    })
}

impl Line {
    /// The pieces of the line: it is cut where a call (`→ `) or a result (`← `) begins.
    pub(crate) fn pieces(&self) -> Vec<Piece<'_>> {
        let content = self.content.as_str();
        let mut starts: Vec<usize> = content
            .match_indices("→ ")
            .chain(content.match_indices("← "))
            .map(|(at, _)| at)
            .filter(|&at| at == 0 || content[..at].ends_with(' '))
            .collect();
        starts.sort_unstable();
        if starts.first() != Some(&0) {
            starts.insert(0, 0);
        }
        let ends = starts.iter().skip(1).copied().chain([content.len()]);
        starts
            .iter()
            .zip(ends)
            .map(|(&start, end)| content[start..end].trim())
            .filter(|piece| !piece.is_empty())
            .map(piece)
            .collect()
    }

    /// The line's own text (what precedes any call or result), if it has any words.
    pub(crate) fn text(&self) -> Option<&str> {
        match self.pieces().first() {
            Some(Piece::Text(text)) => Some(*text),
            _ => None,
        }
    }

    /// Whether the user typed this line: a user line that starts with text, not a result.
    pub(crate) fn is_user_text(&self) -> bool {
        self.speaker == Speaker::User && self.text().is_some()
    }
}

fn piece(text: &str) -> Piece<'_> {
    if let Some(call) = text.strip_prefix("→ ") {
        let (name, input) = call.split_once('(').unwrap_or((call, ""));
        let input = input.strip_suffix(')').unwrap_or(input);
        return Piece::Call {
            name: name.trim(),
            input,
        };
    }
    if let Some(result) = text.strip_prefix("← ") {
        return match result.strip_prefix("error: ") {
            Some(error) => Piece::Result {
                text: error,
                is_error: true,
            },
            None => Piece::Result {
                text: result,
                is_error: false,
            },
        };
    }
    // Placeholders and media labels (`[image 1280×720 png]`) carry no words of their own.
    let mut in_label = false;
    let words = text
        .split_whitespace()
        .filter(|word| {
            if in_label {
                in_label = !word.ends_with(']');
                return false;
            }
            if ["[image", "[document", "[audio"]
                .iter()
                .any(|label| word.starts_with(label))
            {
                in_label = !word.ends_with(']');
                return false;
            }
            !matches!(*word, "[dropped]" | "[media]")
        })
        .count();
    if words == 0 {
        Piece::Placeholder
    } else {
        Piece::Text(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_lines_are_read_and_strays_handled() {
        let message = "Transcript of ordinals 3 to 9:\n\n#3 user: fix it\nplease\n#4 assistant: Looking. → Read({\"file_path\":\"a.rs\"}) → Bash({\"command\":\"ls\"})\n#2 user: before\n#5 user: ← error: boom\n#12 user: past\n#6 tool: ok\n";
        let transcript = read_transcript(message).unwrap();
        assert_eq!(transcript.chunk, Chunk { start: 3, end: 9 });
        let ordinals: Vec<u64> = transcript.lines.iter().map(|line| line.ordinal).collect();
        assert_eq!(ordinals, [3, 4, 5, 6]);
        let assistant = &transcript.lines[1];
        assert_eq!(
            assistant.pieces(),
            [
                Piece::Text("Looking."),
                Piece::Call {
                    name: "Read",
                    input: "{\"file_path\":\"a.rs\"}"
                },
                Piece::Call {
                    name: "Bash",
                    input: "{\"command\":\"ls\"}"
                },
            ]
        );
        assert_eq!(transcript.lines[0].text(), Some("fix it please"));
        assert!(!transcript.lines[2].is_user_text());
        assert_eq!(
            transcript.lines[2].pieces(),
            [Piece::Result {
                text: "boom",
                is_error: true
            }]
        );
        assert_eq!(transcript.lines[3].speaker, Speaker::Other);
    }

    #[test]
    fn other_messages_are_not_transcripts() {
        for message in [
            "",
            "hello",
            "Transcript of ordinals 9 to 3:\n\n#3 user: x",
            "Transcript of ordinals a to 3:\n",
            "Transcript of ordinals 3 to 9\n",
        ] {
            assert_eq!(read_transcript(message), None, "{message}");
        }
        let empty = read_transcript("Transcript of ordinals 4 to 4:").unwrap();
        assert!(empty.lines.is_empty());
    }

    #[test]
    fn placeholders_and_empty_text_are_not_words() {
        let line = read_line("#7 user: [dropped] [media]").unwrap();
        assert_eq!(line.pieces(), [Piece::Placeholder]);
        let image = read_line("#7 user: [image 1280×720 png] [dropped] [document pdf]").unwrap();
        assert_eq!(image.pieces(), [Piece::Placeholder]);
        let said = read_line("#7 user: [image url] this one").unwrap();
        assert_eq!(said.pieces(), [Piece::Text("[image url] this one")]);
        assert!(!line.is_user_text());
        let empty = read_line("#8 user: ").unwrap();
        assert!(empty.pieces().is_empty() && !empty.is_user_text());
    }
}
