//! Property tests: any request body of the shapes clients send decodes, encodes back to its
//! own bytes, and re-decodes to an equal value; streamed argument fragments, however split,
//! join back to the arguments.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::*;

const LIMIT: usize = 1 << 24;

/// Any JSON value, a few levels deep, floats included (`float_roundtrip` is on).
fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |float| float.is_finite())
            .prop_map(Value::from),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{0,6}", inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// A value for a required field: anything but `null`, which the codecs reject there.
fn arb_present() -> impl Strategy<Value = Value> {
    arb_json().prop_filter("required fields are not null", |value| !value.is_null())
}

/// Fields no codec types, under names no codec types.
fn arb_extra() -> impl Strategy<Value = Vec<(String, Value)>> {
    prop::collection::btree_map("x_[a-z]{1,5}", arb_json(), 0..3)
        .prop_map(|map| map.into_iter().collect())
}

/// An object from typed and extra fields, in a random key order.
fn object(fields: Vec<(String, Value)>) -> impl Strategy<Value = Value> {
    Just(fields)
        .prop_shuffle()
        .prop_map(|fields| Value::Object(fields.into_iter().collect::<Map<_, _>>()))
}

/// A field that is absent, `null`, or set.
fn optional(
    key: &'static str,
    value: impl Strategy<Value = Value>,
) -> impl Strategy<Value = Vec<(String, Value)>> {
    prop_oneof![
        Just(Vec::new()),
        Just(vec![(key.to_owned(), Value::Null)]),
        value.prop_map(move |value| vec![(key.to_owned(), value)]),
    ]
}

fn arb_part() -> impl Strategy<Value = Value> {
    let typed = prop_oneof![
        any::<String>().prop_map(|text| ("text", "text", Value::String(text))),
        arb_present().prop_map(|value| ("image_url", "image_url", value)),
        arb_present().prop_map(|value| ("input_audio", "input_audio", value)),
        arb_present().prop_map(|value| ("file", "file", value)),
        any::<String>().prop_map(|text| ("refusal", "refusal", Value::String(text))),
        arb_json().prop_map(|value| ("input_text", "text", value)),
        arb_json().prop_map(|value| ("", "anything", value)),
    ];
    (typed, arb_extra()).prop_flat_map(|((kind, key, value), mut fields)| {
        fields.push(("type".to_owned(), json!(kind)));
        fields.push((key.to_owned(), value));
        object(fields)
    })
}

fn arb_tool_call() -> impl Strategy<Value = Value> {
    (
        any::<String>(),
        "[a-z_]{1,8}",
        any::<String>(),
        arb_extra(),
        arb_extra(),
    )
        .prop_flat_map(|(id, name, arguments, function_extra, mut fields)| {
            let mut function = function_extra;
            function.push(("name".to_owned(), json!(name)));
            function.push(("arguments".to_owned(), json!(arguments)));
            fields.push(("id".to_owned(), json!(id)));
            fields.push(("type".to_owned(), json!("function")));
            (Just(fields), object(function)).prop_flat_map(|(mut fields, function)| {
                fields.push(("function".to_owned(), function));
                object(fields)
            })
        })
}

fn arb_message() -> impl Strategy<Value = Value> {
    let role = prop::sample::select(ChatRole::ALL.to_vec()).prop_map(|role| json!(role.as_str()));
    let content = prop_oneof![
        any::<String>().prop_map(Value::String),
        prop::collection::vec(arb_part(), 0..4).prop_map(Value::Array),
    ];
    (
        role,
        optional("content", content),
        optional(
            "tool_calls",
            prop::collection::vec(arb_tool_call(), 0..3).prop_map(Value::Array),
        ),
        optional("tool_call_id", any::<String>().prop_map(Value::String)),
        optional("name", "[a-z]{1,6}".prop_map(Value::String)),
        arb_extra(),
    )
        .prop_flat_map(|(role, content, calls, call_id, name, extra)| {
            let mut fields = vec![("role".to_owned(), role)];
            fields.extend(
                content
                    .into_iter()
                    .chain(calls)
                    .chain(call_id)
                    .chain(name)
                    .chain(extra),
            );
            object(fields)
        })
}

