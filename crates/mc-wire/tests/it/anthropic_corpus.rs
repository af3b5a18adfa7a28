//! Every recorded Claude Code request and response survives decode → encode byte for byte.

use mc_core::HashChain;
use mc_wire::anthropic::{self, MessagesRequest, MessagesResponse};
use serde_json::Value;

use crate::shared_data;

const LIMIT: usize = 64 << 20;

fn body_bytes(body: &Value) -> Vec<u8> {
    serde_json::to_vec(body).expect("a JSON value serialises")
}

#[test]
fn every_request_body_round_trips_exactly() {
    let capture = shared_data::anthropic_capture();
    assert_eq!(
        capture.len(),
        64,
        "the capture holds 64 request/response pairs"
    );
    for (line, pair) in capture.iter().enumerate() {
        let original = body_bytes(&pair["request"]["body"]);
        let request = MessagesRequest::decode(&original, LIMIT)
            .unwrap_or_else(|e| panic!("line {line}: {e}"));
        let encoded = request.encode();
        assert_eq!(
            String::from_utf8_lossy(&encoded),
            String::from_utf8_lossy(&original),
            "line {line}: encode(decode(body)) differs from the body"
        );
        let again = MessagesRequest::decode(&encoded, LIMIT).expect("re-decode");
        assert_eq!(again, request, "line {line}: decode(encode(x)) != x");
        let mut without = request.clone();
        let messages = body_bytes(&pair["request"]["body"]["messages"]);
        without.messages.clear();
        assert!(
            without.encode_with_messages(&messages) == original,
            "line {line}: splicing the encoded messages changed the body"
        );
        assert_eq!(
            again.encode(),
            encoded,
            "line {line}: encoding is not stable"
        );
    }
}

#[test]
fn every_json_response_round_trips_exactly() {
    let mut checked = 0;
    for (line, pair) in shared_data::anthropic_capture().iter().enumerate() {
        let body = &pair["response"]["body"];
        if !body.is_object() {
            continue;
        }
        let original = body_bytes(body);
        let response = MessagesResponse::decode(&original, LIMIT)
            .unwrap_or_else(|e| panic!("line {line}: {e}"));
        assert_eq!(response.encode(), original, "line {line}");
        let usage = response
            .usage
            .as_ref()
            .expect("recorded responses carry usage");
        assert!(
            usage.input_tokens.is_some() && usage.cache_read_input_tokens.is_some(),
            "line {line}"
        );
        checked += 1;
    }
    assert_eq!(checked, 18, "18 responses in the capture are plain JSON");
}

#[test]
fn every_request_converts_to_the_model_and_back() {
    for (line, pair) in shared_data::anthropic_capture().iter().enumerate() {
        let request =
            MessagesRequest::decode(&body_bytes(&pair["request"]["body"]), LIMIT).expect("decode");
        let conversation = anthropic::to_conversation(&request);
        assert_eq!(conversation.len(), request.messages.len());
        for (index, message) in conversation.iter().enumerate() {
            let rendered = anthropic::from_message(message);
            assert_eq!(
                &anthropic::to_message(&rendered),
                message,
                "line {line} message {index}"
            );
        }
    }
}

/// Claude Code resends the whole history each turn and moves its `cache_control` marker to
/// the newest message; the hash chain ignores the marker, so each main-session request
/// extends the one before, except where the history was compacted.
#[test]
fn main_session_requests_extend_each_other() {
    let chains: Vec<HashChain> = shared_data::anthropic_capture()
        .iter()
        .filter(|pair| pair["request"]["body"]["model"] == "claude-sonnet-4-20250514")
        .map(|pair| {
            let request = MessagesRequest::decode(&body_bytes(&pair["request"]["body"]), LIMIT)
                .expect("decode");
            HashChain::of(&anthropic::to_conversation(&request))
        })
        .collect();
    assert_eq!(chains.len(), 17);
    let extending = chains
        .windows(2)
        .filter(|pair| pair[1].extends(&pair[0]))
        .count();
    let growing = chains
        .windows(2)
        .filter(|pair| pair[1].len() > pair[0].len())
        .count();
    // 14 of the 16 steps extend the previous request. The two that do not are the
    // compaction call (its first message differs) and the fresh history after it.
    assert_eq!(extending, 14);
    assert_eq!(growing, 15);
    assert_eq!(chains[12].len(), 25);
    assert!(!chains[13].extends(&chains[12]) && !chains[14].extends(&chains[13]));
    assert!(chains[15].extends(&chains[14]) && chains[16].extends(&chains[15]));
}
