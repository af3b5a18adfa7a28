//! Integration tests of mc-replay over the shared recordings, linked as one binary.
//!
//! `cfg(test)` (always true here) lets clippy treat the helpers as test code, where unwrap is
//! allowed.
#![cfg(test)]

mod caveats;
mod coding_sessions;
mod failures;
mod golden_capture;
mod golden_swe;
mod hybrid_not_worse;
mod invariants;
mod long_session;
mod magic;
mod recall_probe;
mod shared_data;
mod snapshot;
mod tiny;
mod token_scale;
mod window_guarantee;
