//! The historian of Magic Context (DESIGN §5): summarises a session's older raw history into
//! compartments in the background, so the prompt keeps the story while the raw messages
//! leave it.
//!
//! A run finds the next chunk (the unsummarised history outside the protected live tail,
//! once it reaches the trigger; never splitting a tool call from its result), renders its
//! transcript, asks a model for a forced `record_history` call, validates the answer (one
//! repair round quoting the problem, then the next model of the chain), and publishes the
//! compartments, facts and observations with the run's record in one transaction. Invalid
//! output never reaches the store, and a failed run is recorded and retried later with
//! backoff. A held run (its only compartment may not have ended) is asked again once the
//! history it did not read reaches the trigger.
//!
//! It must not: block or delay a request (runs are spawned, never awaited by a pass), bust a
//! cache (the engine moves its boundary only on a pass that may change bytes anyway), keep a
//! credential anywhere but in memory, or hold the pure logic (chunking, transcript, prompt,
//! validation live in `mc_core::historian`).
//!
//! The pieces are usable one by one: [`next_job`], [`accept`] and [`publish`] are
//! synchronous, so a replay on a simulated clock drives them without a runtime;
//! [`Historian`] composes them with [`run_job`] on tokio, and [`OnDemand`] runs them chunk
//! after chunk when an operator asks (`wrapup`; `recomp`, which rebuilds into a staging area
//! with [`next_rebuild_job`]). [`standalone_endpoints`] picks the models of a run that no
//! client call started.

mod accept;
mod endpoints;
mod error;
mod job;
mod llm_chain;
mod on_demand;
mod publish;
mod run;
mod service;
mod settings;

pub use accept::{Accepted, accept};
pub use endpoints::{
    ANTHROPIC_KEY_ENV, ANTHROPIC_SMALL_MODEL, EnvLookup, OPENAI_KEY_ENV, OPENAI_SMALL_MODEL,
    configured_endpoints, distinct, standalone_endpoints,
};
pub use error::{HistorianError, Result};
pub use job::{Destination, Job, next_job, next_rebuild_job};
pub use llm_chain::LlmChain;
pub use on_demand::{Ask, Ending, OnDemand, Rebuilt, Runs};
pub use publish::{Published, publish};
pub use run::{HistorianModel, RunReport, run_job};
pub use service::{Clock, Counter, Historian, RunRequest, StoreAccess};
pub use settings::{ASSUMED_USABLE_WINDOW, HistorianSettings};
