//! Historian calls over real HTTP, sent by the client the proxy's historian uses
//! (`mc_llm::LlmClient`): honest answers on every wire (a forced tool call on Anthropic and
//! Chat, a strict JSON-schema text format on Responses) and streamed, and each fault mode as
//! that client sees it, while ordinary calls go on being answered from the script.

use std::time::Duration;

use mc_core::historian::{
    Chunk, HISTORIAN_SYSTEM, HISTORY_TOOL, historian_user_message, history_tool, parse_answer,
    validate,
};
use mc_llm::{LlmClient, LlmError, ModelEndpoint, RetryPolicy, StructuredRequest, Wire};
use mc_sim::clock::SimClock;
use mc_sim::script::Script;
use mc_sim::server::{HistorianMode, Responder, SimConfig, SimServer};
use mc_wire::anthropic::ContentBlock;
use serde_json::{Value, json};

use crate::server::{accumulate, claude_code_request, post};

const CHUNK: Chunk = Chunk { start: 4, end: 15 };

/// The transcript of ordinals 4 to 15, as the historian renders it.
fn transcript() -> String {
    let mut lines = vec![
        "#4 user: The login test fails on CI. Never skip tests to make CI green.".to_owned(),
        "#5 assistant: Reading it. → Read({\"file_path\":\"tests/login.rs\"})".to_owned(),
        "#6 user: ← fn login_works() { assert!(login(\"a\", \"b\").is_ok()); }".to_owned(),
        "#7 assistant: → Bash({\"command\":\"cargo test login\"})".to_owned(),
        "#8 user: ← error: thread 'login_works' panicked: connection refused".to_owned(),
        "#9 assistant: The test needs the fake server. → Edit({\"file_path\":\"tests/login.rs\"})"
            .to_owned(),
        "#10 user: ← ok".to_owned(),
        "#11 assistant: → Bash({\"command\":\"cargo test login\"})".to_owned(),
        "#12 user: ← test login_works ... ok".to_owned(),
        "#13 user: Thanks. Now document the fake server in the README.".to_owned(),
        "#14 assistant: → Edit({\"file_path\":\"README.md\"})".to_owned(),
        "#15 user: ← ok".to_owned(),
    ];
    lines.push(String::new());
    lines.join("\n")
}

fn historian_request() -> StructuredRequest {
    StructuredRequest {
        system: HISTORIAN_SYSTEM.to_owned(),
        user: historian_user_message(CHUNK, &transcript(), Default::default()),
        tool: history_tool(),
        max_tokens: 4_096,
    }
}

/// A server in `mode` whose script answers ordinary calls with one text.
async fn start(mode: HistorianMode) -> SimServer {
    let script = json!([{ "content": [{ "type": "text", "text": "Scripted answer." }] }]);
    let script = Script::parse(&script.to_string(), "historian test").unwrap();
    let config = SimConfig::new(Responder::Script(script))
        .with_clock(SimClock::new(1_700_000_000_000))
        .with_historian(mode);
    SimServer::bind("127.0.0.1:0".parse().unwrap(), config)
        .await
        .unwrap()
}

fn endpoint(server: &SimServer, wire: Wire) -> ModelEndpoint {
    let model = match wire {
        Wire::Anthropic => "claude-haiku-4-5",
        Wire::OpenAiChat | Wire::OpenAiResponses => "gpt-4o",
    };
    ModelEndpoint::new(wire, format!("http://{}", server.local_addr()), model, None)
}

/// Few attempts, no real waiting between them.
fn quick_policy(attempt_timeout: Duration) -> RetryPolicy {
    RetryPolicy {
        max_attempts: 2,
        attempt_timeout,
        base_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(2),
        max_retry_after: Duration::from_millis(2),
    }
}

/// An ordinary Claude Code call: answered by the script whatever the historian does.
async fn ordinary_call_is_answered(server: &SimServer) {
    let user = json!({ "role": "user", "content": [{ "type": "text", "text": "hello" }] });
    let request = claude_code_request(&[user], false);
    let (status, bytes) = post(server, "/v1/messages", &request).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(body["content"][0]["text"], "Scripted answer.");
}

