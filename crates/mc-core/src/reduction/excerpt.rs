//! Excerpts: a unit shown by its head and tail instead of being dropped.
//!
//! Protected units (the newest tags, which the model is working with) and single parts too
//! large for the window on their own must still shrink when the window demands it. Dropping
//! them would leave the model blind to what it just did, so they are shown as an excerpt: the
//! first and last characters, and between them one line that names the tag, says how much was
//! left out and how to see it again, and lists the names the left-out middle used (the files,
//! symbols and values a model would otherwise have to re-read to learn were there). The raw
//! log keeps every byte; the excerpt is a pure function of the stored text and the number of
//! characters kept, which is recorded when the excerpt is decided, so every later pass
//! renders the same bytes.

use std::collections::{HashMap, HashSet};

use crate::identifiers::identifiers;
use crate::tags::TagNo;
use crate::thousands;

/// The fewest characters an excerpt keeps: below this, head and tail say too little to be
/// worth the marker line.
pub const MIN_EXCERPT_CHARS: u32 = 400;

/// A line break within this share (percent) of the end of the head (or the start of the
/// tail) is where the cut is made, so excerpts show whole lines when they can.
const LINE_SNAP_PERCENT: usize = 25;

/// The most names the marker line lists from the omitted middle.
pub const MAX_OMITTED_NAMES: usize = 20;

/// The most characters the listed names take together (about 60 tokens): the names say
/// what the middle held, they do not replace it.
pub const OMITTED_NAMES_CHARS: usize = 240;

/// `text` cut to about `keep_chars` characters: its head, one marker line naming `tag`, and
/// its tail. Text that is not longer than `keep_chars` plus the marker is returned as is.
pub fn excerpt_text(text: &str, tag: TagNo, keep_chars: u32) -> String {
    let keep = usize::try_from(keep_chars.max(MIN_EXCERPT_CHARS)).unwrap_or(usize::MAX);
    let total = text.chars().count();
    if total <= keep.saturating_add(keep / 4) {
        return text.to_owned();
    }
    let head_end = snap_head(text, byte_at(text, keep / 2), keep / 2);
    let tail_start = snap_tail(text, byte_at(text, total - (keep - keep / 2)), keep / 2);
    let head = &text[..head_end];
    let tail = &text[tail_start.max(head_end)..];
    let omitted = total - head.chars().count() - tail.chars().count();
    let middle = &text[head.len()..text.len() - tail.len()];
    let names = omitted_names(middle, head, tail);
    let break_before = if head.ends_with('\n') { "" } else { "\n" };
    format!(
        "{head}{break_before}{}\n{tail}",
        marker_line(tag, omitted as u64, total as u64, &names)
    )
}

/// The line between head and tail. It names the tag, how to see the rest and the names the
/// omitted part used (when any), and avoids the word the drop placeholder uses, so an excerpt
/// is never mistaken for a drop.
pub fn marker_line(tag: TagNo, omitted_chars: u64, total_chars: u64, names: &[&str]) -> String {
    let names = if names.is_empty() {
        String::new()
    } else {
        format!("; names in it: {}", names.join(", "))
    };
    format!(
        "[§{}§ excerpt: {} of {} characters omitted to fit the window, all kept in the session log; re-run or re-read to see them{names}]",
        tag.0,
        thousands(omitted_chars),
        thousands(total_chars)
    )
}

/// The identifiers ([`crate::identifiers`]) the omitted `middle` used that neither `head` nor
/// `tail` shows, most used first (first seen breaks ties), at most [`MAX_OMITTED_NAMES`] and
/// [`OMITTED_NAMES_CHARS`] together.
pub fn omitted_names<'t>(middle: &'t str, head: &str, tail: &str) -> Vec<&'t str> {
    let mut shown = HashSet::new();
    identifiers(head, &mut |name| {
        shown.insert(name.to_owned());
    });
    identifiers(tail, &mut |name| {
        shown.insert(name.to_owned());
    });
    let mut counts: HashMap<&'t str, (usize, usize)> = HashMap::new();
    let mut seen = 0;
    let mut each = |name: &'t str| {
        if !shown.contains(name) {
            let entry = counts.entry(name).or_insert((0, seen));
            entry.0 += 1;
            seen += 1;
        }
    };
    identifiers(middle, &mut each);
    let mut ranked: Vec<(&'t str, (usize, usize))> = counts.into_iter().collect();
    ranked.sort_unstable_by_key(|&(_, (count, first))| (std::cmp::Reverse(count), first));
    let mut used = 0;
    ranked
        .into_iter()
        .map(|(name, _)| name)
        .take_while(|name| {
            used += name.len() + 2;
            used <= OMITTED_NAMES_CHARS
        })
        .take(MAX_OMITTED_NAMES)
        .collect()
}

