//! `m[1]`: what changed since `m[0]` was built, re-rendered on soft busts.

use super::decay::DetailTier;
use super::history::render_compartments;
use super::m0::render_profile;
use super::memory::render_grouped;
use super::rows::{Compartment, Memory, MemoryChange, OpenNote};

/// Most open notes `m[1]` lists (the newest); `ctx_note read` shows them all.
const MAX_NOTES: usize = 20;

/// Most characters of one note shown; a longer one ends with `…`.
const NOTE_CHARS: usize = 300;

/// `m[1]` when nothing changed since `m[0]`. Never empty, because an empty user message is
/// rejected by providers and a fixed text keeps the prefix after it stable.
pub const M1_PLACEHOLDER: &str = "<context-updates>none</context-updates>";

/// What happened since `m[0]` was rendered, borrowed from the store.
#[derive(Debug, Clone, Copy, Default)]
pub struct HeadDelta<'a> {
    /// Compartments published since the fold (any order; rendered by start ordinal).
    pub compartments: &'a [Compartment],
    /// The memory change log since the fold, in log order.
    pub memory_changes: &'a [MemoryChange],
    /// Profile lines added since the fold.
    pub profile: &'a [String],
    /// The session's open notes (any order; listed by id, the newest [`MAX_NOTES`]).
    pub notes: &'a [OpenNote],
}

impl HeadDelta<'_> {
    /// Whether there is nothing to show (then `m[1]` is [`M1_PLACEHOLDER`]).
    pub fn is_empty(&self) -> bool {
        self.compartments.is_empty()
            && self.memory_changes.is_empty()
            && self.profile.iter().all(|line| line.trim().is_empty())
            && self.notes.is_empty()
    }
}

/// Renders `m[1]` (format in the module doc): new compartments at their full tier, new memories,
/// memory updates in log order, new profile lines; [`M1_PLACEHOLDER`] when there is nothing.
pub fn render_m1(delta: &HeadDelta<'_>) -> String {
    let mut sections: Vec<String> = Vec::new();

    if !delta.compartments.is_empty() {
        let mut ordered: Vec<&Compartment> = delta.compartments.iter().collect();
        ordered.sort_by_key(|c| (c.start_ordinal, c.end_ordinal));
        let chosen: Vec<(&Compartment, DetailTier)> = ordered
            .into_iter()
            .map(|compartment| (compartment, DetailTier::Full))
            .collect();
        let mut out = String::from("<new-history>\n");
        out.push_str(&render_compartments(&chosen));
        out.push_str("</new-history>");
        sections.push(out);
    }

    let added: Vec<&Memory> = delta
        .memory_changes
        .iter()
        .filter_map(|change| match change {
            MemoryChange::Added(memory) => Some(memory),
            MemoryChange::Changed { .. }
            | MemoryChange::Superseded { .. }
            | MemoryChange::Removed { .. } => None,
        })
        .collect();
    if !added.is_empty() {
        sections.push(format!(
            "<new-project-memory>\n{}</new-project-memory>",
            render_grouped(&added)
        ));
    }

    let updates: Vec<String> = delta
        .memory_changes
        .iter()
        .filter_map(update_line)
        .collect();
    if !updates.is_empty() {
        sections.push(format!(
            "<project-memory-updates>\n{}</project-memory-updates>",
            updates.concat()
        ));
    }

    sections.extend(render_profile("new-user-profile", delta.profile));
    sections.extend(render_notes(delta.notes));

    if sections.is_empty() {
        return M1_PLACEHOLDER.to_owned();
    }
    format!(
        "<context-updates>\n{}\n</context-updates>",
        sections.join("\n\n")
    )
}

/// `<open-notes>`: one `- #ID text` line per note (the newest [`MAX_NOTES`], by id), each
/// on one line and at most [`NOTE_CHARS`] characters.
fn render_notes(notes: &[OpenNote]) -> Option<String> {
    if notes.is_empty() {
        return None;
    }
    let mut ordered: Vec<&OpenNote> = notes.iter().collect();
    ordered.sort_by_key(|note| note.id);
    let skip = ordered.len().saturating_sub(MAX_NOTES);
    let mut out = String::from("<open-notes>\n");
    for note in &ordered[skip..] {
        let line: String = note
            .content
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let shown: String = line.chars().take(NOTE_CHARS).collect();
        let more = if shown.len() < line.len() { "…" } else { "" };
        out.push_str(&format!("- #{} {shown}{more}\n", note.id));
    }
    out.push_str("</open-notes>");
    Some(out)
}

/// One line of `<project-memory-updates>`; additions are listed as new memories instead.
fn update_line(change: &MemoryChange) -> Option<String> {
    match change {
        MemoryChange::Added(_) => None,
        MemoryChange::Changed {
            id,
            category,
            content,
        } => Some(format!(
            "- #{id} changed [{}]: {}\n",
            category.as_str(),
            content.trim().replace('\n', "\n  ")
        )),
        MemoryChange::Superseded { id, by } => Some(format!("- #{id} superseded by #{by}\n")),
        MemoryChange::Removed { id } => Some(format!("- #{id} removed\n")),
    }
}
