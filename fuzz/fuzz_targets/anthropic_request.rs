//! The Anthropic Messages request decoder: no panic on any bytes, and a decoded request
//! re-encodes losslessly (decode → encode → decode gives the same value) and byte-stably
//! (encoding it again gives the same bytes). The conversion to the neutral model must not
//! panic either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mc_wire::anthropic::{self, MessagesRequest};

fuzz_target!(|body: &[u8]| {
    let Ok(request) = MessagesRequest::decode(body, 1 << 20) else {
        return;
    };
    let encoded = request.encode();
    let again = match MessagesRequest::decode(&encoded, usize::MAX) {
        Ok(again) => again,
        Err(error) => panic!("re-encoded request does not decode: {error}"),
    };
    assert_eq!(
        again, request,
        "decode → encode → decode changed the request"
    );
    assert_eq!(again.encode(), encoded, "encoding is not byte-stable");
    // The proxy splices separately encoded messages into the rest of the request.
    let messages = serde_json::to_vec(&request.messages).unwrap_or_default();
    assert_eq!(
        request.encode_with_messages(&messages),
        encoded,
        "encode_with_messages differs from encode"
    );
    let (before, after) = request.encode_around_messages();
    assert_eq!(
        [before, messages, after].concat(),
        encoded,
        "encode_around_messages differs from encode"
    );
    let conversation = anthropic::into_conversation(request.messages);
    for message in &conversation {
        let _ = message.content_hash();
    }
});
