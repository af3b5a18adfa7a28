//! The proxy's incremental Responses decoder against the full decoder: the input is a
//! sequence of Responses request bodies separated by NUL bytes (a conversation's follow-ups,
//! mutated), decoded in order through one set of remembered requests. Every body must
//! decode to exactly what a full decode gives (request, conversation, hash chain, where
//! each message starts), or fail with the same error.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;

/// Bodies per input; the decoder remembers 16 requests.
const MAX_BODIES: usize = 24;

fuzz_target!(|data: &[u8]| {
    let bodies: Vec<Bytes> = data
        .split(|&byte| byte == 0)
        .take(MAX_BODIES)
        .map(Bytes::copy_from_slice)
        .collect();
    if let Err(disagreement) = mc_proxy::check_responses_against_full(&bodies) {
        panic!("{disagreement}");
    }
});
