use mc_store::Store;
use mc_wire::anthropic::{self, MessagesRequest};
use mc_wire::chunked_body::ChunkedBody;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::anthropic_splice::{Prepared, splice_whole};
use crate::splice::{Splice, Used, message_hash};
use mc_engine::tools::offer;

/// One turn of a generated conversation: the user's message, the answer the client got,
/// and whether a hidden exchange was stored before that answer.
#[derive(Debug, Clone)]
struct Turn {
    user: String,
    user_as_text: bool,
    answer: String,
    exchange: Option<Exchange>,
    /// The client sends the same request twice (a retry).
    retried: bool,
}

#[derive(Debug, Clone, Copy)]
struct Exchange {
    full_answer: bool,
    results: bool,
}

fn arb_turn() -> impl Strategy<Value = Turn> {
    (
        "[a-z ]{0,10}",
        any::<bool>(),
        "[a-z ]{1,10}",
        proptest::option::of((any::<bool>(), any::<bool>())),
        proptest::bool::weighted(0.15),
    )
        .prop_map(|(user, user_as_text, answer, exchange, retried)| Turn {
            user,
            user_as_text,
            answer,
            exchange: exchange.map(|(full_answer, results)| Exchange {
                full_answer,
                results,
            }),
            retried,
        })
}

fn message(value: Value) -> anthropic::Message {
    serde_json::from_value(value).unwrap()
}

/// The client's messages through turn `upto`'s user message, the last one marked for
/// caching as clients mark it (so the marker moves on every request).
fn client_body(turns: &[Turn], upto: usize) -> Bytes {
    let mut messages = Vec::new();
    for (index, turn) in turns.iter().enumerate().take(upto + 1) {
        let last = index == upto;
        let user = if turn.user_as_text && !last {
            json!({"role": "user", "content": turn.user})
        } else if last {
            json!({"role": "user", "content": [{"type": "text", "text": turn.user, "cache_control": {"type": "ephemeral"}}]})
        } else {
            json!({"role": "user", "content": [{"type": "text", "text": turn.user}]})
        };
        messages.push(user);
        if !last {
            messages.push(answer(turn));
        }
    }
    let body = json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": [{"type": "text", "text": "You are a coding agent."}],
        "messages": messages,
        "tools": [{"name": "Bash", "description": "Run a command", "input_schema": {"type": "object"}}],
        "stream": true,
    });
    Bytes::from(serde_json::to_vec(&body).unwrap())
}

fn answer(turn: &Turn) -> Value {
    json!({"role": "assistant", "content": [{"type": "text", "text": turn.answer}]})
}

/// The exchange stored before turn `index`'s answer.
fn splice_for(index: usize, turn: &Turn, exchange: Exchange) -> Splice {
    let id = format!("toolu_hidden{index}");
    Splice {
        before: vec![
            message(
                json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "ctx_search", "input": {"query": "q"}}]}),
            ),
            message(
                json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "found"}]}),
            ),
        ],
        full_answer: exchange.full_answer.then(|| {
            message(
                json!({"role": "assistant", "content": [{"type": "text", "text": format!("{} (in full)", turn.answer)}]}),
            )
        }),
        client_answer: message_hash(&message(answer(turn))).to_string(),
        results: exchange.results.then(|| {
            message(
                json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("toolu_ours{index}"), "content": "noted"}]}),
            )
        }),
    }
}

fn from_scratch(store: &Store, project: &Option<ProjectId>, body: &Bytes) -> Prepared {
    let request = MessagesRequest::decode(body, usize::MAX).unwrap();
    let mut used = Used::at(0);
    store
        .read(|tx| splice_whole(tx, project.clone(), request, offer(true), &mut used))
        .unwrap()
}

