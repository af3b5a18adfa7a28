//! The transform engine of Magic Context.
//!
//! Each pass: ingest the client's new messages into the raw log, assign tags, ask
//! `mc_core::pass_plan` for the one bust permission, apply what it allows (landing drops,
//! automatic reclaim, re-rendering the head) against the store in one transaction, and render
//! the upstream conversation with its cache breakpoints. Decisions are pure (mc-core); this
//! crate only loads state, applies them and persists the outcome.

mod cache_budget;
mod correction;
mod earlier_conversation;
mod error;
mod fit;
mod flush;
mod fork;
mod head_memory;
mod history_head;
mod host_tail;
mod ingest;
mod kept_rows;
mod nudges;
mod part_tokens;
mod pass;
mod pass_decide;
mod pass_end;
mod pass_request;
mod provider_reports;
mod reduce;
mod rendered_tail;
mod retention;
pub mod search;
mod session_cache;
mod session_modes;
mod state;
mod tail_message;
mod team_link;
pub mod tools;
mod workspace_memory;

pub use cache_budget::CacheBudget;
pub use error::{EngineError, Result};
pub use ingest::{Ingested, ingest};
pub use nudges::Nudge;
pub use pass::{CountText, Engine, PassOutcome, PassRequest};
pub use session_cache::SessionCache;
pub use state::{EngineState, PROVEN_WINDOW_TTL_MS};
pub use team_link::{TeamLink, read_knowledge, write_knowledge};
