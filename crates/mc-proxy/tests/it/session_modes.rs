//! Session modes over HTTP: with `compaction.enabled: false` every message the client sent
//! goes up byte for byte after the head; Claude Code's Task subagent (the same session id,
//! its own first message and an agent's system prompt) is stored as a subagent of the main
//! conversation, which stays primary.

use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;

use axum::http::Method;

use crate::support::{
    MODEL, Proxy, Upstream, anthropic_message, json_response, post, quiet_config, send, settings,
};
use mc_core::SessionMode;

#[derive(Deserialize)]
struct Messages<'a> {
    #[serde(borrow)]
    messages: Vec<&'a RawValue>,
}

/// The bytes of each message of an Anthropic body, as they stand in it.
fn message_bytes(body: &[u8]) -> Vec<String> {
    let parsed: Messages<'_> = serde_json::from_slice(body).unwrap();
    parsed
        .messages
        .iter()
        .map(|raw| raw.get().to_owned())
        .collect()
}

/// A Claude Code-like conversation as a client might spell it: a bare-string content, a
/// tool call and its result with `"is_error": false`, escapes and non-ASCII text, a number
/// written `2.50`, a tag-like string the engine would otherwise clean, odd spacing, and the
/// client's cache marker on the last block. Only the client's own bytes keep all of it.
const CONVERSATION: [&str; 3] = [
    r#"{"role":"user", "content":"Fix the \u00abparser\u00bb \"now\"\n\t\u00a74\u00a7 please"}"#,
    r#"{"role":"assistant","content":[{"type":"text","text":"Reading it."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"path":"src/parse.rs","limit":2.50}}]}"#,
    r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"fn parse() {}\n","is_error":false,"cache_control":{"type":"ephemeral"}}]}"#,
];

#[tokio::test]
async fn with_compaction_off_the_message_tail_goes_up_as_the_client_sent_it() {
    let upstream = Upstream::replying(|_, _| json_response(200, &anthropic_message("ok"))).await;
    let mut config = quiet_config();
    config.compaction.enabled = false;
    let proxy = Proxy::start_with_config(settings(&upstream.url()), config).await;
    for end in [1, 3] {
        let body = format!(
            r#"{{"model":"{MODEL}","max_tokens":1024,"system":[{{"type":"text","text":"You are Claude Code.","cache_control":{{"type":"ephemeral"}}}}],"messages":[{}]}}"#,
            CONVERSATION[..end].join(", ")
        );
        let reply = send(
            Method::POST,
            &proxy.url("/v1/messages"),
            &[
                ("content-type", "application/json"),
                ("x-claude-code-session-id", "compaction-off-1"),
            ],
            body.clone(),
        )
        .await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let sent = upstream.seen().last().unwrap().body.clone();
        let upstream_messages = message_bytes(&sent);
        assert_eq!(upstream_messages.len(), end + 2, "the head, then the tail");
        assert_eq!(upstream_messages[2..], CONVERSATION[..end]);
        // Outside the message list too, the body is the client's.
        let head_len: usize = upstream_messages[..2].iter().map(|m| m.len() + 1).sum();
        assert_eq!(sent.len(), body.len() + head_len);
    }
    let sessions = proxy.sessions();
    let modes: Vec<SessionMode> = sessions.iter().map(|session| session.mode).collect();
    assert_eq!(modes, [SessionMode::CompactionOff]);
}

