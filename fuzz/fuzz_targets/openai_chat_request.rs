//! The OpenAI Chat Completions request decoder: no panic on any bytes, and a decoded
//! request re-encodes losslessly (decode → encode → decode gives the same value) and
//! byte-stably. The conversion to the neutral model must not panic either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mc_wire::openai::{self, ChatRequest};

fuzz_target!(|body: &[u8]| {
    let Ok(request) = ChatRequest::decode(body, 1 << 20) else {
        return;
    };
    let encoded = request.encode();
    let again = match ChatRequest::decode(&encoded, usize::MAX) {
        Ok(again) => again,
        Err(error) => panic!("re-encoded request does not decode: {error}"),
    };
    assert_eq!(
        again, request,
        "decode → encode → decode changed the request"
    );
    assert_eq!(again.encode(), encoded, "encoding is not byte-stable");
    if let Ok(conversation) = openai::to_conversation(&request) {
        for message in &conversation {
            let _ = message.content_hash();
        }
    }
});
