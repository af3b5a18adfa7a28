use bytes::Bytes;
use mc_core::ProjectId;
use mc_store::Store;
use mc_wire::chunked_body::ChunkedBody;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::list_walks::ListWalked;
use crate::responses_exchange::items_answer_key;
use crate::responses_splice::{ResponsesPrepared, splice_whole};
use mc_engine::tools::offer;

/// One turn of a generated Responses conversation: the user's words, the answer's run of
/// items as the client got it (reasoning, text, a call of its own answered by an output
/// item), the hidden exchange stored before that answer, whether the client sends the
/// request twice (a retry), and whether the request for this turn already carries the
/// answer's reasoning item (a run of model items the next request extends).
#[derive(Debug, Clone)]
struct Turn {
    user: String,
    answer: String,
    reasoning: bool,
    client_call: bool,
    exchange: Option<Exchange>,
    retried: bool,
    partial: bool,
}

#[derive(Debug, Clone, Copy)]
struct Exchange {
    full_answer: bool,
    results: bool,
}

fn arb_turn() -> impl Strategy<Value = Turn> {
    (
        "[a-z \"\\\\]{0,12}",
        "[a-z ]{1,10}",
        (any::<bool>(), any::<bool>()),
        proptest::option::of((any::<bool>(), any::<bool>())),
        proptest::bool::weighted(0.2),
        proptest::bool::weighted(0.15),
    )
        .prop_map(
            |(user, answer, (reasoning, client_call), exchange, retried, partial)| Turn {
                user,
                answer,
                reasoning: reasoning || partial,
                client_call,
                exchange: exchange.map(|(full_answer, results)| Exchange {
                    full_answer,
                    results,
                }),
                retried,
                partial,
            },
        )
}

fn item(value: Value) -> Item {
    Item::decode(&serde_json::to_vec(&value).unwrap()).unwrap()
}

fn reasoning_of(index: usize) -> Value {
    json!({"type": "reasoning", "id": format!("rs_{index}"), "summary": [], "encrypted_content": "opaque"})
}

/// The answer's run of model items as the client got it.
fn answer_of(turn: &Turn, index: usize) -> Vec<Value> {
    let mut run = Vec::new();
    if turn.reasoning {
        run.push(reasoning_of(index));
    }
    run.push(json!({"type": "message", "role": "assistant", "content": [
        {"type": "output_text", "text": turn.answer, "annotations": []}]}));
    if turn.client_call {
        run.push(
            json!({"type": "function_call", "call_id": format!("call_{index}"),
            "name": "bash", "arguments": "{\"command\":\"ls\"}"}),
        );
    }
    run
}

/// The client's body asking for the answer to turn `upto`: its instructions, the earlier
/// turns as the client got them, then the turn's question (and the answer's reasoning, for
/// a partial turn).
fn client_body(instructions: usize, turns: &[Turn], upto: usize) -> Bytes {
    let mut items: Vec<Value> = (0..instructions)
        .map(|index| json!({"type": "message", "role": "developer", "content": format!("rule {index}")}))
        .collect();
    for (index, turn) in turns.iter().enumerate().take(upto + 1) {
        items.push(json!({"role": "user", "content": turn.user}));
        if index == upto {
            if turn.partial {
                items.push(reasoning_of(index));
            }
            break;
        }
        items.extend(answer_of(turn, index));
        if turn.client_call {
            items.push(json!({"type": "function_call_output", "call_id": format!("call_{index}"), "output": "a.txt"}));
        }
    }
    let tools = json!([{"type": "function", "name": "bash", "parameters": {"type": "object"}}]);
    let body = json!({"model": "gpt-5", "instructions": "be brief", "input": items,
        "tools": tools, "stream": true, "store": false});
    Bytes::from(serde_json::to_vec(&body).unwrap())
}