#[tokio::test]
async fn a_claude_code_task_subagent_is_a_subagent_of_the_main_conversation() {
    let upstream = Upstream::replying(|_, _| json_response(200, &anthropic_message("ok"))).await;
    let proxy = Proxy::start_with_config(settings(&upstream.url()), quiet_config()).await;
    let call = |system: &str, prompt: &str| {
        json!({
            "model": MODEL, "max_tokens": 1024,
            "system": [
                {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
                {"type": "text", "text": system}
            ],
            "messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]}],
        })
    };
    let headers = [("x-claude-code-session-id", "5b3f0a2c-main")];
    let main = call(
        "You are an interactive agent that helps users with software engineering tasks.",
        "Refactor the loader.",
    );
    assert_eq!(
        post(&proxy, "/v1/messages", &headers, &main).await.status,
        200
    );
    let task = call(
        "You are an agent for Claude Code, Anthropic's official CLI for Claude. Given the \
         user's message, you should use the tools available to complete the task.",
        "Find where the config is loaded.",
    );
    assert_eq!(
        post(&proxy, "/v1/messages", &headers, &task).await.status,
        200
    );
    let sessions = proxy.sessions();
    let primary: Vec<_> = sessions
        .iter()
        .filter(|session| session.mode == SessionMode::Primary)
        .collect();
    let subagents: Vec<_> = sessions
        .iter()
        .filter(|session| session.mode == SessionMode::Subagent)
        .collect();
    assert_eq!((primary.len(), subagents.len()), (1, 1), "{sessions:?}");
    assert_eq!(subagents[0].spawned_by.as_ref(), Some(&primary[0].id));
    assert_eq!(primary[0].spawned_by, None);
    // Both lanes are the same client session's.
    assert!(
        sessions
            .iter()
            .all(|session| session.id.as_str().starts_with("cc-5b3f0a2c-main-")),
        "{sessions:?}"
    );
}

/// OpenCode's task tool runs a child session under its own `x-session-id`, naming the
/// session that spawned it in `x-parent-session-id` (as OpenCode 1.18.33 sends them).
#[tokio::test]
async fn an_opencode_child_session_is_a_subagent_of_its_parent() {
    let upstream = Upstream::replying(|_, _| json_response(200, &anthropic_message("ok"))).await;
    let proxy = Proxy::start_with_config(settings(&upstream.url()), quiet_config()).await;
    let call = |prompt: &str| {
        json!({
            "model": MODEL, "max_tokens": 1024,
            "system": "You are opencode, an interactive CLI tool.",
            "tools": [{"name": "bash", "input_schema": {"type": "object"}}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]}],
        })
    };
    let agent = (
        "user-agent",
        "opencode/1.18.33 ai-sdk/provider-utils/4.0.46",
    );
    let parent = [agent, ("x-session-id", "ses_parent")];
    let reply = post(&proxy, "/v1/messages", &parent, &call("Work through it.")).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let child = [
        agent,
        ("x-session-id", "ses_child"),
        ("x-parent-session-id", "ses_parent"),
    ];
    let reply = post(&proxy, "/v1/messages", &child, &call("Find the loader.")).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let sessions = proxy.sessions();
    let find = |prefix: &str| {
        sessions
            .iter()
            .find(|session| session.id.as_str().starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} session in {sessions:?}"))
    };
    let (parent, child) = (find("oc-ses_parent-"), find("oc-ses_child-"));
    assert_eq!(
        (parent.mode, parent.spawned_by.as_ref()),
        (SessionMode::Primary, None)
    );
    assert_eq!(
        (child.mode, child.spawned_by.as_ref()),
        (SessionMode::Subagent, Some(&parent.id))
    );
}

/// With compaction off an overflow is the host's to handle: the provider's error reaches
/// the client at once, and nothing is retried (a retry would send the same messages).
#[tokio::test]
async fn with_compaction_off_an_overflow_reaches_the_client_unretried() {
    let too_long = json!({"type": "error", "error": {"type": "invalid_request_error",
        "message": "prompt is too long: 215000 tokens > 200000 maximum"}});
    let answer = too_long.clone();
    let upstream = Upstream::replying(move |_, _| json_response(400, &answer)).await;
    let mut config = quiet_config();
    config.compaction.enabled = false;
    let proxy = Proxy::start_with_config(settings(&upstream.url()), config).await;
    let body = json!({
        "model": MODEL, "max_tokens": 1024, "system": "You are Claude Code.",
        "messages": [{"role": "user", "content": "Go on."}],
    });
    let reply = post(&proxy, "/v1/messages", &[], &body).await;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.json(), too_long);
    assert_eq!(upstream.seen().len(), 1, "not retried");
}

/// The same on the Responses wire, with the agent tools at their default: each request of a
/// growing conversation (the follow-ups decoded from what the session's last request left)
/// goes up with the head first and then every input item the client sent, as it sent it.
#[tokio::test]
async fn with_compaction_off_responses_items_go_up_as_the_client_sent_them() {
    use crate::agent_tools_responses::{answer, call, output, request, said, scripted, user};
    let upstream = scripted(vec![answer(vec![said("Done.")])]).await;
    let mut config = quiet_config();
    config.compaction.enabled = false;
    let proxy = Proxy::start_with_config(settings(&upstream.url()), config).await;
    let turns = [
        user("Rename the crate."),
        call("c1", "read_file", json!({"path": "Cargo.toml"})),
        output("c1", "[package]\nname = \"old\"\n"),
        said("Renamed."),
        user("Now its tests \u{00e9}."),
    ];
    for end in [1, 3, 5] {
        let body = request(&turns[..end], false);
        let reply = send(
            Method::POST,
            &proxy.url("/v1/responses"),
            &[("content-type", "application/json")],
            body.to_string(),
        )
        .await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let sent = upstream.seen().last().unwrap().json();
        let input = sent["input"].as_array().unwrap();
        let client = body["input"].as_array().unwrap();
        assert_eq!(
            input.len(),
            client.len() + 2,
            "the head, then the items: {sent}"
        );
        assert_eq!(input[2..], client[..], "{sent}");
    }
    proxy.shutdown().await;
}
