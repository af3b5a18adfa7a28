use mc_store::Store;
use mc_wire::openai::ChatContent;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

fn chat(value: Value) -> ChatMessage {
    serde_json::from_value(value).unwrap()
}

/// One turn of a generated Chat conversation: the user's words, the answer the client got
/// (text, or a call of its own answered by a `tool` message), and the hidden exchange stored
/// before that answer, if any.
#[derive(Debug, Clone)]
struct Turn {
    user: String,
    answer: String,
    client_call: bool,
    exchange: Option<(bool, bool)>,
}

fn arb_turn() -> impl Strategy<Value = Turn> {
    (
        "[a-z \"\\\\]{0,12}",
        "[a-z ]{1,10}",
        any::<bool>(),
        proptest::option::of((any::<bool>(), any::<bool>())),
    )
        .prop_map(|(user, answer, client_call, exchange)| Turn {
            user,
            answer,
            client_call,
            exchange,
        })
}

fn answer_of(turn: &Turn, index: usize) -> ChatMessage {
    if turn.client_call {
        chat(
            json!({"role": "assistant", "content": turn.answer, "tool_calls": [
            {"id": format!("call_{index}"), "type": "function",
             "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}]}),
        )
    } else {
        chat(json!({"role": "assistant", "content": turn.answer}))
    }
}

/// The client's turns (after the instructions), storing each turn's exchange in `store` at
/// the anchor a splice walk reaches it by.
fn client_turns(store: &Store, turns: &[Turn]) -> Vec<ChatMessage> {
    let mut point = Point::start(WIRE, None);
    let pass = |point: &mut Point, message: &ChatMessage| {
        point.pass(&openai::to_message(message).unwrap().content_hash());
    };
    let mut out = Vec::new();
    for (index, turn) in turns.iter().enumerate() {
        let user = chat(json!({"role": "user", "content": turn.user}));
        pass(&mut point, &user);
        out.push(user);
        let answer = answer_of(turn, index);
        let mut after = Vec::new();
        if let Some((full, results)) = turn.exchange {
            let hidden_call = chat(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": format!("ours_{index}"), "type": "function",
                 "function": {"name": "ctx_search", "arguments": "{\"query\":\"x\"}"}}]}));
            let hidden_result = ChatMessage::tool_result(
                format!("ours_{index}"),
                ChatContent::Text("found".to_owned()),
            );
            let full_answer =
                full.then(|| chat(json!({"role": "assistant", "content": "the full answer"})));
            let results: Vec<ChatMessage> = if results {
                vec![ChatMessage::tool_result(
                    format!("late_{index}"),
                    ChatContent::Text("late".to_owned()),
                )]
            } else {
                Vec::new()
            };
            let splice = ChatSplice {
                before: vec![hidden_call.clone(), hidden_result.clone()],
                full_answer: full_answer.clone(),
                client_answer: chat_answer_key(&answer).unwrap(),
                results: results.clone(),
            };
            let text = serde_json::to_string(&splice).unwrap();
            store
                .write(|tx| tx.put_hidden_exchange(&point.anchor(), &text, 1))
                .unwrap();
            pass(&mut point, &hidden_call);
            pass(&mut point, &hidden_result);
            pass(&mut point, full_answer.as_ref().unwrap_or(&answer));
            after = results;
        } else {
            pass(&mut point, &answer);
        }
        for result in &after {
            pass(&mut point, result);
        }
        out.push(answer);
        if turn.client_call {
            let result = ChatMessage::tool_result(
                format!("call_{index}"),
                ChatContent::Text("a.txt".to_owned()),
            );
            pass(&mut point, &result);
            out.push(result);
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The point after the spliced turns is the one the pass reaches reading the prepared
    /// body: the answers' anchors of the next request are where the exchanges are stored.
    #[test]
    fn the_point_after_the_splice_is_the_prepared_bodys(
        turns in proptest::collection::vec(arb_turn(), 1..6),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("store.db")).unwrap();
        let client = client_turns(&store, &turns);
        let neutral: Vec<Message> =
            client.iter().map(|message| openai::to_message(message).unwrap()).collect();
        let mut used = Used::at(2);
        let spliced = store
            .read(|tx| splice_chat(tx, None, client, neutral, &mut used))
            .unwrap();
        let mut request = ChatRequest::new("gpt-4.1", vec![ChatMessage::text(ChatRole::System, "be brief")]);
        request.messages.extend(spliced.turns.iter().cloned());
        let decoded = ChatRequest::decode(&request.encode(), usize::MAX).unwrap();
        let read: Vec<Message> = decoded.messages[decoded.instruction_count()..]
            .iter()
            .map(|message| openai::to_message(message).unwrap())
            .collect();
        let mut expected = Point::start(WIRE, None);
        for message in &read {
            expected.pass(&message.content_hash());
        }
        prop_assert_eq!(spliced.point.anchor(), expected.anchor());
        let hidden = turns.iter().filter(|turn| turn.exchange.is_some()).count();
        prop_assert!(read.len() >= client_len(&turns) + 2 * hidden);
    }
}

/// Messages the client sent for `turns`.
fn client_len(turns: &[Turn]) -> usize {
    turns
        .iter()
        .map(|turn| 2 + usize::from(turn.client_call))
        .sum()
}
