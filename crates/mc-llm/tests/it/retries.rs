use std::time::{Duration, Instant};

use mc_llm::{LlmClient, LlmError, RetryPolicy, Wire};
use serde_json::json;

use crate::fake::{Fake, Reply, anthropic_answer, fast_policy, openai_answer, overloaded, request};

#[tokio::test]
async fn overloaded_529_then_200_is_retried() {
    let fake = Fake::start(vec![overloaded(), anthropic_answer(json!({"title": "ok"}))]).await;
    let client = LlmClient::new(fast_policy()).unwrap();
    let endpoint = fake.endpoint(Wire::Anthropic, "haiku", Some("k"));

    let answer = client.call_structured(&endpoint, &request()).await.unwrap();

    assert_eq!(answer.input, json!({"title": "ok"}));
    let seen = fake.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].body, seen[1].body, "a retry sends the same request");
}

#[tokio::test]
async fn rate_limit_429_waits_for_retry_after() {
    let limited = Reply::json(
        429,
        json!({"error": {"type": "rate_limit_error", "message": "slow down"}}),
    )
    .with_header("retry-after", "1");
    let fake = Fake::start(vec![limited, openai_answer(&json!({"title": "ok"}))]).await;
    // retry-after (1 s) is capped at 60 ms; the backoff alone would wait at most 5 ms.
    let client = LlmClient::new(fast_policy()).unwrap();
    let endpoint = fake.endpoint(Wire::OpenAiChat, "gpt", Some("k"));

    let started = Instant::now();
    let answer = client.call_structured(&endpoint, &request()).await.unwrap();

    assert!(
        started.elapsed() >= Duration::from_millis(60),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(answer.input, json!({"title": "ok"}));
    assert_eq!(fake.seen().len(), 2);
}

#[tokio::test]
async fn retries_stop_at_max_attempts_with_the_last_error() {
    let fake = Fake::start(vec![overloaded()]).await;
    let client = LlmClient::new(fast_policy()).unwrap();
    let endpoint = fake.endpoint(Wire::Anthropic, "haiku", Some("k"));

    let error = client
        .call_structured(&endpoint, &request())
        .await
        .unwrap_err();

    assert_eq!(fake.seen().len(), 3);
    assert!(
        matches!(&error, LlmError::Provider { status: 529, error_type: Some(t), .. } if t == "overloaded_error"),
        "{error}"
    );
}

#[tokio::test]
async fn bad_request_400_is_not_retried_and_its_message_surfaces() {
    let fake = Fake::start(vec![Reply::json(
        400,
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: too large for model"}}),
    )])
    .await;
    let client = LlmClient::new(fast_policy()).unwrap();
    let endpoint = fake.endpoint(Wire::Anthropic, "haiku", Some("k"));

    let error = client
        .call_structured(&endpoint, &request())
        .await
        .unwrap_err();

    assert_eq!(fake.seen().len(), 1);
    assert!(!error.is_retryable());
    assert_eq!(
        error.to_string(),
        format!(
            "model `haiku` at {}: provider answered HTTP 400 (invalid_request_error): max_tokens: too large for model",
            fake.base_url.trim_start_matches("http://")
        )
    );
}

#[tokio::test]
async fn hanging_server_times_out_without_retrying() {
    let fake = Fake::start(vec![Reply::Hang]).await;
    let client = LlmClient::new(RetryPolicy {
        attempt_timeout: Duration::from_millis(200),
        ..fast_policy()
    })
    .unwrap();
    let endpoint = fake.endpoint(Wire::OpenAiChat, "slow", None);

    let started = Instant::now();
    let error = client
        .call_structured(&endpoint, &request())
        .await
        .unwrap_err();

    assert!(matches!(error, LlmError::Timeout { .. }), "{error}");
    assert!(error.to_string().contains("200 ms"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(fake.seen().len(), 1);
}
