//! Cutting a transcript into episodes, and what each episode holds.
//!
//! A small model splits where the user speaks again after a stretch of work, and keeps even a
//! long stretch of tool calls to a few dozen messages per episode; the cut points are line
//! ordinals, so consecutive compartments meet without gap or overlap whatever ordinals the
//! renderer skipped.

use super::read::{Line, Piece, Speaker, Transcript};

/// Messages an episode holds before a user's text may start the next one.
const MIN_MESSAGES: usize = 6;
/// Messages after which an episode ends whoever speaks next.
const MAX_MESSAGES: usize = 40;

/// Characters of a text kept in a note.
const TEXT_NOTE_CHARS: usize = 240;
/// Characters of a call's target or a result kept in a note.
const DETAIL_NOTE_CHARS: usize = 100;
/// Characters of a target (path, command) kept for the lists.
const TARGET_CHARS: usize = 80;

/// One compartment's ordinals and the lines inside them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Episode<'a> {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) lines: &'a [Line],
}

/// The episodes of `transcript`, covering its chunk from start to end.
pub(crate) fn split_episodes(transcript: &Transcript) -> Vec<Episode<'_>> {
    let lines = transcript.lines.as_slice();
    let mut cuts = vec![0];
    let mut begun = 0;
    for (index, line) in lines.iter().enumerate().skip(1) {
        let held = index - begun;
        if (line.is_user_text() && held >= MIN_MESSAGES) || held >= MAX_MESSAGES {
            cuts.push(index);
            begun = index;
        }
    }
    let mut episodes = Vec::with_capacity(cuts.len());
    for (position, &cut) in cuts.iter().enumerate() {
        let next = cuts.get(position + 1).copied();
        let own = lines.get(cut..next.unwrap_or(lines.len())).unwrap_or(&[]);
        let start = match (position, own.first()) {
            (0, _) | (_, None) => transcript.chunk.start,
            (_, Some(first)) => first.ordinal,
        };
        let end = next
            .and_then(|next| lines.get(next))
            .map_or(transcript.chunk.end, |line| line.ordinal - 1);
        episodes.push(Episode {
            start,
            end,
            lines: own,
        });
    }
    episodes
}

/// How much a note matters when a tier has room for only some: lower goes in first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Rank {
    UserText,
    Error,
    /// The tools, files and commands of the whole episode.
    Summary,
    Call,
    OtherText,
    Result,
}

/// One sentence about one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Note {
    pub(crate) rank: Rank,
    pub(crate) text: String,
}

/// What an episode's lines show.
#[derive(Debug, Default)]
pub(crate) struct Digest<'a> {
    pub(crate) messages: usize,
    /// Characters of its transcript lines.
    pub(crate) chars: usize,
    /// One note per piece worth mentioning, in transcript order.
    pub(crate) notes: Vec<Note>,
    /// Tools called and how often, in order of first use.
    pub(crate) tools: Vec<(&'a str, usize)>,
    /// Paths the calls named, in order of first mention.
    pub(crate) files: Vec<String>,
    /// Commands the calls ran, in order of first run.
    pub(crate) commands: Vec<String>,
    pub(crate) errors: usize,
    /// The user's own texts, in order.
    pub(crate) user_texts: Vec<&'a str>,
    /// The first text a user or the assistant wrote.
    pub(crate) first_text: Option<&'a str>,
    /// Whether a call changed files (an edit, a write, a patch).
    pub(crate) edits: bool,
}

/// Reads what `episode`'s lines show.
pub(crate) fn digest<'a>(episode: &Episode<'a>) -> Digest<'a> {
    let mut digest = Digest::default();
    for line in episode.lines {
        digest.messages += 1;
        digest.chars += line.chars;
        let ordinal = line.ordinal;
        for piece in line.pieces() {
            match piece {
                Piece::Text(text) => {
                    let (rank, who) = match line.speaker {
                        Speaker::User => (Rank::UserText, "the user wrote"),
                        Speaker::Assistant => (Rank::OtherText, "the assistant said"),
                        Speaker::Other => (Rank::OtherText, "a system note read"),
                    };
                    if line.speaker == Speaker::User {
                        digest.user_texts.push(text);
                    }
                    if line.speaker != Speaker::Other && digest.first_text.is_none() {
                        digest.first_text = Some(text);
                    }
                    let quoted = excerpt(text, TEXT_NOTE_CHARS);
                    digest.note(rank, format!("At #{ordinal} {who}: \"{quoted}\""));
                }
                Piece::Call { name, input } => digest.call(ordinal, name, input),
                Piece::Result { text, is_error } => {
                    let detail = excerpt(text, DETAIL_NOTE_CHARS);
                    if is_error {
                        digest.errors += 1;
                        digest.note(Rank::Error, format!("#{ordinal} failed: {detail}."));
                    } else if !detail.is_empty() {
                        digest.note(Rank::Result, format!("#{ordinal} returned {detail}."));
                    }
                }
                Piece::Placeholder => {}
            }
        }
    }
    digest
}

impl<'a> Digest<'a> {
    fn note(&mut self, rank: Rank, text: String) {
        self.notes.push(Note { rank, text });
    }

