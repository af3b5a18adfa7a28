//! The stored rows the head is rendered from.
//!
//! These mirror what the store holds (compartments, memories, profile lines, pinned client
//! context); `m[0]` and `m[1]` are pure functions of them, so a fold can be recomputed from the
//! store byte for byte at any time.

use serde::{Deserialize, Serialize};

/// Client context that history compaction would otherwise lose, kept verbatim in `m[0]`.
///
/// For Claude Code: the CLAUDE.md and environment reminder blocks of the first user message,
/// and every system-role message of the range the historian covered (DESIGN §5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinnedBlock {
    /// Ordinal of the stored message the text came from; blocks render in this order.
    pub source_ordinal: u64,
    /// The text exactly as the client sent it.
    pub text: String,
}

/// One historian compartment: a summarised, contiguous ordinal range of the raw log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compartment {
    /// First ordinal covered (inclusive).
    pub start_ordinal: u64,
    /// Last ordinal covered (inclusive).
    pub end_ordinal: u64,
    /// Time of the first covered message, Unix milliseconds.
    pub start_ms: u64,
    /// Time of the last covered message, Unix milliseconds.
    pub end_ms: u64,
    /// A short title; rendered on the heading line (newlines become spaces).
    pub title: String,
    /// The historian's importance score, 1–100 (50 is neutral); it stretches the decay
    /// half-life so important work fades slower.
    pub importance: u8,
    /// The historian's episode type (debugging, feature, research, …); stored for search and
    /// the dreamer, not rendered.
    pub episode: String,
    /// The four detail tiers: full, condensed, one paragraph, one line. The historian writes
    /// the condensed text and the line; the first is stored as the full tier too and the
    /// second as the paragraph. Compartments stored before keep the four texts they have.
    pub tiers: [String; 4],
    /// The user's own messages of the range, verbatim (long ones excerpted), in order. They
    /// render at every tier above the heading: what users lose first to compaction is their
    /// own stated intent, corrections and constraints.
    pub quotes: Vec<Quote>,
    /// The files, commands and names the range used, taken from its raw messages when it was
    /// published ([`crate::historian::range_index`]); rendered under the heading at every
    /// tier above it.
    pub index: RangeIndex,
}

/// A compartment's index: what its range read, ran and named.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RangeIndex {
    /// Files its tool calls read or wrote (the last two components of each path).
    pub files: Vec<String>,
    /// Shell commands it ran, the last few, shortened.
    pub ran: Vec<String>,
    /// Other identifiers it leaned on, in the order they first appeared.
    pub names: Vec<String>,
}

impl RangeIndex {
    /// Whether it lists nothing.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.ran.is_empty() && self.names.is_empty()
    }
}

/// One of the user's own messages, kept verbatim in its compartment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quote {
    /// The message's ordinal.
    pub ordinal: u64,
    /// What the user wrote (see [`crate::user_words`]).
    pub text: String,
}

/// The five project memory categories, in their rendering order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MemoryCategory {
    /// How work must be done in this project.
    ProjectRules,
    /// How the code is organised.
    Architecture,
    /// Limits that must not be crossed.
    Constraints,
    /// Values of settings, ports, paths.
    ConfigValues,
    /// Names and naming conventions.
    Naming,
}

impl MemoryCategory {
    /// Every category in rendering order.
    pub const ALL: [Self; 5] = [
        Self::ProjectRules,
        Self::Architecture,
        Self::Constraints,
        Self::ConfigValues,
        Self::Naming,
    ];

    /// The name as stored and rendered (`PROJECT_RULES`, …).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ProjectRules => "PROJECT_RULES",
            Self::Architecture => "ARCHITECTURE",
            Self::Constraints => "CONSTRAINTS",
            Self::ConfigValues => "CONFIG_VALUES",
            Self::Naming => "NAMING",
        }
    }

    /// The category `name` stands for, read leniently (`architecture`, `config-values`):
    /// people type these names in config files and tool calls.
    pub fn parse(name: &str) -> Option<Self> {
        let wanted = name.trim().to_uppercase().replace(['-', ' '], "_");
        Self::ALL
            .into_iter()
            .find(|category| category.as_str() == wanted)
    }
}

/// One project memory. Ids are assigned by the store in increasing order, so a larger id is
/// a newer memory. When the memory budget is short, permanent memories are kept first, then
/// the most often stated, then the newest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memory {
    /// The store's id, shown to the model so updates in `m[1]` can name it.
    pub id: u64,
    /// The category it is grouped under.
    pub category: MemoryCategory,
    /// The fact itself.
    pub content: String,
    /// Kept for good by the operator: shown before any other.
    #[serde(default)]
    pub permanent: bool,
    /// How many times it was stated (restatements merged): the memory's importance.
    #[serde(default = "one")]
    pub seen_count: u64,
}

fn one() -> u64 {
    1
}

/// A change to project memory since `m[0]` was built, shown in `m[1]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemoryChange {
    /// A new memory.
    Added(Memory),
    /// A memory whose content (or category) was rewritten; carries the new version.
    Changed {
        /// The memory's id.
        id: u64,
        /// Its category now.
        category: MemoryCategory,
        /// Its content now.
        content: String,
    },
    /// A memory replaced by another one (merged or corrected).
    Superseded {
        /// The memory that no longer holds.
        id: u64,
        /// The memory that replaces it.
        by: u64,
    },
    /// A memory deleted outright.
    Removed {
        /// The memory's id.
        id: u64,
    },
}

/// A project document rendered into `m[0]` when enabled (root ARCHITECTURE.md, STRUCTURE.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectDoc {
    /// The file name as shown to the model (`ARCHITECTURE.md`); docs render sorted by it.
    pub name: String,
    /// The file's text.
    pub text: String,
}

/// A file the dreamer pinned for the project (`pin_key_files`): one the agent keeps
/// re-reading, as it was when pinned, shown in `m[0]` so it need not be read again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyFile {
    /// The file, relative to the project's root.
    pub path: String,
    /// Its text when pinned: the whole file, or its first lines when `cut_lines` is not 0.
    pub text: String,
    /// Lines of the file after `text` that are not shown.
    pub cut_lines: u32,
}

/// A note the agent left open for its session (or a project's smart note whose condition
/// came true), shown in `m[1]` so it comes back without a `ctx_note read`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenNote {
    /// The note's id, as `ctx_note` names it.
    pub id: u64,
    /// What it says.
    pub content: String,
}
