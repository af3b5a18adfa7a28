//! Short previews of hits: enough to judge a hit before expanding it, never a flood.

use mc_core::Message;
use mc_core::head::Compartment;
use mc_core::search::indexed_text;

/// Characters of a preview.
const PREVIEW_CHARS: usize = 300;

/// The part of a message's indexed text around the first query word it contains (the start
/// when none is found verbatim, as stemming may have matched), on one line.
pub(super) fn message_preview(message: &Message, terms: &[String]) -> String {
    let text = one_line(&indexed_text(message));
    let lower = text.to_lowercase();
    let first_match = terms
        .iter()
        .filter_map(|term| lower.find(term.as_str()))
        .min()
        .unwrap_or(0);
    // Lower-casing may change byte lengths; fall back to the start when offsets disagree.
    let anchor = if lower.len() == text.len() {
        first_match
    } else {
        0
    };
    let start = back_to_char_boundary(&text, anchor.saturating_sub(PREVIEW_CHARS / 3));
    excerpt(&text, start)
}

/// A compartment's title and the start of its condensed summary (the historian writes no
/// paragraph: a new compartment's paragraph tier is its one line).
pub(super) fn compartment_preview(compartment: &Compartment) -> String {
    let [_, condensed, _, _] = &compartment.tiers;
    excerpt(&one_line(&format!("{}: {condensed}", compartment.title)), 0)
}

/// A commit's message on one line.
pub(super) fn commit_preview(message: &str) -> String {
    excerpt(&one_line(message), 0)
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn back_to_char_boundary(text: &str, mut index: usize) -> usize {
    while index > 0 && !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

fn excerpt(text: &str, start: usize) -> String {
    let rest = &text[start..];
    let mut out: String = rest.chars().take(PREVIEW_CHARS).collect();
    if start > 0 {
        out.insert(0, '…');
    }
    if rest.chars().count() > PREVIEW_CHARS {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use mc_core::{Part, Role};

    use super::*;

    #[test]
    fn the_preview_starts_near_the_match() {
        let long = format!(
            "{} the needle is here {}",
            "hay ".repeat(200),
            "straw ".repeat(200)
        );
        let message = Message::new(Role::User, vec![Part::text(long)]);
        let preview = message_preview(&message, &["needle".to_owned()]);
        assert!(
            preview.starts_with('…') && preview.ends_with('…'),
            "{preview}"
        );
        assert!(preview.contains("the needle is here"), "{preview}");
        assert!(preview.chars().count() <= PREVIEW_CHARS + 2);
    }

    #[test]
    fn multibyte_text_never_splits_a_character() {
        let message = Message::new(Role::User, vec![Part::text("é".repeat(1000) + " needle")]);
        let preview = message_preview(&message, &["needle".to_owned()]);
        assert!(preview.contains("needle"));
    }
}