    fn call(&mut self, ordinal: u64, name: &'a str, input: &str) {
        let name = if name.is_empty() { "a tool" } else { name };
        match self.tools.iter_mut().find(|(known, _)| *known == name) {
            Some((_, count)) => *count += 1,
            None => self.tools.push((name, 1)),
        }
        let lowered = name.to_lowercase();
        if ["edit", "write", "patch", "replace", "create"]
            .iter()
            .any(|verb| lowered.contains(verb))
        {
            self.edits = true;
        }
        let file = ["file_path", "path", "filePath", "notebook_path", "file"]
            .iter()
            .find_map(|key| string_field(input, key));
        let command = ["command", "cmd"]
            .iter()
            .find_map(|key| string_field(input, key));
        let other = ["pattern", "query", "url", "description"]
            .iter()
            .find_map(|key| string_field(input, key));
        for (target, list) in [(file, &mut self.files), (command, &mut self.commands)] {
            let target = target.map(|target| excerpt(target, TARGET_CHARS));
            if let Some(target) = target
                && !target.is_empty()
                && !list.contains(&target)
            {
                list.push(target);
            }
        }
        let target = file
            .or(command)
            .or(other)
            .map(|target| excerpt(target, DETAIL_NOTE_CHARS))
            .filter(|target| !target.is_empty());
        let text = match target {
            Some(target) => format!("#{ordinal} called {name} on `{target}`."),
            None => format!("#{ordinal} called {name}."),
        };
        self.note(Rank::Call, text);
    }
}

/// The string value of `"key":"…"` in a call's input, which may have been cut short; the
/// value runs to its closing quote or to the end of the input.
fn string_field<'i>(input: &'i str, key: &str) -> Option<&'i str> {
    let opening = format!("\"{key}\":\"");
    let at = input.find(&opening)? + opening.len();
    let value = input.get(at..)?;
    let mut escaped = false;
    for (index, character) in value.char_indices() {
        match character {
            '\\' if !escaped => escaped = true,
            '"' if !escaped => return value.get(..index),
            _ => escaped = false,
        }
    }
    Some(value)
}

/// `text` without the renderer's `… [+N chars]` cut mark, cut to `max_chars` characters at a
/// word boundary (with `…` when cut).
pub(crate) fn excerpt(text: &str, max_chars: usize) -> String {
    let text = match text.rfind("… [+") {
        Some(at) if text.ends_with(" chars]") => text.get(..at).unwrap_or(text),
        _ => text,
    };
    let whole = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if whole.chars().count() <= max_chars {
        return whole;
    }
    let room_chars = max_chars.saturating_sub(1);
    let room: String = whole.chars().take(room_chars).collect();
    let ends_on_word = whole.chars().nth(room_chars) == Some(' ');
    let kept = match room.rfind(' ') {
        Some(at) if !ends_on_word => room.get(..at).unwrap_or(&room),
        // The room ends between words, or one word is longer than the room: cut there.
        _ => room.as_str(),
    };
    format!("{}…", kept.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::historian::read::read_transcript;

    fn ranges(message: &str) -> Vec<(u64, u64, usize)> {
        let transcript = read_transcript(message).unwrap();
        split_episodes(&transcript)
            .iter()
            .map(|episode| (episode.start, episode.end, episode.lines.len()))
            .collect()
    }

    #[test]
    fn episodes_split_at_the_user_after_six_messages_and_every_forty() {
        let mut message = String::from("Transcript of ordinals 10 to 120:\n\n");
        // A user asks, eight messages of work, the user again, then 90 tool messages.
        message.push_str("#10 user: first task\n");
        for ordinal in 11..19 {
            message.push_str(&format!("#{ordinal} assistant: → Read({{}})\n"));
        }
        message.push_str("#19 user: second task\n#20 user: and a third too soon\n");
        for ordinal in 21..111 {
            message.push_str(&format!("#{ordinal} user: ← ok\n"));
        }
        assert_eq!(
            ranges(&message),
            [(10, 18, 9), (19, 58, 40), (59, 98, 40), (99, 120, 12)]
        );
        assert_eq!(
            ranges("Transcript of ordinals 5 to 8:\n\n#6 user: hi\n#7 user: hi again"),
            [(5, 8, 2)]
        );
        let empty = read_transcript("Transcript of ordinals 5 to 8:\n\n").unwrap();
        let episodes = split_episodes(&empty);
        assert_eq!(episodes.len(), 1);
        assert_eq!((episodes[0].start, episodes[0].end), (5, 8));
    }

    #[test]
    fn fields_are_read_from_cut_inputs() {
        let input = r#"{"file_path":"src/a \"b\".rs","command":"cargo t… [+40 chars]"#;
        assert_eq!(string_field(input, "file_path"), Some(r#"src/a \"b\".rs"#));
        assert_eq!(string_field(input, "command"), Some("cargo t… [+40 chars]"));
        assert_eq!(string_field(input, "pattern"), None);
    }

    #[test]
    fn excerpts_cut_at_words_and_drop_cut_marks() {
        assert_eq!(excerpt("one two three", 9), "one two…");
        assert_eq!(excerpt("one two", 9), "one two");
        assert_eq!(excerpt("abcdefghijkl", 5), "abcd…");
        assert_eq!(excerpt("log line… [+1,200 chars]", 50), "log line");
        assert_eq!(excerpt("", 5), "");
    }
}
