use mc_llm::{LlmClient, LlmError, Wire};
use serde_json::json;

use crate::fake::{Fake, Reply, anthropic_answer, fast_policy, openai_answer, overloaded, request};

#[tokio::test]
async fn fallback_moves_on_after_the_first_endpoint_exhausts_its_retries() {
    let first = Fake::start(vec![overloaded()]).await;
    let second = Fake::start(vec![openai_answer(&json!({"title": "from second"}))]).await;
    let client = LlmClient::new(fast_policy()).unwrap();
    let endpoints = [
        first.endpoint(Wire::Anthropic, "haiku", Some("k1")),
        second.endpoint(Wire::OpenAiChat, "local", None),
    ];

    let answer = client
        .call_with_fallbacks(&endpoints, &request())
        .await
        .unwrap();

    assert_eq!(answer.input, json!({"title": "from second"}));
    assert_eq!(answer.answered_by, endpoints[1].label());
    assert_eq!(first.seen().len(), 3);
    assert_eq!(second.seen().len(), 1);
}

#[tokio::test]
async fn fallback_moves_on_at_once_after_a_rejection() {
    let first = Fake::start(vec![Reply::json(
        401,
        json!({"error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
    )])
    .await;
    let second = Fake::start(vec![anthropic_answer(json!({"title": "ok"}))]).await;
    let client = LlmClient::new(fast_policy()).unwrap();
    let endpoints = [
        first.endpoint(Wire::Anthropic, "a", Some("k1")),
        second.endpoint(Wire::Anthropic, "b", Some("k2")),
    ];

    let answer = client
        .call_with_fallbacks(&endpoints, &request())
        .await
        .unwrap();

    assert_eq!(answer.input, json!({"title": "ok"}));
    assert_eq!(first.seen().len(), 1);
}

#[tokio::test]
async fn when_every_endpoint_fails_each_failure_is_reported() {
    let first = Fake::start(vec![overloaded()]).await;
    let second = Fake::start(vec![Reply::json(
        404,
        json!({"error": {"type": "not_found_error", "message": "model: nope"}}),
    )])
    .await;
    let client = LlmClient::new(fast_policy()).unwrap();
    let endpoints = [
        first.endpoint(Wire::Anthropic, "haiku", Some("k1")),
        second.endpoint(Wire::OpenAiChat, "nope", Some("k2")),
    ];

    let error = client
        .call_with_fallbacks(&endpoints, &request())
        .await
        .unwrap_err();

    let LlmError::AllFailed { failures } = &error else {
        panic!("{error}");
    };
    assert_eq!(failures.len(), 2);
    assert!(matches!(
        failures[0],
        LlmError::Provider { status: 529, .. }
    ));
    assert!(matches!(
        failures[1],
        LlmError::Provider { status: 404, .. }
    ));
    let shown = error.to_string();
    assert!(
        shown.starts_with("all 2 model endpoints failed: [1] model `haiku`"),
        "{shown}"
    );
    assert!(
        shown.contains("[2] model `nope`") && shown.contains("model: nope"),
        "{shown}"
    );
}

#[tokio::test]
async fn an_empty_chain_is_an_error() {
    let client = LlmClient::new(fast_policy()).unwrap();
    let error = client
        .call_with_fallbacks(&[], &request())
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::NoEndpoints), "{error}");
}
