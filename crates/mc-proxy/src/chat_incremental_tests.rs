//! The incremental Chat decode equals a full decode whatever the client sends next, and a
//! follow-up that only grows is decoded by its new messages.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::chunked_body::tests::cut_in_two;

fn body(value: &Value, spaced: bool) -> ChunkedBody {
    let text = if spaced {
        serde_json::to_string_pretty(value).unwrap()
    } else {
        value.to_string()
    };
    ChunkedBody::from(text.into_bytes())
}

fn request(system: &str, tools: u8, messages: &[Value]) -> Value {
    let mut all = vec![json!({"role": "system", "content": system})];
    all.extend(messages.iter().cloned());
    json!({
        "model": "gpt-5.2",
        "messages": all,
        "tools": (0..tools).map(|n| json!({"type": "function", "function": {"name": format!("tool_{n}"), "parameters": {"type": "object"}}})).collect::<Vec<_>>(),
        "stream": true,
    })
}

fn turn(index: usize, text: &str) -> Vec<Value> {
    vec![
        json!({"role": "user", "content": format!("{text} {index}")}),
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("call_{index}"), "type": "function", "function": {"name": "read", "arguments": format!("{{\"path\":\"f{index}\"}}")}}]}),
        json!({"role": "tool", "tool_call_id": format!("call_{index}"), "content": [{"type": "text", "text": format!("out {index}")}]}),
    ]
}

/// Decodes `body` as the proxy does and checks it against a full decode (the same result,
/// or the same error); remembers what decodes, as the pass does.
fn decode_checked(recent: &RecentChats, body: &ChunkedBody) -> Result<(), TestCaseError> {
    let full = full_decode(body);
    let got = recent.decode(&cut_in_two(body), None);
    match (got, full) {
        (Ok(got), Ok(full)) => {
            prop_assert_eq!(&got.request, &full.request);
            prop_assert_eq!(&got.conversation, &full.conversation);
            prop_assert_eq!(&got.chain, &full.chain);
            prop_assert_eq!(
                got.layout.as_ref().map(ChatLayout::prefix_identity),
                full.layout.as_ref().map(ChatLayout::prefix_identity)
            );
            if let Some(layout) = got.layout {
                recent.remember(layout, got.request.messages, got.conversation, got.chain);
            }
        }
        (Err(got), Err(full)) => prop_assert_eq!(got, full),
        (got, full) => prop_assert!(
            false,
            "incremental {:?}, full {:?}",
            got.map(|_| ()),
            full.map(|_| ())
        ),
    }
    Ok(())
}

#[test]
fn a_growing_conversation_is_decoded_by_its_new_messages() {
    let recent = RecentChats::default();
    let mut messages = Vec::new();
    for index in 0..4 {
        messages.extend(turn(index, "please"));
        let body = body(&request("be brief", 2, &messages), false);
        if index > 0 {
            let decoded = recent
                .decode_incrementally(&body, None)
                .expect("a follow-up extends the remembered request");
            let full = full_decode(&body).unwrap();
            assert_eq!(decoded.request, full.request);
            assert_eq!(decoded.conversation, full.conversation);
            assert_eq!(decoded.chain, full.chain);
            let layout = decoded.layout.unwrap();
            recent.remember(
                layout,
                decoded.request.messages,
                decoded.conversation,
                decoded.chain,
            );
        } else {
            let decoded = recent.decode(&body, None).unwrap();
            recent.remember(
                decoded.layout.unwrap(),
                decoded.request.messages,
                decoded.conversation,
                decoded.chain,
            );
        }
    }
}

#[test]
fn another_head_is_decoded_whole() {
    let recent = RecentChats::default();
    let messages = turn(0, "go");
    let first = recent
        .decode(&body(&request("be brief", 1, &messages), false), None)
        .unwrap();
    recent.remember(
        first.layout.unwrap(),
        first.request.messages,
        first.conversation,
        first.chain,
    );
    let mut longer = messages.clone();
    longer.extend(turn(1, "go"));
    let other_tools = body(&request("be brief", 2, &longer), false);
    assert!(recent.decode_incrementally(&other_tools, None).is_none());
}

/// What the client does before its next request.
#[derive(Debug, Clone)]
enum Step {
    Grow(usize),
    Edit(usize, String),
    Rewind(usize),
    System(u8),
    Tools(u8),
    Restyle,
    Corrupt(usize, u8),
    AddInstruction,
}

fn arb_step() -> impl Strategy<Value = Step> {
    prop_oneof![
        5 => (1usize..3).prop_map(Step::Grow),
        1 => (any::<usize>(), "[a-z \"\\\\\n\u{e9}]{0,8}").prop_map(|(at, text)| Step::Edit(at, text)),
        1 => (1usize..4).prop_map(Step::Rewind),
        1 => (0u8..3).prop_map(Step::System),
        1 => (0u8..3).prop_map(Step::Tools),
        1 => Just(Step::Restyle),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Step::Corrupt(at, byte)),
        1 => Just(Step::AddInstruction),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the client sends, the incremental decode gives what a full decode gives.
    #[test]
    fn the_incremental_decode_equals_a_full_decode(steps in prop::collection::vec(arb_step(), 1..24)) {
        let recent = RecentChats::default();
        let mut messages = turn(0, "start");
        let (mut system, mut tools, mut spaced) = (0u8, 1u8, false);
        let mut turns = 1;
        for step in steps {
            let mut corrupt = None;
            match step {
                Step::Grow(count) => {
                    for _ in 0..count {
                        messages.extend(turn(turns, "more"));
                        turns += 1;
                    }
                }
                Step::Edit(at, text) => {
                    let at = at % messages.len();
                    messages[at]["content"] = json!(text);
                }
                Step::Rewind(count) => {
                    let keep = messages.len().saturating_sub(count).max(1);
                    messages.truncate(keep);
                }
                Step::System(version) => system = version,
                Step::Tools(version) => tools = version,
                Step::Restyle => spaced = !spaced,
                Step::Corrupt(at, byte) => corrupt = Some((at, byte)),
                Step::AddInstruction => {
                    messages.insert(0, json!({"role": "developer", "content": "extra rule"}));
                }
            }
            let value = request(&format!("system {system}"), tools, &messages);
            let mut bytes = body(&value, spaced).to_bytes().to_vec();
            if let Some((at, byte)) = corrupt {
                let at = at % bytes.len();
                bytes[at] = byte;
            }
            decode_checked(&recent, &ChunkedBody::from(bytes))?;
        }
    }
}
