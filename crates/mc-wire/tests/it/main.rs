//! Integration tests of the wire codecs over recorded traffic and generated values.

mod anthropic_corpus;
mod anthropic_props;
mod anthropic_stream_corpus;
mod bad_input;
mod shared_data;
