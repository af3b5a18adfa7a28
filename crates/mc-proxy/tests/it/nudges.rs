//! The reminder about old tool output, as the provider receives it: it names `ctx_reduce`
//! and the largest outputs' tags when the model has the tool (the proxy adds it, or the
//! client's tool list has it from our MCP server), says only what holds otherwise, and is
//! not given at all with `reduction.nudges: false`.

use mc_core::config::{Config, ToolsMode};
use serde_json::{Value, json};

use crate::agent_tools::{request, tool_use};
use crate::support::*;

/// Two large tool outputs, well past the reminder's threshold, then a new user turn.
fn conversation() -> Vec<Value> {
    let mut messages = vec![user("Make the integration tests pass.")];
    for turn in 0..2 {
        let id = format!("toolu_{turn}");
        messages.push(json!({"role": "assistant", "content": [
            tool_use(&id, "read_file", json!({"path": format!("log{turn}.txt")}))]}));
        messages.push(json!({"role": "user", "content": [{"type": "tool_result",
            "tool_use_id": id, "content": format!("line {turn} of the log\n").repeat(6_000)}]}));
    }
    messages.push(user("Carry on."));
    messages
}

/// The last upstream request's last user message, as text.
async fn reminder_sent(mode: ToolsMode, nudges: bool, tools: Option<Value>) -> String {
    let upstream = Upstream::replying(|_, _| json_response(200, &anthropic_message("ok"))).await;
    let mut config = Config::default();
    config.historian.enabled = false;
    config.tools.mode = mode;
    config.reduction.protected_tags = 1;
    config.reduction.nudges = nudges;
    let proxy = Proxy::start_with_config(settings(&upstream.url()), config).await;
    let mut body = request(&conversation(), false);
    if let Some(tools) = tools {
        body["tools"] = tools;
    }
    let reply = post(&proxy, "/v1/messages", &[], &body).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let sent = upstream.seen().last().expect("a request went up").json();
    proxy.shutdown().await;
    sent["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .map(|last| last["content"].to_string())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_model_given_our_tools_is_told_to_call_ctx_reduce() {
    let last = reminder_sent(ToolsMode::Proxy, true, None).await;
    assert!(last.contains("[context note]"), "{last}");
    assert!(last.contains("call ctx_reduce with its tags"), "{last}");
}

#[tokio::test]
async fn a_client_with_our_mcp_server_is_told_too() {
    let tools = json!([
        {"name": "read_file", "input_schema": {"type": "object"}},
        {"name": "mcp__magic-context__ctx_reduce", "input_schema": {"type": "object"}},
    ]);
    let last = reminder_sent(ToolsMode::Off, true, Some(tools)).await;
    assert!(last.contains("call ctx_reduce with its tags"), "{last}");
}

#[tokio::test]
async fn a_model_without_the_tool_hears_only_what_holds_and_none_when_off() {
    let last = reminder_sent(ToolsMode::Off, true, None).await;
    assert!(last.contains("[context note]"), "{last}");
    assert!(!last.contains("ctx_reduce"), "{last}");
    let off = reminder_sent(ToolsMode::Proxy, false, None).await;
    assert!(!off.contains("[context note]"), "{off}");
}
