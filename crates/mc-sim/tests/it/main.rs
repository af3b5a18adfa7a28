//! Integration tests of mc-sim, linked as one binary.
//!
//! `cfg(test)` (always true here) lets clippy treat the helpers as test code, where unwrap is
//! allowed.
#![cfg(test)]

mod golden;