fn incremental(
    walks: &RecentWalks,
    store: &Store,
    project: &Option<ProjectId>,
    body: &Bytes,
) -> Walked {
    let body = &ChunkedBody::from(body.clone());
    let located = walks.locate(body).unwrap();
    let first = located.first_message(body).unwrap();
    let start = Start {
        project: project.clone(),
        first,
        offer: offer(true),
    };
    let mut used = Used::at(0);
    store
        .read(|tx| walks.walk(tx, body, located, start, &mut used))
        .unwrap()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A growing conversation whose answers had hidden exchanges stored as the proxy
    /// stores them (after the request they answer, the anchor's walks forgotten) prepares
    /// to the same bytes, list, head and end point by its new messages as from scratch.
    #[test]
    fn incremental_preparation_equals_a_fresh_walk(turns in proptest::collection::vec(arb_turn(), 1..12)) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        let project = Some(ProjectId::new("p").unwrap());
        let walks = RecentWalks::new(64 << 20);
        let mut last: Option<ChunkedBody> = None;
        for (index, turn) in turns.iter().enumerate() {
            let body = client_body(&turns, index);
            let sends = if turn.retried { 2 } else { 1 };
            let mut fresh = None;
            for send in 0..sends {
                let expected = from_scratch(&store, &project, &body);
                let walked = incremental(&walks, &store, &project, &body);
                prop_assert_eq!(walked.body.to_bytes(), expected.body.to_bytes());
                prop_assert_eq!(&walked.list, &expected.list);
                prop_assert_eq!(&*walked.head, &*expected.head);
                prop_assert_eq!(walked.point.anchor(), expected.point.anchor());
                // What the walk vouches for is true, and of the body it walked last.
                if let Some(known) = &walked.known {
                    let of = known.of();
                    prop_assert!(last.as_ref().is_some_and(|last| last.is_same_as(of)), "vouches for the body walked last");
                    prop_assert!(walked.body.range_eq(0..known.shared(), of, 0..known.shared()));
                }
                last = Some(walked.body.clone());
                // Only the new turn and the message whose cache marker moved are walked.
                let most = match (index, send) {
                    (0, 0) => 1,
                    (_, 0) => 3,
                    _ => 0,
                };
                prop_assert!(walked.walked_messages <= most, "walked {} at {index}", walked.walked_messages);
                fresh = Some(expected);
            }
            if let (Some(exchange), Some(fresh)) = (turn.exchange, fresh) {
                let anchor = fresh.point.anchor();
                let text = serde_json::to_string(&splice_for(index, turn, exchange)).unwrap();
                store.write(|tx| tx.put_hidden_exchange(&anchor, &text, 0)).unwrap();
                walks.forget_anchor(&anchor);
            }
        }
    }
}

/// A walk resumed past an exchange that was since deleted walks afresh, so the request
/// goes without it, as a fresh walk sends it.
#[test]
fn a_deleted_exchange_is_not_put_back_from_memory() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("context.db")).unwrap();
    let project = None;
    let walks = RecentWalks::new(64 << 20);
    let turns: Vec<Turn> = (0..3)
        .map(|index| Turn {
            user: format!("question {index}"),
            user_as_text: false,
            answer: format!("answer {index}"),
            exchange: None,
            retried: false,
        })
        .collect();
    let first = client_body(&turns, 0);
    let anchor = from_scratch(&store, &project, &first).point.anchor();
    incremental(&walks, &store, &project, &first);
    let splice = splice_for(
        0,
        &turns[0],
        Exchange {
            full_answer: false,
            results: false,
        },
    );
    let text = serde_json::to_string(&splice).unwrap();
    store
        .write(|tx| tx.put_hidden_exchange(&anchor, &text, 0))
        .unwrap();
    walks.forget_anchor(&anchor);
    let second = client_body(&turns, 1);
    let with = incremental(&walks, &store, &project, &second);
    assert_eq!(
        with.body.to_bytes(),
        from_scratch(&store, &project, &second).body.to_bytes()
    );
    assert!(
        with.body
            .to_bytes()
            .windows(b"toolu_hidden0".len())
            .any(|window| window == b"toolu_hidden0"),
        "the exchange went back"
    );

    store
        .write(|tx| tx.delete_hidden_exchanges_unused_since(1))
        .unwrap();
    let third = client_body(&turns, 2);
    let without = incremental(&walks, &store, &project, &third);
    assert_eq!(
        without.body.to_bytes(),
        from_scratch(&store, &project, &third).body.to_bytes()
    );
    assert!(
        !without
            .body
            .to_bytes()
            .windows(b"toolu_hidden0".len())
            .any(|window| window == b"toolu_hidden0"),
        "the deleted exchange stayed out"
    );
}

