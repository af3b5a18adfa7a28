//! Integration tests of mc-sim, linked as one binary.
//!
//! `cfg(test)` (always true here) lets clippy treat the helpers as test code, where unwrap is
//! allowed.
#![cfg(test)]

mod calibration;
mod golden;
mod historian;
mod recording_bad_input;
mod recording_capture;
mod recording_claude_code;
mod recording_data;
mod recording_swe;
mod server;
mod server_openai;
mod server_responses;
mod server_script;
