//! The tag number, the unit it names, and the exact bytes the model sees for both.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A per-session tag number, shown to the model as `§N§`.
///
/// Ordered by number, which is also ingest order: a higher number is a newer unit, so
/// "the newest 20 tags" is a question about numbers alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TagNo(pub u32);

impl TagNo {
    /// The number after this one, or `None` at `u32::MAX` (a session cannot reach it, but
    /// the core never panics on overflow).
    pub fn next(self) -> Option<Self> {
        self.0.checked_add(1).map(Self)
    }
}

impl fmt::Display for TagNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "§{}§", self.0)
    }
}

/// One taggable part of a stored message: the message's ordinal in the session's raw log and
/// the index into its `parts`.
///
/// Ordered by ordinal, then part, which is the order tags are assigned in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct UnitRef {
    /// The message's ordinal in the session.
    pub ordinal: u64,
    /// The index of the part inside `Message::parts`.
    pub part: u32,
}

/// A tag bound to its unit; the store persists these rows so numbers survive restarts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TagAssignment {
    /// The number.
    pub tag: TagNo,
    /// The unit it names.
    pub unit: UnitRef,
}

/// The bytes put in front of a tagged part: exactly `§N§ ` (section sign, decimal, section
/// sign, one space). Fixed forever: changing them would bust every cached prefix.
pub fn tag_prefix(tag: TagNo) -> String {
    format!("{tag} ")
}

/// `text` without the [`tag_prefix`] at its start, if it has one: what the client wrote in
/// a part the engine tagged.
pub fn untagged(text: &str) -> &str {
    let Some(after) = text.strip_prefix('§') else {
        return text;
    };
    let digits = after.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return text;
    }
    after[digits..].strip_prefix("§ ").unwrap_or(text)
}

/// The whole text of a dropped part: exactly `[dropped §N§]`, nothing else, so the model can
/// still see that the unit existed and which number it had.
pub fn dropped_placeholder(tag: TagNo) -> String {
    format!("[dropped {tag}]")
}

/// The text of a dropped part that held media: `[dropped §N§: image 1280×720 png]`. A bare
/// `[dropped §N§]` would leave the model guessing which screenshot went; the label says what
/// it was without its bytes. `labels` are the media's labels, in order; with none this is
/// exactly [`dropped_placeholder`].
pub fn dropped_media_placeholder(tag: TagNo, labels: &[String]) -> String {
    if labels.is_empty() {
        return dropped_placeholder(tag);
    }
    format!("[dropped {tag}: {}]", labels.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_leading_tag_is_taken_off() {
        assert_eq!(untagged("§12§ Reading it."), "Reading it.");
        assert_eq!(untagged("Reading §12§ it."), "Reading §12§ it.");
        assert_eq!(untagged("§§ x"), "§§ x");
        assert_eq!(untagged("§12§x"), "§12§x");
        assert_eq!(untagged("§"), "§");
    }

    #[test]
    fn bytes_are_pinned() {
        assert_eq!(TagNo(7).to_string(), "§7§");
        assert_eq!(tag_prefix(TagNo(12)), "§12§ ");
        assert_eq!(dropped_placeholder(TagNo(3)), "[dropped §3§]");
        assert_eq!(dropped_media_placeholder(TagNo(3), &[]), "[dropped §3§]");
        let labels = ["image 1280×720 png".to_owned(), "document pdf".to_owned()];
        assert_eq!(
            dropped_media_placeholder(TagNo(9), &labels),
            "[dropped §9§: image 1280×720 png, document pdf]"
        );
        assert_eq!(TagNo(u32::MAX).next(), None);
        assert_eq!(serde_json::to_string(&TagNo(5)).unwrap(), "5");
    }
}
