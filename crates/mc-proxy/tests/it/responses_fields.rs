//! Items go up with every field the client sent on them: Codex puts `id`s on its items
//! (`msg_…` on a message, `fc_…` on a call, `fco_…` on an output), a `status`, `annotations`
//! on the model's text, and, through OpenAI's own provider,
//! `internal_chat_message_metadata_passthrough`; the neutral model keeps none of them, and
//! the re-rendered items dropped them all.

use axum::http::Method;
use serde_json::{Value, json};

use crate::agent_tools_responses as responses;
use crate::support::*;

fn call_items() -> (Value, Value) {
    let call = json!({"type": "function_call", "id": "fc_1", "status": "completed",
        "call_id": "call_1", "name": "read_file", "arguments": "{\"path\":\"a.rs\"}",
        "internal_chat_message_metadata_passthrough": {"turn_id": "t1"}});
    let output = json!({"id": "fco_1", "type": "function_call_output", "call_id": "call_1",
        "output": "fn main() {}", "status": "completed"});
    (call, output)
}

#[tokio::test]
async fn messages_calls_and_outputs_keep_the_clients_fields_in_its_order() {
    let upstream = Upstream::replying(|_, _| {
        json_response(200, &responses::answer(vec![responses::said("ok")]))
    })
    .await;
    let proxy = Proxy::start(&upstream.url()).await;
    let (call, output) = call_items();
    let asked = json!({"type": "message", "id": "msg_u1", "role": "user",
        "content": [{"type": "input_text", "text": "Read a.rs."}],
        "internal_chat_message_metadata_passthrough": {"turn_id": "t1"}});
    let said = json!({"type": "message", "id": "msg_a1", "status": "completed", "role": "assistant",
        "content": [{"type": "output_text", "text": "Reading it.", "annotations": []}]});
    let turns = [asked, said, call.clone(), output.clone()];
    let mut body = responses::request(&turns, false);
    body["tools"] = json!([]);
    let reply = send(
        Method::POST,
        &proxy.url("/v1/responses"),
        &[
            ("content-type", "application/json"),
            ("x-magic-context-project", "proj-fields"),
        ],
        body.to_string(),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let sent = upstream.seen()[0].json();
    let input = sent["input"].as_array().unwrap();
    let sent_call = input
        .iter()
        .find(|item| item["type"] == "function_call")
        .unwrap();
    assert_eq!(sent_call, &call, "the call goes up as the client sent it");
    let keys: Vec<&String> = sent_call.as_object().unwrap().keys().collect();
    let theirs: Vec<&String> = call.as_object().unwrap().keys().collect();
    assert_eq!(keys, theirs, "in the client's order");
    let sent_output = input
        .iter()
        .find(|item| item["type"] == "function_call_output")
        .unwrap();
    assert_eq!(sent_output["id"], "fco_1");
    assert_eq!(sent_output["status"], "completed");
    let keys: Vec<&String> = sent_output.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["id", "type", "call_id", "output", "status"]);
    let message = |role: &str| {
        input
            .iter()
            .filter(|item| item["role"] == role)
            .find(|item| item["id"].is_string())
            .unwrap_or_else(|| panic!("no {role} message kept its id: {input:?}"))
    };
    let user = message("user");
    assert_eq!(user["id"], "msg_u1");
    assert_eq!(
        user["internal_chat_message_metadata_passthrough"],
        json!({"turn_id": "t1"})
    );
    let assistant = message("assistant");
    let keys: Vec<&String> = assistant.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["type", "id", "status", "role", "content"]);
    assert_eq!(assistant["content"][0]["annotations"], json!([]));
    assert!(
        assistant["content"][0]["text"]
            .as_str()
            .unwrap()
            .ends_with("Reading it."),
        "the engine's tag stays: {assistant}"
    );
    proxy.shutdown().await;
}
