//! Magic Context's team store: a project's knowledge (memories, their change log and the
//! team's use of them, smart notes, the commit index) kept in PostgreSQL, shared by every
//! proxy of a team.
//!
//! The raw log, tags, drops and ledger stay in each machine's SQLite store; only project
//! knowledge goes here. The team schema is versioned behind a fence like the local one
//! (`schema.rs`). Every change takes the project's advisory lock and draws a version from one
//! sequence, so a reader's version cursor sees changes in commit order and never skips one;
//! every change carries a write id recorded with it, so a write replayed from a proxy's
//! durable queue lands once. Full text uses a generated `tsvector` with a GIN index;
//! embeddings are `bytea`, compared in the proxy. The dreamer's leases live here too, on the
//! server's clock, so one dreamer at a time changes a project's memories across the team.
//!
//! What it must not do: hold a SQLite transaction, log the URL's password (only
//! [`TeamStoreUrl`]'s redacted form ever prints), or wait long: every call gives up after
//! [`CONNECT_TIMEOUT`] when the server is unreachable, and the caller falls back to its local
//! cache and queue.

mod client;
mod commits;
mod error;
mod leases;
mod maintenance;
mod notes;
mod reads;
mod rows;
mod schema;
mod scratch;
mod sync;
mod sync_loop;
mod usage;
mod writes;

pub use client::{CONNECT_TIMEOUT, TeamStore};
pub use error::{Result, TeamStoreError};
pub use leases::lease_holder;
pub use mc_core::config::TeamStoreUrl;
pub use reads::Changes;
pub use schema::TEAM_SCHEMA_VERSION;
pub use scratch::create_scratch_database;
pub use sync::{RETRY_AFTER_MS, Replayed, TeamHealth, TeamSync, Written, new_write_id};
pub use sync_loop::{SYNC_EVERY, keep_in_step, round};
pub use writes::Applied;
