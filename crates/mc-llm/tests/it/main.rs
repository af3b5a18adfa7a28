//! The client against an in-process fake provider on 127.0.0.1:0: no network, no real keys.
//!
//! `cfg(test)` (always true here) lets clippy treat the helpers as test code, where unwrap
//! is allowed.
#![cfg(test)]

mod fake;

mod errors;
mod fallbacks;
mod happy_path;
mod retries;
