//! The same logical request always encodes to the same bytes, whatever escapes and
//! whitespace the client used; its numbers keep every digit it wrote.

use mc_wire::anthropic::MessagesRequest;

fn encode(body: &str) -> String {
    String::from_utf8(
        MessagesRequest::decode(body.as_bytes(), 1 << 20)
            .unwrap()
            .encode(),
    )
    .unwrap()
}

#[test]
fn spellings_of_the_same_text_encode_identically() {
    let spellings = [
        r#"{"model":"m","messages":[],"temperature":1.0,"top_k":10,"note":"\u00e9\/\t"}"#,
        "{ \"model\" : \"m\" ,\n \"messages\" : [ ] , \"temperature\" : 1.0 , \"top_k\" : 10 , \"note\" : \"é/\\t\" }",
        r#"{"model":"m","messages":[],"temperature":1.0,"top_k":10,"note":"\u00E9/\u0009"}"#,
    ];
    let encoded: Vec<String> = spellings.iter().map(|body| encode(body)).collect();
    assert_eq!(encoded[0], encoded[1]);
    assert_eq!(encoded[1], encoded[2]);
    assert_eq!(
        encoded[0],
        r#"{"model":"m","messages":[],"temperature":1.0,"top_k":10,"note":"é/\t"}"#
    );
}

#[test]
fn numbers_keep_every_digit_the_client_wrote() {
    // Past 2^64, more digits than a double holds, integers written as floats: each is the
    // client's number, and a provider (or a tool) may read its every digit.
    let body = r#"{"model":"m","messages":[],"temperature":0.10000000000000000555,"top_k":10.0,"metadata":{"seed":18446744073709551617,"tiny":-2.5e-3}}"#;
    let encoded = encode(body);
    assert_eq!(encoded, body);
    assert_eq!(encode(&encoded), encoded, "encoding is a fixed point");
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
