//! mc-embed against a fake OpenAI-compatible server on 127.0.0.1:0 and, with the `local`
//! feature, against the real all-MiniLM-L6-v2 weights named by `MC_MINILM_DIR`.
//!
//! `cfg(test)` (always true here) lets clippy treat the helpers as test code.
#![cfg(test)]

mod fake;
mod fetch;
#[cfg(feature = "local")]
mod local;
mod openai;