/// A next round's body is the prepared request's encoding with the hidden rounds appended
/// (and, on the last round allowed, tool calls forbidden).
#[test]
fn a_next_round_appends_to_the_prepared_encoding() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("context.db")).unwrap();
    let turns = vec![Turn {
        user: "Indent?".to_owned(),
        user_as_text: false,
        answer: "Tabs.".to_owned(),
        exchange: None,
        retried: false,
    }];
    let prepared = from_scratch(&store, &None, &client_body(&turns, 0));
    let hidden = splice_for(
        0,
        &turns[0],
        Exchange {
            full_answer: false,
            results: false,
        },
    )
    .before;
    for last in [false, true] {
        let mut expected = MessagesRequest::decode(&prepared.body.to_bytes(), usize::MAX).unwrap();
        expected.messages.extend(hidden.iter().cloned());
        if last {
            expected
                .rest
                .insert("tool_choice".to_owned(), json!({"type": "none"}));
        }
        assert_eq!(
            prepared.next_round(&hidden, last),
            Bytes::from(expected.encode())
        );
    }
}

/// An exchange stored at an anchor a remembered walk already passed (another conversation
/// with the same start got that answer through our tools) is put back on the next request,
/// as a fresh walk puts it back: the walk that found nothing there is forgotten.
#[test]
fn an_exchange_stored_behind_a_remembered_walk_goes_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("context.db")).unwrap();
    let project = None;
    let walks = RecentWalks::new(64 << 20);
    let turns: Vec<Turn> = (0..4)
        .map(|index| Turn {
            user: format!("question {index}"),
            user_as_text: false,
            answer: format!("answer {index}"),
            exchange: None,
            retried: false,
        })
        .collect();
    let opening = client_body(&turns, 0);
    let anchor = from_scratch(&store, &project, &opening).point.anchor();
    incremental(&walks, &store, &project, &client_body(&turns, 2));
    let splice = splice_for(
        0,
        &turns[0],
        Exchange {
            full_answer: true,
            results: false,
        },
    );
    let text = serde_json::to_string(&splice).unwrap();
    store
        .write(|tx| tx.put_hidden_exchange(&anchor, &text, 0))
        .unwrap();
    walks.forget_anchor(&anchor);
    let next = client_body(&turns, 3);
    let walked = incremental(&walks, &store, &project, &next);
    assert_eq!(
        walked.body.to_bytes(),
        from_scratch(&store, &project, &next).body.to_bytes()
    );
    assert!(
        walked
            .body
            .to_bytes()
            .windows(b"answer 0 (in full)".len())
            .any(|window| window == b"answer 0 (in full)"),
        "the exchange went back"
    );
}

/// A follow-up's prepared body is vouched for up to the separator after the last message
/// the walk kept: the pass's decode compares only past it.
#[test]
fn a_follow_up_is_vouched_for_up_to_its_kept_messages() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("context.db")).unwrap();
    let project = Some(ProjectId::new("p").unwrap());
    let walks = RecentWalks::new(64 << 20);
    let turns: Vec<Turn> = (0..3)
        .map(|index| Turn {
            user: format!("step {index}"),
            user_as_text: true,
            answer: format!("done {index}"),
            exchange: None,
            retried: false,
        })
        .collect();
    let first = incremental(&walks, &store, &project, &client_body(&turns, 1));
    assert!(first.known.is_none(), "nothing walked before");
    let second = incremental(&walks, &store, &project, &client_body(&turns, 2));
    let known = second.known.expect("resumed from the first walk");
    assert!(known.of().is_same_as(&first.body));
    let repeated = first.body.common_prefix_len(&second.body, 0);
    // The start is shared with the first body, not copied: its first chunk is the first
    // body's buffer.
    assert_eq!(
        second.body.chunks()[0].as_ptr(),
        first.body.chunks()[0].as_ptr()
    );
    assert!(known.shared() <= repeated);
    assert!(
        known.shared() > first.list.start,
        "the kept messages are vouched for"
    );
    assert!(
        matches!(
            first
                .body
                .get(known.shared()..known.shared() + 1)
                .as_deref(),
            Some(b"]" | b",")
        ),
        "up to the separator after the last kept message"
    );
}