#[tokio::test]
async fn historian_calls_get_valid_answers_on_every_wire() {
    let server = start(HistorianMode::Honest).await;
    let client = LlmClient::new(quick_policy(Duration::from_secs(10))).unwrap();
    for wire in [Wire::Anthropic, Wire::OpenAiChat, Wire::OpenAiResponses] {
        let answer = client
            .call_structured(&endpoint(&server, wire), &historian_request())
            .await
            .unwrap();
        let output = parse_answer(&answer.input).unwrap();
        let kept = validate(&output, CHUNK, 0).unwrap();
        assert!(
            kept.held_back,
            "the last compartment ends at the chunk's end"
        );
        let ranges: Vec<(u64, u64)> = output
            .compartments
            .iter()
            .map(|c| (c.start_ordinal, c.end_ordinal))
            .collect();
        assert_eq!(ranges, [(4, 12), (13, 15)], "{wire:?}");
        assert_eq!(output.compartments[0].episode, "debugging");
        assert_eq!(output.facts.len(), 1);
        assert!(answer.usage.input_tokens > 0 && answer.usage.output_tokens > 100);
    }
    // The historian's calls played nothing: the script's first turn is still there.
    ordinary_call_is_answered(&server).await;
    let ledger = server.ledger();
    assert_eq!(ledger.len(), 4);
    assert!(ledger.iter().all(|row| row.status == 200));
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_streamed_historian_call_carries_the_same_answer() {
    let server = start(HistorianMode::Honest).await;
    let request = json!({
        "model": "claude-haiku-4-5",
        "max_tokens": 4096,
        "stream": true,
        "system": HISTORIAN_SYSTEM,
        "tools": [history_tool()],
        "tool_choice": { "type": "tool", "name": HISTORY_TOOL },
        "messages": [{ "role": "user", "content": historian_user_message(CHUNK, &transcript(), Default::default()) }],
    });
    let (status, bytes) = post(&server, "/v1/messages", &request).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    let (_, message) = accumulate(&bytes);
    assert_eq!(message.stop_reason(), Some("tool_use"));
    let [ContentBlock::ToolUse(call)] = message.content.as_slice() else {
        panic!("unexpected blocks: {:?}", message.content);
    };
    assert_eq!(call.name, HISTORY_TOOL);
    let output = parse_answer(&call.input).unwrap();
    assert!(validate(&output, CHUNK, 0).is_ok());
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn garbage_answers_fail_to_parse() {
    let server = start(HistorianMode::Garbage).await;
    let client = LlmClient::new(quick_policy(Duration::from_secs(10))).unwrap();
    for wire in [Wire::Anthropic, Wire::OpenAiChat, Wire::OpenAiResponses] {
        let answer = client
            .call_structured(&endpoint(&server, wire), &historian_request())
            .await
            .unwrap();
        let error = parse_answer(&answer.input).unwrap_err();
        assert!(error.contains("does not match its schema"), "{error}");
    }
    ordinary_call_is_answered(&server).await;
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn overloaded_historian_calls_fail_after_their_retries() {
    let server = start(HistorianMode::Overloaded).await;
    let client = LlmClient::new(quick_policy(Duration::from_secs(10))).unwrap();
    for (wire, expected) in [
        (Wire::Anthropic, (529, Some("overloaded_error"))),
        (Wire::OpenAiChat, (503, Some("server_error"))),
        (Wire::OpenAiResponses, (503, Some("server_error"))),
    ] {
        let error = client
            .call_structured(&endpoint(&server, wire), &historian_request())
            .await
            .unwrap_err();
        let LlmError::Provider {
            status, error_type, ..
        } = &error
        else {
            panic!("not a provider error: {error}");
        };
        assert_eq!((*status, error_type.as_deref()), expected);
        assert!(error.is_retryable());
    }
    ordinary_call_is_answered(&server).await;
    let statuses: Vec<u16> = server.ledger().iter().map(|row| row.status).collect();
    // Two attempts per wire, then the ordinary call.
    assert_eq!(statuses, [529, 529, 503, 503, 503, 503, 200]);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn stalled_historian_calls_time_out_while_ordinary_calls_are_answered() {
    let server = start(HistorianMode::Stall).await;
    let policy = RetryPolicy {
        max_attempts: 1,
        ..quick_policy(Duration::from_millis(300))
    };
    let client = LlmClient::new(policy).unwrap();
    let anthropic = endpoint(&server, Wire::Anthropic);
    let request = historian_request();
    let stalled = client.call_structured(&anthropic, &request);
    let (stalled, ()) = tokio::join!(stalled, ordinary_call_is_answered(&server));
    assert!(
        matches!(stalled, Err(LlmError::Timeout { .. })),
        "{stalled:?}"
    );
    let openai = client
        .call_structured(&endpoint(&server, Wire::OpenAiChat), &request)
        .await;
    assert!(
        matches!(openai, Err(LlmError::Timeout { .. })),
        "{openai:?}"
    );
    let responses = client
        .call_structured(&endpoint(&server, Wire::OpenAiResponses), &request)
        .await;
    assert!(
        matches!(responses, Err(LlmError::Timeout { .. })),
        "{responses:?}"
    );
    // A stalled call does not hold up the server's shutdown.
    tokio::time::timeout(Duration::from_secs(10), server.shutdown())
        .await
        .unwrap()
        .unwrap();
}
