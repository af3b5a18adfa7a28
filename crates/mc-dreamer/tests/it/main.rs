//! mc-dreamer's integration tests, linked as one binary.
//!
//! `cfg(test)` (always true here) lets clippy treat the helpers as test code, where unwrap is
//! allowed.
#![cfg(test)]

mod agent_loop;
mod archive;
mod end_to_end;
mod fixture;
mod folder;
mod maintain_docs;
mod pin_key_files;
mod promote;
mod rewrite;
mod run_waits;
mod scheduler;
mod scheduler_defer;
mod smart_notes;
mod team_lease;
mod team_maintenance;
mod team_use;
