//! The head of the prompt: the exact bytes of `m[0]` and `m[1]` (DESIGN §5).
//!
//! Two synthetic user messages open the conversation and carry everything that replaces raw
//! history. `m[0]` is the frozen baseline and changes only on a hard fold; `m[1]` is the delta
//! since then and changes on soft busts. Both are pure functions of stored rows (no clock, no
//! randomness, no map iteration order), so a fold can be recomputed byte for byte and a cached
//! `m[0]` stays valid until the next fold. The format below is pinned by snapshot tests; a
//! change to it busts every session's cache once, so change it deliberately.
//!
//! # `m[0]`
//! Sections in this order, separated by one blank line, no trailing newline. A section with
//! nothing to show is omitted, except `<history>`, which is always present (empty as
//! `<history>\n</history>`) so the message has a stable shape from the first render.
//! - `<pinned-context>`: one `<pinned ordinal="N">` element per [`PinnedBlock`], text
//!   verbatim, by source ordinal.
//! - `<project-docs>`: one `<doc name="…">` element per non-empty [`ProjectDoc`], by name,
//!   within the docs budget ([`fit_docs`]: a long doc is cut at a heading, with a note).
//! - `<key-files>`: the files the dreamer pinned because the agent keeps re-reading them,
//!   a line saying they are snapshots, then one `<file path="…">` element per [`KeyFile`]
//!   in the dreamer's rank order, text verbatim (an excerpt ends with a line counting the
//!   lines not shown), within the key-files budget (a file that does not fit is skipped).
//! - `<user-profile>`: one `- line` per profile line.
//! - `<earlier-conversation>`: what the conversation this one continues held (the client
//!   compacted it), rendered once when the session started ([`render_earlier`]).
//! - `<history>`: one heading line per [`Compartment`] by start ordinal,
//!   `### START-END | YYYY-MM-DD HH:MM to YYYY-MM-DD HH:MM UTC | Title`, then (above the
//!   heading tiers) the range's index line, then (at every tier but the last, `Title`) the
//!   user's own messages of the range verbatim, one `<user ordinal="N">text</user>` each,
//!   then the text of the tier chosen by decay ([`decay_tier`], pressure = full-detail cost ÷
//!   history budget, floor 0.1); when still over budget, compartments are demoted most
//!   decayed first down to their heading and quotes, then lose their quotes; headings always
//!   stay.
//! - `<project-memory>`: `## CATEGORY` groups in [`MemoryCategory::ALL`] order, `- #ID content`
//!   items by id, within the memory budget; the newest memories are kept (see `memory.rs`).
//! - `<shared-memory workspace="NAME" project="ROOT">`: one per other project of the
//!   session's workspaces (by root), grouped the same way, in what the project's own
//!   memories leave of the memory budget (see `shared_memory.rs`). Absent without
//!   workspaces, so a session outside any renders exactly as before they existed.
//!
//! Text inside sections is not escaped: pinned context must stay verbatim, and the model reads
//! these tags as structure, not as a parser would.
//!
//! # `m[1]`
//! [`M1_PLACEHOLDER`] when nothing changed; otherwise one `<context-updates>` element holding,
//! separated by blank lines and each only when non-empty: `<new-history>` (compartments at full
//! detail, same heading lines), `<new-project-memory>` (grouped like `m[0]`),
//! `<project-memory-updates>` (`- #ID changed [CATEGORY]: content`, `- #ID superseded by #ID`,
//! `- #ID removed`, in log order), `<new-user-profile>` and `<open-notes>` (`- #ID text`, the
//! session's open notes and the project's smart notes whose condition came true, by id).
//!
//! # Worked example
//! (In the source, expected lines that start with `#` carry one more `#`: rustdoc's escape.)
//! ```
//! use mc_core::config::Tokens;
//! use mc_core::head::{
//!     Compartment, HeadBudgets, HeadDelta, HeadInputs, Memory, MemoryCategory, MemoryChange,
//!     PinnedBlock, Quote, M1_PLACEHOLDER, render_m0, render_m1,
//! };
//!
//! let pinned = [PinnedBlock { source_ordinal: 0, text: "# CLAUDE.md\nUse cargo nextest.".into() }];
//! let compartments = [Compartment {
//!     start_ordinal: 1,
//!     end_ordinal: 14,
//!     start_ms: 1_795_952_640_000,
//!     end_ms: 1_795_954_440_000,
//!     title: "Fix the flaky retry test".into(),
//!     importance: 60,
//!     episode: "debugging".into(),
//!     tiers: [
//!         "The retry test slept on a real clock; it now uses the simulated clock.".into(),
//!         "Retry test moved to the simulated clock.".into(),
//!         "Fixed flaky retry test.".into(),
//!         "Retry test fixed.".into(),
//!     ],
//!     quotes: vec![Quote { ordinal: 1, text: "Don't add sleeps.".into() }],
//!     index: Default::default(),
//! }];
//! let memories = [Memory { id: 3, category: MemoryCategory::Naming, content: "Ids are newtypes.".into(), permanent: false, seen_count: 1 }];
//! let profile = ["Prefers short answers.".to_owned()];
//! let inputs = HeadInputs {
//!     pinned: &pinned,
//!     profile: &profile,
//!     compartments: &compartments,
//!     memories: &memories,
//!     ..HeadInputs::default()
//! };
//! let budgets = HeadBudgets {
//!     history_tokens: Tokens(30_000),
//!     memory_tokens: Tokens(4_000),
//!     key_files_tokens: Tokens(3_000),
//! };
//! let words = |text: &str| text.split_whitespace().count() as u64;
//! let m0 = render_m0(&inputs, budgets, &words);
//! assert_eq!(m0.text, "\
//! <pinned-context>
//! <pinned ordinal=\"0\">
//! ## CLAUDE.md
//! Use cargo nextest.
//! </pinned>
//! </pinned-context>
//!
//! <user-profile>
//! - Prefers short answers.
//! </user-profile>
//!
//! <history>
//! #### 1-14 | 2026-11-29 11:44 to 2026-11-29 12:14 UTC | Fix the flaky retry test
//! <user ordinal=\"1\">Don't add sleeps.</user>
//! Retry test moved to the simulated clock.
//! </history>
//!
//! <project-memory>
//! ### NAMING
//! - #3 Ids are newtypes.
//! </project-memory>");
//!
//! assert_eq!(render_m1(&HeadDelta::default()), M1_PLACEHOLDER);
//! let removed = [MemoryChange::Removed { id: 3 }];
//! let delta = HeadDelta { memory_changes: &removed, ..HeadDelta::default() };
//! assert_eq!(render_m1(&delta), "\
//! <context-updates>
//! <project-memory-updates>
//! - #3 removed
//! </project-memory-updates>
//! </context-updates>");
//! ```

mod date;
mod decay;
mod docs_fit;
mod earlier;
mod history;
mod key_files;
mod m0;
mod m1;
mod memory;
mod rows;
mod shared_memory;

pub use decay::{DetailTier, PRESSURE_FLOOR, decay_tier};
pub use docs_fit::fit_docs;
pub use earlier::{EarlierConversation, render_earlier};
pub use key_files::KEY_FILES_OPENING;
pub use m0::{HeadBudgets, HeadInputs, RenderedHead, render_m0};
pub use m1::{HeadDelta, M1_PLACEHOLDER, render_m1};
pub use rows::{
    Compartment, KeyFile, Memory, MemoryCategory, MemoryChange, OpenNote, PinnedBlock, ProjectDoc,
    Quote, RangeIndex,
};
pub use shared_memory::SharedMemories;

#[cfg(test)]
mod tests;