/// The byte offset of the character at `chars` (the end when past it).
fn byte_at(text: &str, chars: usize) -> usize {
    text.char_indices()
        .nth(chars)
        .map_or(text.len(), |(offset, _)| offset)
}

/// The head's end moved back to just after a line break, when one is close enough.
fn snap_head(text: &str, end: usize, span_chars: usize) -> usize {
    let window = span_chars * LINE_SNAP_PERCENT / 100;
    let from = text[..end]
        .char_indices()
        .rev()
        .nth(window)
        .map_or(0, |(offset, _)| offset);
    match text[from..end].rfind('\n') {
        Some(offset) => from + offset + 1,
        None => end,
    }
}

/// The tail's start moved forward to just after a line break, when one is close enough.
fn snap_tail(text: &str, start: usize, span_chars: usize) -> usize {
    let window = span_chars * LINE_SNAP_PERCENT / 100;
    let to = text[start..]
        .char_indices()
        .nth(window)
        .map_or(text.len(), |(offset, _)| start + offset);
    match text[start..to].find('\n') {
        Some(offset) => start + offset + 1,
        None => start,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_kept_whole() {
        let text = "x".repeat(500);
        assert_eq!(excerpt_text(&text, TagNo(3), 400), text);
    }

    #[test]
    fn long_text_keeps_head_tail_and_names_its_tag() {
        let text: String = (0..2_000).map(|n| format!("line {n}\n")).collect();
        let excerpt = excerpt_text(&text, TagNo(42), 1_000);
        assert!(excerpt.starts_with("line 0\n"));
        assert!(excerpt.ends_with("line 1999\n"));
        assert!(excerpt.contains("[§42§ excerpt: "));
        assert!(excerpt.chars().count() < 1_400, "{}", excerpt.len());
        // Cuts fall on line boundaries.
        let marker = excerpt
            .lines()
            .position(|line| line.starts_with("[§42§"))
            .unwrap();
        let before = excerpt.lines().nth(marker - 1).unwrap();
        let after = excerpt.lines().nth(marker + 1).unwrap();
        assert!(before.starts_with("line ") && after.starts_with("line "));
        let omitted = text.len() - excerpt.len() + marker_line(TagNo(42), 0, 0, &[]).len();
        assert!(omitted > 10_000);
    }

    #[test]
    fn the_marker_lists_the_names_only_the_omitted_middle_used() {
        let head = "reading src/card_parser.py\n".repeat(20);
        let middle: String = (0..400)
            .map(|n| format!("call parse_card_{} then round_half\n", n % 3))
            .collect();
        let tail = "done in src/card_parser.py\n".repeat(20);
        let text = format!("{head}{middle}{tail}");
        let excerpt = excerpt_text(&text, TagNo(7), 1_000);
        let marker = excerpt
            .lines()
            .find(|line| line.starts_with("[§7§"))
            .unwrap();
        // Most used first; a name the head shows is not repeated.
        assert!(
            marker
                .ends_with("; names in it: round_half, parse_card_0, parse_card_1, parse_card_2]"),
            "{marker}"
        );
        let many: String = (0..500).map(|n| format!("name_{n} ")).collect();
        let names = omitted_names(&many, "", "");
        assert_eq!(names.len(), MAX_OMITTED_NAMES);
        assert!(names.iter().map(|name| name.len() + 2).sum::<usize>() <= OMITTED_NAMES_CHARS);
    }

    #[test]
    fn multibyte_text_without_lines_is_cut_on_char_boundaries() {
        let text = "é".repeat(10_000);
        let excerpt = excerpt_text(&text, TagNo(1), 600);
        assert!(excerpt.starts_with(&"é".repeat(300)));
        assert!(excerpt.ends_with(&"é".repeat(300)));
        assert!(excerpt.contains("9,400 of 10,000 characters omitted"));
    }
}