fn splice_for(index: usize, turn: &Turn, exchange: Exchange) -> ResponsesSplice {
    let answer: Vec<Item> = answer_of(turn, index).into_iter().map(item).collect();
    ResponsesSplice {
        before: vec![
            item(
                json!({"type": "function_call", "call_id": format!("ours_{index}"),
                "name": "ctx_search", "arguments": "{\"query\":\"x\"}"}),
            ),
            item(
                json!({"type": "function_call_output", "call_id": format!("ours_{index}"), "output": "found"}),
            ),
        ],
        full_answer: exchange.full_answer.then(|| {
            vec![item(
                json!({"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "the full answer", "annotations": []}]}),
            )]
        }),
        client_answer: items_answer_key(&answer).unwrap(),
        client_items: answer.len(),
        results: if exchange.results {
            vec![item(
                json!({"type": "function_call_output", "call_id": format!("late_{index}"), "output": "late"}),
            )]
        } else {
            Vec::new()
        },
    }
}

fn from_scratch(store: &Store, project: &Option<ProjectId>, body: &Bytes) -> ResponsesPrepared {
    let request = ResponsesRequest::decode(body, usize::MAX).unwrap();
    let mut used = Used::at(0);
    store
        .read(|tx| splice_whole(tx, project.clone(), request, offer(true), &mut used))
        .unwrap()
}

fn walked(
    walks: &ResponsesWalks,
    store: &Store,
    project: &Option<ProjectId>,
    body: &Bytes,
) -> ListWalked<ResponsesRequest> {
    let body = &ChunkedBody::from(body.clone());
    let located = walks.locate(body, offer(true)).unwrap();
    let first = located.first_message(body).unwrap();
    let mut used = Used::at(0);
    store
        .read(|tx| walks.walk(tx, body, located, project.clone(), first, &mut used))
        .unwrap()
        .unwrap()
}

fn stores_exchange(store: &Store, walks: &ResponsesWalks, anchor: &str, splice: &ResponsesSplice) {
    let text = serde_json::to_string(splice).unwrap();
    store
        .write(|tx| tx.put_hidden_exchange(anchor, &text, 0))
        .unwrap();
    walks.forget_anchor(anchor);
}

/// The most items a request for turn `index` (its `send`th sending) may walk: its new items,
/// and the previous body's closing run of model items again.
fn most_walked(turns: &[Turn], index: usize, send: usize) -> usize {
    let reopened = |turn: &Turn| usize::from(turn.partial);
    match (index, send) {
        (0, 0) => 1 + reopened(&turns[0]),
        (_, 0) => 6 + reopened(&turns[index]),
        _ => reopened(&turns[index]),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A growing Responses conversation whose answers had hidden exchanges stored as the
    /// proxy stores them (after the request they answer, the anchor's walks forgotten)
    /// prepares by its new items to the same bytes, list, head and end point as whole,
    /// walking only the items a request adds (and a run of model items it extends).
    #[test]
    fn a_walked_preparation_equals_the_whole_one(
        instructions in 0usize..3,
        turns in proptest::collection::vec(arb_turn(), 1..10),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        let project = Some(ProjectId::new("p").unwrap());
        let walks = ResponsesWalks::new(64 << 20);
        let mut last: Option<ChunkedBody> = None;
        for (index, turn) in turns.iter().enumerate() {
            let body = client_body(instructions, &turns, index);
            let sends = if turn.retried { 2 } else { 1 };
            let mut fresh = None;
            for send in 0..sends {
                let expected = from_scratch(&store, &project, &body);
                let walked = walked(&walks, &store, &project, &body);
                prop_assert_eq!(walked.body.to_bytes(), expected.body.to_bytes());
                prop_assert_eq!(&walked.list, &expected.list);
                prop_assert_eq!(&*walked.head, &*expected.head);
                prop_assert_eq!(walked.point.anchor(), expected.point.anchor());
                if let Some(known) = &walked.known {
                    let of = known.of();
                    prop_assert!(last.as_ref().is_some_and(|last| last.is_same_as(of)), "vouches for the body walked last");
                    prop_assert!(walked.body.range_eq(0..known.shared(), of, 0..known.shared()));
                }
                last = Some(walked.body.clone());
                let most = most_walked(&turns, index, send);
                prop_assert!(walked.walked_entries <= most, "walked {} at {index}", walked.walked_entries);
                fresh = Some(expected);
            }
            // The proxy stores an exchange at the point after the request's last item; a
            // partial request's reasoning is then part of the answer, so none is stored.
            if let (Some(exchange), Some(fresh), false) = (turn.exchange, fresh, turn.partial) {
                stores_exchange(&store, &walks, &fresh.point.anchor(), &splice_for(index, turn, exchange));
            }
        }
    }
}

fn plain_turns(count: usize) -> Vec<Turn> {
    (0..count)
        .map(|index| Turn {
            user: format!("question {index}"),
            answer: format!("answer {index}"),
            reasoning: false,
            client_call: false,
            exchange: None,
            retried: false,
            partial: false,
        })
        .collect()
}

fn holds(body: &[u8], needle: &str) -> bool {
    body.windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

/// A walk resumed past an exchange that was since deleted walks afresh, so the request
/// goes without it, as the whole preparation sends it.
#[test]
fn a_deleted_exchange_is_not_put_back_from_memory() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("context.db")).unwrap();
    let project = None;
    let walks = ResponsesWalks::new(64 << 20);
    let turns = plain_turns(3);
    let first = client_body(1, &turns, 0);
    let anchor = from_scratch(&store, &project, &first).point.anchor();
    walked(&walks, &store, &project, &first);
    let exchange = Exchange {
        full_answer: false,
        results: false,
    };
    stores_exchange(&store, &walks, &anchor, &splice_for(0, &turns[0], exchange));

    let second = client_body(1, &turns, 1);
    let with = walked(&walks, &store, &project, &second);
    assert_eq!(
        with.body.to_bytes(),
        from_scratch(&store, &project, &second).body.to_bytes()
    );
    assert!(
        holds(&with.body.to_bytes(), "ours_0"),
        "the exchange went back"
    );

    store
        .write(|tx| tx.delete_hidden_exchanges_unused_since(1))
        .unwrap();
    let third = client_body(1, &turns, 2);
    let without = walked(&walks, &store, &project, &third);
    assert_eq!(
        without.body.to_bytes(),
        from_scratch(&store, &project, &third).body.to_bytes()
    );
    assert!(
        !holds(&without.body.to_bytes(), "ours_0"),
        "the deleted exchange stayed out"
    );
}

/// Changed instructions, or another model, make a new head: the walk starts afresh and
/// the body is still the whole preparation's.
#[test]
fn a_changed_head_or_instruction_walks_afresh() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("context.db")).unwrap();
    let project = None;
    let walks = ResponsesWalks::new(64 << 20);
    let turns = plain_turns(3);
    walked(&walks, &store, &project, &client_body(1, &turns, 1));
    let more_rules = client_body(2, &turns, 2);
    let walked_rules = walked(&walks, &store, &project, &more_rules);
    assert_eq!(
        walked_rules.body.to_bytes(),
        from_scratch(&store, &project, &more_rules).body.to_bytes()
    );
    assert_eq!(walked_rules.walked_entries, 5);

    let text = String::from_utf8(more_rules.to_vec()).unwrap();
    let other_model = Bytes::from(text.replace("gpt-5", "gpt-5-mini"));
    let walked_model = walked(&walks, &store, &project, &other_model);
    assert_eq!(
        walked_model.body.to_bytes(),
        from_scratch(&store, &project, &other_model).body.to_bytes()
    );
    assert_eq!(walked_model.walked_entries, 5);
}

