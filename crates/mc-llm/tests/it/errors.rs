use mc_llm::{LlmClient, LlmError, Wire};
use serde_json::json;

use crate::fake::{Fake, Reply, fast_policy, request};

#[tokio::test]
async fn an_answer_without_a_tool_call_is_an_error() {
    let fake = Fake::start(vec![Reply::json(
        200,
        json!({
            "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": "Here is a summary..."}}],
        }),
    )])
    .await;
    let client = LlmClient::new(fast_policy()).unwrap();
    let endpoint = fake.endpoint(Wire::OpenAiChat, "local", None);

    let error = client
        .call_structured(&endpoint, &request())
        .await
        .unwrap_err();

    assert!(
        matches!(&error, LlmError::NoToolCall { tool, stop_reason: Some(r), .. } if tool == "record_history" && r == "stop"),
        "{error}"
    );
    assert_eq!(fake.seen().len(), 1, "not retried");
}

#[tokio::test]
async fn a_success_body_of_the_wrong_shape_is_malformed() {
    let fake = Fake::start(vec![Reply::json(200, json!({"ok": true}))]).await;
    let client = LlmClient::new(fast_policy()).unwrap();
    let endpoint = fake.endpoint(Wire::Anthropic, "m", None);

    let error = client
        .call_structured(&endpoint, &request())
        .await
        .unwrap_err();

    assert!(matches!(error, LlmError::MalformedAnswer { .. }), "{error}");
}

#[tokio::test]
async fn an_unreachable_server_is_a_connection_error() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let client = LlmClient::new(fast_policy()).unwrap();
    let endpoint = mc_llm::ModelEndpoint::new(
        Wire::OpenAiChat,
        format!("http://{address}?token=q"),
        "m",
        None,
    );

    let error = client
        .call_structured(&endpoint, &request())
        .await
        .unwrap_err();

    assert!(matches!(error, LlmError::Connection { .. }), "{error}");
    assert!(error.is_retryable());
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains("token=q"), "{shown}");
}

#[tokio::test]
async fn an_invalid_tool_is_refused_before_sending() {
    let client = LlmClient::new(fast_policy()).unwrap();
    let endpoint = mc_llm::ModelEndpoint::new(Wire::Anthropic, "http://127.0.0.1:9", "m", None);
    let mut bad = request();
    bad.tool = json!({"name": "t"});

    let error = client.call_structured(&endpoint, &bad).await.unwrap_err();

    assert!(matches!(error, LlmError::InvalidTool { .. }), "{error}");
}

#[tokio::test]
async fn the_key_never_shows_in_debug_or_errors() {
    const KEY: &str = "sk-ant-api03-TOPSECRET";
    let fake = Fake::start(vec![Reply::json(
        401,
        json!({"error": {"type": "authentication_error", "message": format!("invalid key {KEY}")}}),
    )])
    .await;
    let client = LlmClient::new(fast_policy()).unwrap();
    let endpoint = fake.endpoint(Wire::Anthropic, "haiku", Some(KEY));

    let error = client
        .call_with_fallbacks(std::slice::from_ref(&endpoint), &request())
        .await
        .unwrap_err();

    assert_eq!(fake.seen()[0].headers["x-api-key"], KEY, "it was sent");
    let shown = format!("{error} {error:?} {endpoint:?} {endpoint:#?} {client:?}");
    assert!(!shown.contains("TOPSECRET"), "{shown}");
    assert!(shown.contains("invalid key <redacted>"), "{shown}");
}
