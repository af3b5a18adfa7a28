//! The OpenAI Responses request decoder: no panic on any bytes, and a decoded request
//! re-encodes losslessly (decode → encode → decode gives the same value) and byte-stably.
//! The conversion to the neutral model and back must not panic, and rendering is stable.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mc_wire::responses::{self, Input, ResponsesRequest};

fuzz_target!(|body: &[u8]| {
    let Ok(request) = ResponsesRequest::decode(body, 1 << 20) else {
        return;
    };
    let encoded = request.encode();
    let again = match ResponsesRequest::decode(&encoded, usize::MAX) {
        Ok(again) => again,
        Err(error) => panic!("re-encoded request does not decode: {error}"),
    };
    assert_eq!(
        again, request,
        "decode → encode → decode changed the request"
    );
    assert_eq!(again.encode(), encoded, "encoding is not byte-stable");
    let _ = request.stateful_reason();
    if let Some(Input::Items(items)) = &request.input {
        let conversation = responses::to_conversation(items);
        for message in &conversation {
            let _ = message.content_hash();
        }
        let is_custom = |name: &str| name.starts_with('c');
        let rendered = responses::from_conversation(&conversation, is_custom);
        let again = responses::from_conversation(&responses::to_conversation(&rendered), is_custom);
        assert_eq!(again, rendered, "rendering is not stable");
    }
});
