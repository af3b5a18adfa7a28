//! Queued reduction: the model's (or operator's) drop list, its validation, the queue, and the
//! rendering that applies landed drops (DESIGN §5 "Tags and reduction").
//!
//! Nothing here mutates stored content. A drop is a tag in [`DropState`]; [`render_tail`]
//! replays every landed drop over pristine messages on every pass, so the same state always
//! renders the same bytes and every original part stays recoverable from the raw log.
//!
//! ```
//! use std::collections::BTreeSet;
//! use mc_core::reduction::{
//!     DropState, Reshape, land_drops, parse_drop_spec, queue_drops, render_tail,
//! };
//! use mc_core::tags::{TagIndex, TagNo, assign_tags};
//! use mc_core::{Message, Part, Role};
//!
//! let old = Message::new(Role::User, vec![Part::text("a long log")]);
//! let new = Message::new(Role::User, vec![Part::text("keep this")]);
//! let mut assigned = assign_tags(TagNo(1), 0, &old);
//! assigned.extend(assign_tags(TagNo(2), 1, &new));
//! let tags = TagIndex::new(assigned);
//!
//! let spec = parse_drop_spec("§1§").unwrap();
//! let queued = queue_drops(&DropState::default(), &spec, &tags, 0, 1).state;
//! let landing = land_drops(&queued, &tags, 1);
//! let state = queued.with_landed(&landing);
//! let tail = render_tail(&[(0, &old), (1, &new)], &tags, &state.landed, 20, &Reshape::default());
//! assert_eq!(tail[0].parts, [Part::text("[dropped §1§]")]);
//! assert_eq!(tail[1].parts, [Part::text("§2§ keep this")]);
//! ```

mod drop_label;
mod excerpt;
mod queue;
mod render;
mod reshape;
mod skeleton;
mod spec;
mod tool_pairs;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod render_tests;

pub use excerpt::{MIN_EXCERPT_CHARS, excerpt_text, marker_line, omitted_names};
pub use queue::{DropRejection, DropState, QueueOutcome, land_drops, queue_drops};
pub use render::{DropLabel, PartShown, TailDrops, render_message, render_tail};
pub use reshape::Reshape;
pub use skeleton::{CLIP_MARK, SKELETON_INPUT_CHARS, skeleton_input};
pub use spec::{
    DropSpec, DropSpecError, MAX_SPEC_BYTES, MAX_SPEC_RANGES, MAX_SPEC_TAGS, parse_drop_spec,
};
pub use tool_pairs::ToolPairs;
