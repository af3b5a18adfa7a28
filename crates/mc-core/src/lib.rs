//! The pure core of Magic Context.
//!
//! This crate holds the provider-neutral conversation model and, as later work lands, every
//! decision the engine makes over it (tagging, pass planning, rendering). It does no I/O, reads
//! no clock and no environment: time and state come in as arguments, so every decision is a
//! deterministic function that tests can replay byte for byte.
//!
//! ```
//! use mc_core::{HashChain, Message, Part, Role};
//!
//! let first = Message::new(Role::User, vec![Part::text("fix the flaky test")]);
//! let second = Message::new(Role::Assistant, vec![Part::text("Looking at it now.")]);
//! let chain = HashChain::of(&[first.clone(), second]);
//! // A request that only resends the first message is a prefix of the same conversation.
//! assert!(chain.extends(&HashChain::of(&[first])));
//! ```

pub mod breakpoints;
pub mod config;
mod content_hash;
mod continuation;
mod conversation;
pub mod dreamer;
pub mod head;
mod held_bytes;
pub mod historian;
pub mod host_compaction;
pub mod identifiers;
pub mod media;
pub mod models;
pub mod pass_plan;
pub mod reclaim;
mod redact;
pub mod reduction;
pub mod search;
mod session;
mod session_mode;
pub mod tags;
mod thousands;
mod user_words;
pub mod window_fit;
pub mod workspace;

pub use config::{Config, Secret};
pub use content_hash::{ContentHash, HashChain, ParseHashError};
pub use continuation::{asks_for_summary, continues_compacted};
pub use conversation::{
    MAX_INPUT_NESTING, MediaKind, Message, Part, Role, joined_texts, value_nesting,
};
pub use held_bytes::{HeldBytes, parts_bytes, value_bytes};
pub use redact::redact_credentials;
pub use session::{Host, InvalidId, ProjectId, SessionId};
pub use session_mode::{SessionMode, session_mode};
pub use thousands::thousands;
pub use user_words::user_words;
