//! What a compaction gets back: a stand-in for the summary the model would write (the
//! instruction that asks for it is [`mc_core::host_compaction::SUMMARY_INSTRUCTION`]).
//!
//! The replay has no model to write a real summary, so the stand-in is built from the
//! conversation itself (its text, tool calls and results, in order) and cut to the size a real
//! summary has. Its content does not matter to the cache; its size and its uniqueness do: each
//! compaction's summary differs, so one compaction can never hit another's cache entry.

use std::fmt::Write as _;

use mc_core::host_compaction::CONTINUATION;
use mc_core::{Message, Part, Role};

use crate::tokens::CountTokens;

/// How many characters of source text to gather per summary token before cutting to size:
/// o200k averages 3–5 characters per token on code and prose, so 8 always suffices.
const SOURCE_CHARS_PER_TOKEN: usize = 8;

/// The user turn that stands in for the history after compaction number `ordinal` (from 1):
/// [`CONTINUATION`] and a summary of `summary_tokens` tokens drawn from `history`.
pub(super) fn summary_message(
    counter: &dyn CountTokens,
    history: &[Message],
    summary_tokens: u64,
    ordinal: u32,
) -> Message {
    let summary = summary_text(counter, history, summary_tokens, ordinal);
    Message::new(
        Role::User,
        vec![Part::text(format!("{CONTINUATION}{summary}"))],
    )
}

/// A summary of at most `summary_tokens` tokens: a numbered heading, then the history's text
/// in order, cut on a character boundary so the count fits. Shorter only when the history
/// holds less text than that.
pub(super) fn summary_text(
    counter: &dyn CountTokens,
    history: &[Message],
    summary_tokens: u64,
    ordinal: u32,
) -> String {
    let mut text = format!("<summary>\nCompaction {ordinal}.\n");
    let wanted = usize::try_from(summary_tokens)
        .unwrap_or(usize::MAX)
        .saturating_mul(SOURCE_CHARS_PER_TOKEN);
    'gather: for message in history {
        for part in &message.parts {
            push_part(&mut text, part);
            if text.len() >= wanted {
                break 'gather;
            }
        }
    }
    if counter.count_tokens(&text) <= summary_tokens {
        return text;
    }
    // The longest prefix (on a char boundary) whose count fits: counts grow with length.
    let boundaries: Vec<usize> = text.char_indices().map(|(index, _)| index).collect();
    let (mut low, mut high) = (0usize, boundaries.len());
    while low < high {
        let middle = (low + high).div_ceil(2);
        let prefix = &text[..boundaries.get(middle).copied().unwrap_or(text.len())];
        if counter.count_tokens(prefix) <= summary_tokens {
            low = middle;
        } else {
            high = middle - 1;
        }
    }
    text.truncate(boundaries.get(low).copied().unwrap_or(0));
    text
}

fn push_part(text: &mut String, part: &Part) {
    match part {
        Part::Text { text: body, .. } => {
            text.push_str(body);
            text.push('\n');
        }
        Part::ToolCall { name, input, .. } => {
            // Writing to a String cannot fail.
            let _ = writeln!(text, "{name} {input}");
        }
        Part::ToolResult { content, .. } => {
            for inner in content {
                push_part(text, inner);
            }
        }
        Part::Thinking { .. }
        | Part::RedactedThinking { .. }
        | Part::Media { .. }
        | Part::Unknown { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::test_support::{Chars, conversation, user};

    #[test]
    fn summary_is_cut_to_size_and_unique_per_compaction() {
        let history = vec![user(&"word ".repeat(2_000))];
        let first = summary_text(&Chars, &history, 500, 1);
        let second = summary_text(&Chars, &history, 500, 2);
        assert_eq!(Chars.count_tokens(&first), 500);
        assert_ne!(first, second);
    }

    #[test]
    fn a_short_history_gives_a_short_summary() {
        let history = conversation(2);
        let text = summary_text(&Chars, &history, 10_000, 1);
        assert_eq!(
            text,
            "<summary>\nCompaction 1.\nquestion 0\nanswer 1\nquestion 1\n"
        );
    }

    #[test]
    fn cut_respects_multibyte_characters() {
        let history = vec![user(&"é".repeat(1_000))];
        let text = summary_text(&Chars, &history, 101, 1);
        assert!(Chars.count_tokens(&text) <= 101);
        assert!(Chars.count_tokens(&text) >= 100);
    }
}
