//! Integration tests of mc-engine: the real engine over a real SQLite store in a tempdir,
//! driven request by request with a simulated clock.
//!
//! Every module is `cfg(test)` (always true here) so that clippy treats the helpers in them as
//! test code: `allow-unwrap-in-tests` otherwise covers only `#[test]` functions.

#[cfg(test)]
mod checks;
#[cfg(test)]
mod continued;
#[cfg(test)]
mod coverage;
#[cfg(test)]
mod examples;
#[cfg(test)]
mod history;
#[cfg(test)]
mod key_files_head;
#[cfg(test)]
mod memory_head;
#[cfg(test)]
mod modes;
#[cfg(test)]
mod nudges;
#[cfg(test)]
mod project_docs;
#[cfg(test)]
mod props;
#[cfg(test)]
mod reasoning;
#[cfg(test)]
mod refusal;
#[cfg(test)]
mod reused_ids;
#[cfg(test)]
mod semantic;
#[cfg(test)]
mod session;
#[cfg(test)]
mod sessions;
#[cfg(test)]
mod snapshot;
#[cfg(test)]
mod support;
#[cfg(test)]
mod team_store;
#[cfg(test)]
mod window_fit;
#[cfg(test)]
mod workspace_head;
