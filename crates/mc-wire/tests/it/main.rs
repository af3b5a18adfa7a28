//! Integration tests of the wire codecs over recorded traffic and generated values.

// Marks the whole harness as test code, so fixtures may unwrap like tests do.
#![cfg(test)]

mod anthropic_corpus;
mod anthropic_props;
mod anthropic_stream_corpus;
mod bad_input;
mod byte_stability;
mod openai_corpus;
mod shared_data;
