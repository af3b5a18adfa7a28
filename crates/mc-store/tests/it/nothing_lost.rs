//! Property: however a conversation is split into appends, the log holds exactly the
//! conversation, with the hashes and chain `mc-core` computes for it in one go.

use mc_core::{HashChain, MediaKind, Message, Part, Role};
use proptest::prelude::*;
use serde_json::Value;

use crate::support::{NOW_MS, TempStore, new_session, sid};

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON has no NaN or infinity", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((".{0,6}", inner), 0..4)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

fn arb_media() -> impl Strategy<Value = Part> {
    let kind = prop_oneof![
        Just(MediaKind::Image),
        Just(MediaKind::Document),
        Just(MediaKind::Audio)
    ];
    (kind, arb_json()).prop_map(|(media, source)| Part::Media { media, source })
}

fn arb_part() -> impl Strategy<Value = Part> {
    prop_oneof![
        ".{0,40}".prop_map(Part::text),
        ("[a-z0-9]{1,8}", "[A-Za-z]{1,8}", arb_json())
            .prop_map(|(id, name, input)| Part::ToolCall { id, name, input }),
        (
            "[a-z0-9]{1,8}",
            prop::collection::vec(
                prop_oneof![".{0,20}".prop_map(Part::text), arb_media()],
                0..3
            ),
            any::<bool>()
        )
            .prop_map(|(call_id, content, is_error)| Part::ToolResult {
                call_id,
                content,
                is_error
            }),
        (".{0,20}", prop::option::of("[A-Za-z0-9+/=]{0,16}"))
            .prop_map(|(text, signature)| Part::Thinking { text, signature }),
        "[A-Za-z0-9+/=]{0,16}".prop_map(|data| Part::RedactedThinking { data }),
        arb_media(),
        ("[a-z_]{0,10}", arb_json()).prop_map(|(type_name, raw)| Part::Unknown { type_name, raw }),
    ]
}

fn arb_message() -> impl Strategy<Value = Message> {
    let role = prop_oneof![
        Just(Role::System),
        Just(Role::User),
        Just(Role::Assistant),
        Just(Role::Tool)
    ];
    (role, prop::collection::vec(arb_part(), 0..4))
        .prop_map(|(role, parts)| Message::new(role, parts))
}

proptest! {
    // Each case creates a real database file (a few fsyncs, ~20 ms): 64 cases keep the suite quick.
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_split_of_appends_stores_the_whole_conversation(
        messages in prop::collection::vec(arb_message(), 0..16),
        cuts in prop::collection::vec(0usize..16, 0..6),
    ) {
        let fixture = TempStore::new();
        let id = sid("s");
        fixture.store.write(|tx| tx.upsert_session(&new_session("s"), NOW_MS)).unwrap();

        let mut cuts: Vec<usize> = cuts.into_iter().map(|cut| cut.min(messages.len())).collect();
        cuts.push(messages.len());
        cuts.sort_unstable();
        let mut start = 0;
        for end in cuts {
            let count = fixture
                .store
                .write(|tx| tx.append_messages(&id, start as u64, &messages[start..end], NOW_MS + start as i64))
                .unwrap();
            prop_assert_eq!(count, end as u64);
            start = end;
        }

        let stored = fixture.store.read(|tx| tx.messages(&id, ..)).unwrap();
        let chain = HashChain::of(&messages);
        let read_back: Vec<Message> = stored.iter().map(|row| row.message.clone()).collect();
        prop_assert_eq!(&read_back, &messages);
        let hashes: Vec<_> = stored.iter().map(|row| row.hash).collect();
        let expected_hashes: Vec<_> = messages.iter().map(Message::content_hash).collect();
        prop_assert_eq!(hashes, expected_hashes);
        let links: Vec<_> = stored.iter().map(|row| row.chain).collect();
        prop_assert_eq!(links.as_slice(), chain.links());
        let ordinals: Vec<u64> = stored.iter().map(|row| row.ordinal).collect();
        prop_assert_eq!(ordinals, (0..messages.len() as u64).collect::<Vec<_>>());
        if let Some(head) = chain.head() {
            let found = fixture.store.read(|tx| tx.find_by_chain(head)).unwrap();
            prop_assert_eq!(found.map(|found| found.ordinal), Some(messages.len() as u64 - 1));
        }
    }
}