/// An item stored at the provider makes the request stateful: it is not walked.
#[test]
fn an_item_reference_is_not_walked() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("context.db")).unwrap();
    let walks = ResponsesWalks::new(64 << 20);
    let turns = plain_turns(2);
    walked(&walks, &store, &None, &client_body(0, &turns, 0));
    let text = String::from_utf8(client_body(0, &turns, 1).to_vec()).unwrap();
    let with_reference = text.replace(
        "{\"role\":\"user\",\"content\":\"question 1\"}",
        "{\"type\":\"item_reference\",\"id\":\"msg_1\"}",
    );
    assert_ne!(with_reference, text);
    let body = Bytes::from(with_reference);
    let body = ChunkedBody::from(body.clone());
    let located = walks.locate(&body, offer(true)).unwrap();
    let first = located.first_message(&body).unwrap();
    let mut used = Used::at(0);
    let walked = store
        .read(|tx| walks.walk(tx, &body, located, None, first, &mut used))
        .unwrap();
    assert!(walked.is_none());
}

/// A next round's body is the prepared request's encoding with the hidden rounds appended,
/// tool calls forbidden on the last round allowed.
#[test]
fn a_next_round_appends_to_the_prepared_encoding() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("context.db")).unwrap();
    let prepared = from_scratch(&store, &None, &client_body(1, &plain_turns(2), 1));
    let exchange = Exchange {
        full_answer: false,
        results: false,
    };
    let hidden = splice_for(0, &plain_turns(1)[0], exchange).before;
    for last in [false, true] {
        let next = prepared.next_round(&hidden, last);
        let mut expected = ResponsesRequest::decode(&prepared.body.to_bytes(), usize::MAX).unwrap();
        if let Some(Input::Items(items)) = &mut expected.input {
            items.extend(hidden.iter().cloned());
        }
        if last {
            expected
                .rest
                .insert("tool_choice".to_owned(), json!("none"));
        }
        assert_eq!(next, Bytes::from(expected.encode()));
    }
}

/// A follow-up walked from the previous one vouches for the bytes its body shares with the
/// body walked last: everything before its new entries.
#[test]
fn a_follow_up_vouches_for_the_bytes_it_repeats() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("context.db")).unwrap();
    let project = None;
    let walks = ResponsesWalks::new(64 << 20);
    let turns = plain_turns(3);
    let first = walked(&walks, &store, &project, &client_body(1, &turns, 0));
    assert!(first.known.is_none(), "nothing walked before");
    let second = walked(&walks, &store, &project, &client_body(1, &turns, 1));
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
    // Up to the separator after the last kept entry: only the list's close differs.
    assert_eq!(
        first
            .body
            .get(known.shared()..known.shared() + 1)
            .as_deref(),
        Some(&b"]"[..])
    );
}