fn arb_request() -> impl Strategy<Value = Value> {
    let tool = prop::collection::btree_map("[a-z]{1,6}", arb_json(), 0..3)
        .prop_map(|map| Value::Object(map.into_iter().collect()));
    (
        "[a-z0-9.-]{1,12}",
        prop::collection::vec(arb_message(), 0..6),
        optional(
            "tools",
            prop::collection::vec(tool, 0..3).prop_map(Value::Array),
        ),
        optional("stream", any::<bool>().prop_map(Value::Bool)),
        arb_extra(),
    )
        .prop_flat_map(|(model, messages, tools, stream, extra)| {
            let mut fields = vec![
                ("model".to_owned(), json!(model)),
                ("messages".to_owned(), Value::Array(messages)),
            ];
            fields.extend(tools.into_iter().chain(stream).chain(extra));
            object(fields)
        })
}

/// Whether the neutral model can take every message: tool answers must name their call.
fn answers_are_named(request: &ChatRequest) -> bool {
    request.messages.iter().all(|message| match message.role {
        ChatRole::Tool => message.tool_call_id.is_some(),
        ChatRole::Function => message.name().is_some(),
        ChatRole::System | ChatRole::Developer | ChatRole::User | ChatRole::Assistant => true,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn requests_round_trip_byte_for_byte(value in arb_request()) {
        let body = serde_json::to_vec(&value).unwrap();
        let request = ChatRequest::decode(&body, LIMIT).unwrap();
        let encoded = request.encode();
        prop_assert_eq!(&encoded, &body);
        let again = ChatRequest::decode(&encoded, LIMIT).unwrap();
        prop_assert_eq!(again.encode(), encoded);
        prop_assert_eq!(&again, &request);
        prop_assert_eq!(to_conversation(&request).is_ok(), answers_are_named(&request));
    }

    #[test]
    fn argument_fragments_join_back(
        arguments in prop::collection::vec(any::<String>(), 1..4),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        // Every call announced first, then its fragments interleaved round-robin.
        let mut chunks = Vec::new();
        for (index, _) in arguments.iter().enumerate() {
            chunks.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": index, "id": format!("call_{index}"), "type": "function", "function": {"name": "f", "arguments": ""}}
            ]}}]}));
        }
        let pieces: Vec<Vec<String>> = arguments.iter().map(|text| split(text, &cuts)).collect();
        let rounds = pieces.iter().map(Vec::len).max().unwrap_or(0);
        for round in 0..rounds {
            for (index, fragments) in pieces.iter().enumerate() {
                if let Some(fragment) = fragments.get(round) {
                    chunks.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                        {"index": index, "function": {"arguments": fragment}}
                    ]}}]}));
                }
            }
        }
        let mut accumulator = ChunkAccumulator::new();
        for value in &chunks {
            accumulator.push(&ChatChunk::decode(&serde_json::to_vec(value).unwrap(), LIMIT).unwrap());
        }
        let response = accumulator.finish();
        let joined: Vec<String> = response.message().unwrap().tool_calls.iter().flatten()
            .map(|call| call.function.arguments.clone()).collect();
        prop_assert_eq!(joined, arguments);
    }
}

/// Splits `text` at char boundaries chosen by `cuts`.
fn split(text: &str, cuts: &[prop::sample::Index]) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut at: Vec<usize> = cuts.iter().map(|cut| cut.index(chars.len() + 1)).collect();
    at.push(0);
    at.push(chars.len());
    at.sort_unstable();
    at.dedup();
    at.windows(2)
        .map(|pair| chars[pair[0]..pair[1]].iter().collect())
        .collect()
}
