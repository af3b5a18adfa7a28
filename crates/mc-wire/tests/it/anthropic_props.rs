//! Property tests: generated requests survive encode → decode → encode unchanged.

use mc_wire::anthropic::MessagesRequest;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(("[a-z_]{1,8}", inner), 0..4)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn extra_fields() -> impl Strategy<Value = Vec<(String, Value)>> {
    prop::collection::vec(("x_[a-z]{1,6}", arb_json()), 0..3)
}

fn with_extras(mut object: Map<String, Value>, extras: Vec<(String, Value)>, front: bool) -> Value {
    if front {
        let mut reordered: Map<String, Value> = extras.into_iter().collect();
        reordered.append(&mut object);
        Value::Object(reordered)
    } else {
        object.extend(extras);
        Value::Object(object)
    }
}

fn arb_block() -> impl Strategy<Value = Value> {
    let text = "\\PC{0,40}".prop_map(|text| json!({"type": "text", "text": text}));
    let tool_use = (
        "[a-z0-9]{4}",
        "[A-Za-z]{1,8}",
        prop::collection::vec(("[a-z_]{1,8}", arb_json()), 0..4),
    )
        .prop_map(|(id, name, input)| {
            let input: Map<String, Value> = input.into_iter().collect();
            json!({"type": "tool_use", "id": id, "name": name, "input": input})
        });
    let tool_result = ("[a-z0-9]{4}", "\\PC{0,40}", any::<bool>()).prop_map(|(id, text, err)| {
        json!({"tool_use_id": id, "type": "tool_result", "content": text, "is_error": err})
    });
    let thinking = ("\\PC{0,20}", "[A-Za-z0-9+/]{0,16}")
        .prop_map(|(text, sig)| json!({"type": "thinking", "thinking": text, "signature": sig}));
    let unknown = ("[a-z_]{3,12}", arb_json())
        .prop_map(|(kind, payload)| json!({"type": kind, "payload": payload}));
    (
        prop_oneof![text, tool_use, tool_result, thinking, unknown],
        extra_fields(),
        any::<bool>(),
    )
        .prop_map(|(block, extras, front)| match block {
            Value::Object(object) => with_extras(object, extras, front),
            other => other,
        })
}

fn arb_request() -> impl Strategy<Value = Value> {
    let message = (
        prop_oneof![Just("user"), Just("assistant"), Just("system")],
        prop_oneof![
            "\\PC{0,30}".prop_map(Value::from),
            prop::collection::vec(arb_block(), 0..4).prop_map(Value::Array)
        ],
        extra_fields(),
    )
        .prop_map(|(role, content, extras)| {
            let mut object = Map::new();
            object.insert("role".into(), role.into());
            object.insert("content".into(), content);
            with_extras(object, extras, false)
        });
    (
        "[a-z0-9-]{1,20}",
        prop::collection::vec(message, 0..6),
        prop::option::of(prop::collection::vec(arb_block(), 0..3)),
        any::<Option<bool>>(),
        extra_fields(),
        any::<bool>(),
    )
        .prop_map(|(model, messages, system, stream, extras, front)| {
            let mut object = Map::new();
            object.insert("model".into(), model.into());
            object.insert("messages".into(), Value::Array(messages));
            if let Some(system) = system {
                object.insert("system".into(), Value::Array(system));
            }
            if let Some(stream) = stream {
                object.insert("stream".into(), stream.into());
            }
            with_extras(object, extras, front)
        })
}

proptest! {
    #[test]
    fn generated_requests_round_trip_byte_for_byte(body in arb_request()) {
        let bytes = serde_json::to_vec(&body).unwrap();
        let request = MessagesRequest::decode(&bytes, 1 << 24).unwrap();
        prop_assert_eq!(&request.encode(), &bytes);
        let again = MessagesRequest::decode(&request.encode(), 1 << 24).unwrap();
        prop_assert_eq!(again, request);
    }

    #[test]
    fn spliced_messages_encode_as_the_whole_request_does(body in arb_request()) {
        let bytes = serde_json::to_vec(&body).unwrap();
        let mut request = MessagesRequest::decode(&bytes, 1 << 24).unwrap();
        let messages = serde_json::to_vec(&std::mem::take(&mut request.messages)).unwrap();
        prop_assert_eq!(request.encode_with_messages(&messages), bytes.clone());
        let (before, after) = request.encode_around_messages();
        prop_assert_eq!([before, messages, after].concat(), bytes);
    }

    #[test]
    fn moving_a_cache_marker_never_changes_other_bytes(body in arb_request()) {
        let bytes = serde_json::to_vec(&body).unwrap();
        let mut request = MessagesRequest::decode(&bytes, 1 << 24).unwrap();
        let Some(mc_wire::anthropic::BlockContent::Blocks(blocks)) = request.system.as_mut() else {
            return Ok(());
        };
        let Some(first) = blocks.first_mut() else { return Ok(()) };
        let before = first.cache_control().cloned();
        first.set_cache_control(Some(json!({"type": "ephemeral"})));
        first.set_cache_control(before);
        // Setting then restoring the marker is invisible when the block had one; when it
        // had none, removal leaves the block as it was.
        prop_assert_eq!(request.encode(), bytes);
    }
}
