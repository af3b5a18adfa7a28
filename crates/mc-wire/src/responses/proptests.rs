//! Property tests: any request body of the shapes clients send decodes, encodes back to its
//! own bytes, re-decodes to an equal value, and its conversation renders to items that
//! convert back to the same conversation.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::*;

const LIMIT: usize = 1 << 24;

/// Any JSON value, a few levels deep.
fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
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

fn arb_part() -> impl Strategy<Value = Value> {
    let typed = prop_oneof![
        any::<String>().prop_map(|text| ("input_text", "text", Value::String(text))),
        any::<String>().prop_map(|text| ("output_text", "text", Value::String(text))),
        any::<String>().prop_map(|text| ("refusal", "refusal", Value::String(text))),
        arb_json().prop_map(|value| ("input_image", "image_url", value)),
        arb_json().prop_map(|value| ("input_future", "anything", value)),
    ];
    (typed, arb_extra()).prop_flat_map(|((kind, key, value), mut fields)| {
        fields.push(("type".to_owned(), json!(kind)));
        fields.push((key.to_owned(), value));
        object(fields)
    })
}

fn arb_content() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<String>().prop_map(Value::String),
        prop::collection::vec(arb_part(), 0..3).prop_map(Value::Array),
    ]
}

fn arb_item() -> impl Strategy<Value = Value> {
    let role =
        prop::sample::select(MessageRole::ALL.to_vec()).prop_map(|role| json!(role.as_str()));
    let kind = |kind: &'static str| ("type".to_owned(), json!(kind));
    let text = || any::<String>().prop_map(Value::String);
    let typed = prop_oneof![
        (role, arb_content(), any::<bool>()).prop_map(move |(role, content, typed)| {
            let mut fields = vec![("role".to_owned(), role), ("content".to_owned(), content)];
            if typed {
                fields.push(kind("message"));
            }
            fields
        }),
        (text(), "[a-z_]{1,8}", text()).prop_map(move |(id, name, arguments)| vec![
            kind("function_call"),
            ("call_id".to_owned(), id),
            ("name".to_owned(), json!(name)),
            ("arguments".to_owned(), arguments),
        ]),
        (text(), "[a-z_]{1,8}", text()).prop_map(move |(id, name, input)| vec![
            kind("custom_tool_call"),
            ("call_id".to_owned(), id),
            ("name".to_owned(), json!(name)),
            ("input".to_owned(), input),
        ]),
        (
            prop::sample::select(vec!["function_call_output", "custom_tool_call_output"]),
            text(),
            arb_content()
        )
            .prop_map(move |(output_kind, id, output)| vec![
                kind(output_kind),
                ("call_id".to_owned(), id),
                ("output".to_owned(), output),
            ]),
        prop::option::of(text()).prop_map(move |encrypted| {
            let mut fields = vec![kind("reasoning"), ("summary".to_owned(), json!([]))];
            fields.extend(encrypted.map(|value| ("encrypted_content".to_owned(), value)));
            fields
        }),
        arb_json().prop_map(move |value| vec![
            kind("compaction"),
            ("encrypted_content".to_owned(), value)
        ]),
    ];
    (typed, arb_extra()).prop_flat_map(|(mut fields, extra)| {
        fields.extend(extra);
        object(fields)
    })
}

fn arb_request() -> impl Strategy<Value = Value> {
    let tool = prop::collection::btree_map("[a-z]{1,6}", arb_json(), 0..3)
        .prop_map(|map| Value::Object(map.into_iter().collect()));
    let input = prop_oneof![
        any::<String>().prop_map(Value::String),
        prop::collection::vec(arb_item(), 0..8).prop_map(Value::Array),
    ];
    (
        "[a-z0-9.-]{1,12}",
        input,
        prop::option::of(prop::collection::vec(tool, 0..3).prop_map(Value::Array)),
        prop::option::of(any::<bool>()),
        arb_extra(),
    )
        .prop_flat_map(|(model, input, tools, stream, extra)| {
            let mut fields = vec![
                ("model".to_owned(), json!(model)),
                ("input".to_owned(), input),
            ];
            fields.extend(tools.map(|tools| ("tools".to_owned(), tools)));
            fields.extend(stream.map(|stream| ("stream".to_owned(), json!(stream))));
            fields.extend(extra);
            object(fields)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn requests_round_trip_byte_for_byte(value in arb_request()) {
        let body = serde_json::to_vec(&value).unwrap();
        let request = ResponsesRequest::decode(&body, LIMIT).unwrap();
        let encoded = request.encode();
        prop_assert_eq!(&encoded, &body);
        let again = ResponsesRequest::decode(&encoded, LIMIT).unwrap();
        prop_assert_eq!(again.encode(), encoded);
        prop_assert_eq!(&again, &request);
    }

    /// Rendering is stable: a conversation rendered to items and read back renders to the
    /// same items, so the same stored rows always give the same bytes.
    #[test]
    fn rendered_items_convert_back_stably(value in arb_request()) {
        let body = serde_json::to_vec(&value).unwrap();
        let request = ResponsesRequest::decode(&body, LIMIT).unwrap();
        let Some(Input::Items(items)) = &request.input else { return Ok(()) };
        let is_custom = |name: &str| name.starts_with('c');
        let rendered = from_conversation(&to_conversation(items), is_custom);
        let again = from_conversation(&to_conversation(&rendered), is_custom);
        prop_assert_eq!(again, rendered);
    }
}
