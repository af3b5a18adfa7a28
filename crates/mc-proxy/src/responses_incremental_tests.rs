//! The incremental Responses decode equals a full decode whatever the client sends next, and
//! a follow-up that only grows is decoded by its new items.

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

fn request(instructions: &str, tools: u8, items: &[Value]) -> Value {
    let mut input = vec![json!({"role": "system", "content": "system item"})];
    input.extend(items.iter().cloned());
    json!({
        "model": "gpt-5",
        "instructions": instructions,
        "input": input,
        "tools": (0..tools).map(|n| json!({"type": "function", "name": format!("tool_{n}"), "parameters": {"type": "object"}})).collect::<Vec<_>>(),
        "store": false,
        "stream": true,
    })
}

/// One turn of kind `kind % 4`: a question, a reasoned call and its output, two calls in one
/// answer, or an answer in text with an empty message among its items.
fn turn(index: usize, kind: u8) -> Vec<Value> {
    let question = json!({"role": "user", "content": [{"type": "input_text", "text": format!("ask {index}")}]});
    let call = |id: String| json!({"type": "function_call", "call_id": id, "name": "read", "arguments": format!("{{\"path\":\"f{index}\"}}")});
    let output = |id: String| json!({"type": "function_call_output", "call_id": id, "output": format!("out {index}")});
    let said = |text: &str| json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text, "annotations": []}]});
    match kind % 4 {
        0 => vec![question],
        1 => vec![
            json!({"type": "reasoning", "id": format!("rs_{index}"), "summary": [], "encrypted_content": "opaque"}),
            call(format!("c{index}")),
            output(format!("c{index}")),
        ],
        2 => vec![
            said("two at once"),
            call(format!("a{index}")),
            call(format!("b{index}")),
            output(format!("a{index}")),
            output(format!("b{index}")),
        ],
        _ => vec![
            said("first"),
            json!({"type": "message", "role": "assistant", "content": []}),
            said("then"),
        ],
    }
}

/// Decodes `body` as the proxy does and checks it against a full decode (the same result,
/// or the same error); remembers what decodes, as the pass does.
fn decode_checked(recent: &RecentResponses, body: &ChunkedBody) -> Result<(), TestCaseError> {
    let full = full_decode(body);
    let got = recent.decode(&cut_in_two(body), None);
    match (got, full) {
        (Ok(got), Ok(full)) => {
            prop_assert_eq!(&got.request, &full.request);
            prop_assert_eq!(&got.conversation, &full.conversation);
            prop_assert_eq!(&got.chain, &full.chain);
            prop_assert_eq!(
                got.layout.as_ref().map(|layout| &layout.starts),
                full.layout.as_ref().map(|layout| &layout.starts)
            );
            prop_assert_eq!(
                got.layout.as_ref().map(ResponsesLayout::prefix_identity),
                full.layout.as_ref().map(ResponsesLayout::prefix_identity)
            );
            remember(recent, got);
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

fn remember(recent: &RecentResponses, decoded: ResponsesDecoded) {
    let (Some(layout), Some(Input::Items(items))) = (decoded.layout, decoded.request.input) else {
        return;
    };
    recent.remember(layout, items, decoded.conversation, decoded.chain);
}

#[test]
fn a_growing_conversation_is_decoded_by_its_new_items() {
    let recent = RecentResponses::default();
    let mut items = Vec::new();
    for index in 0..6 {
        items.extend(turn(index, index as u8));
        let body = body(&request("be brief", 2, &items), false);
        let full = full_decode(&body).unwrap();
        let decoded = if index > 0 {
            recent
                .decode_incrementally(&body, None)
                .expect("a follow-up extends the remembered request")
        } else {
            recent.decode(&body, None).unwrap()
        };
        assert_eq!(decoded.request, full.request);
        assert_eq!(decoded.conversation, full.conversation);
        assert_eq!(decoded.chain, full.chain);
        remember(&recent, decoded);
    }
}

#[test]
fn another_head_is_decoded_whole() {
    let recent = RecentResponses::default();
    let items = turn(0, 1);
    let first = recent
        .decode(&body(&request("be brief", 1, &items), false), None)
        .unwrap();
    remember(&recent, first);
    let mut longer = items.clone();
    longer.extend(turn(1, 0));
    let other_tools = body(&request("be brief", 2, &longer), false);
    assert!(recent.decode_incrementally(&other_tools, None).is_none());
}

/// What the client does before its next request.
#[derive(Debug, Clone)]
enum Step {
    Grow(Vec<u8>),
    Edit(usize, String, bool),
    Rewind(usize),
    Instructions(u8),
    Tools(u8),
    Restyle,
    Corrupt(usize, u8),
    AddInstruction,
    TextInput,
}

fn arb_step() -> impl Strategy<Value = Step> {
    prop_oneof![
        5 => prop::collection::vec(any::<u8>(), 1..3).prop_map(Step::Grow),
        2 => (any::<usize>(), "[a-z \"\\\\\n\u{e9}]{0,8}", any::<bool>())
            .prop_map(|(at, text, by_model)| Step::Edit(at, text, by_model)),
        2 => (1usize..5).prop_map(Step::Rewind),
        1 => (0u8..3).prop_map(Step::Instructions),
        1 => (0u8..3).prop_map(Step::Tools),
        1 => Just(Step::Restyle),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Step::Corrupt(at, byte)),
        1 => Just(Step::AddInstruction),
        1 => Just(Step::TextInput),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Whatever the client sends, the incremental decode gives what a full decode gives.
    #[test]
    fn the_incremental_decode_equals_a_full_decode(steps in prop::collection::vec(arb_step(), 1..24)) {
        let recent = RecentResponses::default();
        let mut items = turn(0, 1);
        let (mut instructions, mut tools, mut spaced) = (0u8, 1u8, false);
        let mut turns = 1;
        for step in steps {
            let mut corrupt = None;
            let mut text_input = false;
            match step {
                Step::Grow(kinds) => {
                    for kind in kinds {
                        items.extend(turn(turns, kind));
                        turns += 1;
                    }
                }
                Step::Edit(at, text, by_model) => {
                    let at = at % items.len();
                    let role = if by_model { "assistant" } else { "user" };
                    items[at] = json!({"role": role, "content": text});
                }
                Step::Rewind(count) => {
                    let keep = items.len().saturating_sub(count).max(1);
                    items.truncate(keep);
                }
                Step::Instructions(version) => instructions = version,
                Step::Tools(version) => tools = version,
                Step::Restyle => spaced = !spaced,
                Step::Corrupt(at, byte) => corrupt = Some((at, byte)),
                Step::AddInstruction => {
                    items.insert(0, json!({"role": "developer", "content": "extra rule"}));
                }
                Step::TextInput => text_input = true,
            }
            let mut value = request(&format!("rules {instructions}"), tools, &items);
            if text_input {
                value["input"] = json!("just a question");
            }
            let mut bytes = body(&value, spaced).to_bytes().to_vec();
            if let Some((at, byte)) = corrupt {
                let at = at % bytes.len();
                bytes[at] = byte;
            }
            decode_checked(&recent, &ChunkedBody::from(bytes))?;
        }
    }
}
