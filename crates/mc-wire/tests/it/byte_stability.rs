//! The same logical request always encodes to the same bytes, whatever spelling of numbers,
//! escapes and whitespace the client used.

use mc_wire::anthropic::MessagesRequest;

#[test]
fn spellings_of_the_same_values_encode_identically() {
    let spellings = [
        r#"{"model":"m","messages":[],"temperature":1e0,"top_k":10,"note":"\u00e9\/\t"}"#,
        "{ \"model\" : \"m\" ,\n \"messages\" : [ ] , \"temperature\" : 1.0 , \"top_k\" : 1e1 , \"note\" : \"é/\\t\" }",
        r#"{"model":"m","messages":[],"temperature":10E-1,"top_k":10.0,"note":"\u00E9/\u0009"}"#,
    ];
    let encoded: Vec<Vec<u8>> = spellings
        .iter()
        .map(|body| {
            MessagesRequest::decode(body.as_bytes(), 1 << 20)
                .unwrap()
                .encode()
        })
        .collect();
    // Integers written as 1e1 or 10.0 are floats to JSON parsers, and stay floats here.
    assert_eq!(encoded[1], encoded[2]);
    assert_eq!(
        String::from_utf8(encoded[0].clone()).unwrap(),
        r#"{"model":"m","messages":[],"temperature":1.0,"top_k":10,"note":"é/\t"}"#
    );
    for bytes in &encoded {
        let again = MessagesRequest::decode(bytes, 1 << 20).unwrap().encode();
        assert_eq!(&again, bytes, "encoding is a fixed point after one pass");
    }
}

#[test]
fn engine_built_objects_have_a_canonical_order() {
    use mc_wire::anthropic::{BlockContent, ContentBlock, Message, MessageRole};
    let mut block = ContentBlock::text("§1§ hello");
    block.set_cache_control(Some(serde_json::json!({"type": "ephemeral", "ttl": "1h"})));
    let message = Message::new(MessageRole::User, BlockContent::Blocks(vec![block]));
    assert_eq!(
        serde_json::to_string(&message).unwrap(),
        r#"{"role":"user","content":[{"type":"text","text":"§1§ hello","cache_control":{"type":"ephemeral","ttl":"1h"}}]}"#
    );
}
