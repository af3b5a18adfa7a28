//! Tags: the stable numbers `§N§ ` the model sees in front of every text part and tool result.
//!
//! The model names what it no longer needs by these numbers (`ctx_reduce(drop="3-5,12")`), so a
//! number must mean the same unit for the whole life of a session (DESIGN §5 "Tags and
//! reduction"). Numbers are assigned once per unit at ingest ([`assign_tags`]), persisted by the
//! store, and a [`TagIndex`] is rebuilt from those stored assignments; nothing here re-numbers.
//! Stored content never contains engine tags: they are added at render time from pristine text.
//!
//! ```
//! use mc_core::tags::{TagIndex, TagNo, assign_tags, tag_prefix};
//! use mc_core::{Message, Part, Role};
//!
//! let message = Message::new(Role::User, vec![Part::text("hello")]);
//! let assigned = assign_tags(TagNo(1), 0, &message);
//! let index = TagIndex::new(assigned);
//! assert_eq!(index.next_tag(), TagNo(2));
//! assert_eq!(tag_prefix(TagNo(1)), "§1§ ");
//! ```

mod assign;
mod imitation;
mod index;
mod number;

pub use assign::{assign_tags, is_taggable};
pub use imitation::strip_tag_imitations;
pub use index::TagIndex;
pub use number::{
    TagAssignment, TagNo, UnitRef, dropped_media_placeholder, dropped_placeholder, tag_prefix,
    untagged,
};
