//! Responders over HTTP: script conditions pick the right turn, and a recorded session
//! answers with its recorded replies.

use std::sync::Arc;

use mc_core::{Message, Part, Role};
use mc_sim::recording::{Recording, RecordingFormat, Step};
use mc_sim::server::{Responder, SimConfig, SimServer};
use serde_json::{Value, json};

use crate::server::{json_of, post, start};

fn request(messages: &[Value]) -> Value {
    json!({ "model": "claude-sonnet-4-5", "max_tokens": 1000, "messages": messages })
}

fn user(text: &str) -> Value {
    json!({ "role": "user", "content": text })
}

fn tool_result(text: &str) -> Value {
    json!({ "role": "user", "content": [{ "type": "tool_result", "tool_use_id": "toolu_x", "content": text }] })
}

fn assistant(text: &str) -> Value {
    json!({ "role": "assistant", "content": text })
}

/// The text of the first block of an answer.
async fn answer(server: &SimServer, messages: &[Value]) -> String {
    let (status, bytes) = post(server, "/v1/messages", &request(messages)).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    let body = json_of(&bytes);
    let first = &body["content"][0];
    match first["type"].as_str() {
        Some("tool_use") => format!("tool:{}", first["input"]["command"].as_str().unwrap_or("")),
        _ => first["text"].as_str().unwrap_or("").to_owned(),
    }
}

#[tokio::test]
async fn script_conditions_pick_the_right_turn() {
    let script = json!({ "turns": [
        { "content": [{ "type": "tool_use", "name": "Bash", "input": { "command": "cargo test" } }] },
        { "when": { "last_tool_result_contains": "FAILED" },
          "content": [{ "type": "tool_use", "name": "Bash", "input": { "command": "fix" } }] },
        { "when": { "tool_result_count_at_least": 2 },
          "content": [{ "type": "text", "text": "fixed after two runs" }] },
        { "when": { "last_user_text_contains": "thanks" },
          "content": [{ "type": "text", "text": "you are welcome" }] },
    ], "final_text": "nothing more" });
    let (server, _clock) = start(script, None).await;

    let mut history = vec![user("run the tests")];
    assert_eq!(answer(&server, &history).await, "tool:cargo test");
    history.extend([
        assistant("running"),
        tool_result("test result: FAILED. 1 failed"),
    ]);
    assert_eq!(answer(&server, &history).await, "tool:fix");
    // One tool result so far: turn 2 waits; turn 3 waits for thanks. Final text, nothing moves.
    let one_result = [user("run the tests"), tool_result("ok")];
    assert_eq!(answer(&server, &one_result).await, "nothing more");
    history.extend([assistant("fixing"), tool_result("ok")]);
    assert_eq!(answer(&server, &history).await, "fixed after two runs");
    history.extend([assistant("done"), user("thanks!")]);
    assert_eq!(answer(&server, &history).await, "you are welcome");
    assert_eq!(answer(&server, &history).await, "nothing more");

    let ledger = server.ledger();
    assert_eq!(ledger.len(), 6);
    assert!(ledger.windows(2).all(|pair| pair[0].seq < pair[1].seq));
    server.shutdown().await.unwrap();
}

fn text(role: Role, text: &str) -> Message {
    Message::new(role, vec![Part::text(text)])
}

#[tokio::test]
async fn a_trajectory_answers_with_its_recorded_replies() {
    let history = Arc::new(vec![
        text(Role::User, "fix the bug"),
        text(Role::Assistant, "step one"),
        text(Role::User, "output one"),
        text(Role::Assistant, "step two"),
        text(Role::User, "output two"),
    ]);
    let step = |len: usize, reply: &str| Step {
        at_ms: 0,
        messages: Arc::clone(&history),
        len,
        response: text(Role::Assistant, reply),
        output_tokens: Some(42),
        recorded: None,
        context: None,
    };
    let recording = Recording {
        name: "hand-made".to_owned(),
        format: RecordingFormat::AnthropicCapture,
        model: "claude-sonnet-4-5".to_owned(),
        system: Vec::new(),
        tools: Vec::new(),
        stand_ins: Vec::new(),
        steps: vec![
            step(1, "step one"),
            step(3, "step two"),
            step(5, "all done"),
        ],
    };
    let config = SimConfig::new(Responder::Trajectory(recording));
    let server = SimServer::bind("127.0.0.1:0".parse().unwrap(), config)
        .await
        .unwrap();

    let messages = [
        user("fix the bug"),
        assistant("step one"),
        user("output one"),
        assistant("step two"),
        user("output two"),
    ];
    // Matched by length, whatever the order the client asks in.
    assert_eq!(answer(&server, &messages[..3]).await, "step two");
    assert_eq!(answer(&server, &messages[..1]).await, "step one");
    // No unused step has length 2: the next unused one answers.
    assert_eq!(answer(&server, &messages[..2]).await, "all done");
    assert_eq!(
        answer(&server, &messages).await,
        "The recorded session has ended."
    );
    let ledger = server.ledger();
    assert_eq!(ledger[0].output_tokens, 42);
    server.shutdown().await.unwrap();
}
