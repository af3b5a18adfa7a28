//! The OpenAI-compatible provider against the fake server: ordering, normalisation, batching,
//! errors, redaction and timeouts.

use std::time::Duration;

use mc_embed::{EmbedError, Embedder, EmbeddingProvider, EmbeddingSettings, OpenAiSettings};
use serde_json::json;

use crate::fake::{Reply, Server, vectors_reply};

fn embedder(settings: OpenAiSettings) -> Embedder {
    Embedder::from_settings(&EmbeddingSettings {
        provider: EmbeddingProvider::OpenAiCompatible(settings),
    })
    .unwrap()
    .unwrap()
}

fn texts(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("text {i}")).collect()
}

/// An environment variable cargo sets for every test run, standing in for a key variable
/// (tests cannot set variables: `set_var` is unsafe and unsafe code is forbidden).
const KEY_VAR: &str = "CARGO_PKG_NAME";

#[tokio::test]
async fn vectors_come_back_in_input_order_and_unit_length() {
    let server = Server::start(|body| vectors_reply(body, 3)).await;
    let mut settings = OpenAiSettings::new(&server.base_url, "text-embedding-3-small");
    settings.api_key_env = Some(KEY_VAR.to_owned());
    let embedder = embedder(settings);
    let vectors = embedder.embed(&texts(3)).await.unwrap();

    let scale = 5f32.sqrt();
    let expected: Vec<Vec<f32>> = (0..3)
        .map(|_| vec![1.0 / scale, 2.0 / scale, 0.0])
        .collect();
    for (got, want) in vectors.iter().zip(&expected) {
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-6, "{got:?} vs {want:?}");
        }
    }
    // Same direction for every input, so check the order through the request instead.
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/embeddings");
    assert_eq!(
        seen[0].body,
        json!({"model": "text-embedding-3-small", "input": ["text 0", "text 1", "text 2"]})
    );
    let key = std::env::var(KEY_VAR).unwrap();
    assert_eq!(seen[0].authorization, Some(format!("Bearer {key}")));
}

#[tokio::test]
async fn order_follows_the_index_field_not_the_list_position() {
    // Input i gets a vector pointing along axis i; the reply lists them in reverse.
    let server = Server::start(|body| {
        let n = body["input"].as_array().map_or(0, Vec::len);
        let data: Vec<_> = (0..n)
            .rev()
            .map(|i| {
                let mut e = vec![0.0; n];
                e[i] = 2.0;
                json!({"index": i, "embedding": e})
            })
            .collect();
        Reply::Body {
            status: 200,
            body: json!({ "data": data }).to_string(),
        }
    })
    .await;
    let vectors = embedder(OpenAiSettings::new(format!("{}/v1", server.base_url), "m"))
        .embed(&texts(4))
        .await
        .unwrap();
    for (i, vector) in vectors.iter().enumerate() {
        let mut want = vec![0.0; 4];
        want[i] = 1.0;
        assert_eq!(vector, &want);
    }
    assert_eq!(server.seen()[0].path, "/v1/embeddings");
    assert_eq!(server.seen()[0].authorization, None);
}

#[tokio::test]
async fn large_inputs_are_split_into_requests_and_kept_in_order() {
    let server = Server::start(|body| vectors_reply(body, 2)).await;
    let vectors = embedder(OpenAiSettings::new(&server.base_url, "m"))
        .embed(&texts(130))
        .await
        .unwrap();
    assert_eq!(vectors.len(), 130);
    let sizes: Vec<usize> = server
        .seen()
        .iter()
        .map(|s| s.body["input"].as_array().unwrap().len())
        .collect();
    assert_eq!(sizes, vec![64, 64, 2]);
    assert_eq!(
        server.seen()[2].body["input"],
        json!(["text 128", "text 129"])
    );
}

#[tokio::test]
async fn configured_dimensions_are_requested_and_enforced() {
    let server = Server::start(|body| vectors_reply(body, 4)).await;
    let mut settings = OpenAiSettings::new(format!("{}/v1/embeddings", server.base_url), "m");
    settings.dimensions = Some(3);
    let embedder = embedder(settings);
    assert_eq!(embedder.model_id(), "openai:m@3");
    assert_eq!(embedder.dimensions(), Some(3));
    let error = embedder.embed(&texts(1)).await.unwrap_err();
    assert!(
        matches!(&error, EmbedError::MalformedResponse { reason, .. } if reason.contains("4 dimensions, expected 3")),
        "{error}"
    );
    assert_eq!(server.seen()[0].body["dimensions"], json!(3));
}

#[tokio::test]
async fn an_error_status_carries_the_message_without_the_key() {
    let key = std::env::var(KEY_VAR).unwrap();
    let echoed = key.clone();
    let server = Server::start(move |_| Reply::Body {
        status: 401,
        body: json!({"error": {"message": format!("Incorrect API key provided: {echoed}."), "type": "invalid_request_error"}}).to_string(),
    })
    .await;
    let mut settings = OpenAiSettings::new(&server.base_url, "m");
    settings.api_key_env = Some(KEY_VAR.to_owned());
    let error = embedder(settings).embed(&texts(1)).await.unwrap_err();
    let EmbedError::Status {
        status, message, ..
    } = &error
    else {
        panic!("unexpected {error:?}");
    };
    assert_eq!(*status, 401);
    assert_eq!(message, "Incorrect API key provided: <redacted>.");
    assert!(!error.to_string().contains(&key), "{error}");
    assert!(!format!("{error:?}").contains(&key), "{error:?}");
    assert!(!error.is_retryable());
}

#[tokio::test]
async fn server_errors_and_rate_limits_are_retryable() {
    for status in [429, 500, 503] {
        let server = Server::start(move |_| Reply::Body {
            status,
            body: "upstream overloaded".to_owned(),
        })
        .await;
        let error = embedder(OpenAiSettings::new(&server.base_url, "m"))
            .embed(&texts(1))
            .await
            .unwrap_err();
        assert!(error.is_retryable(), "{status}: {error}");
        assert!(
            error
                .to_string()
                .ends_with(&format!("answered {status}: upstream overloaded")),
            "{error}"
        );
    }
}

#[tokio::test]
async fn malformed_bodies_are_errors_not_panics() {
    let cases = [
        ("not json at all", "expected"),
        (r#"{"data": "nope"}"#, "invalid type"),
        (r#"{"data": []}"#, "0 vectors for 2 inputs"),
        (
            r#"{"data": [{"index": 0, "embedding": [1]}, {"index": 0, "embedding": [1]}]}"#,
            "index 0 appears twice",
        ),
        (
            r#"{"data": [{"index": 0, "embedding": [1]}, {"index": 7, "embedding": [1]}]}"#,
            "index 7 out of range",
        ),
        (
            r#"{"data": [{"index": 0, "embedding": [1, 2]}, {"index": 1, "embedding": [1]}]}"#,
            "has 1 dimensions, expected 2",
        ),
        (
            r#"{"data": [{"index": 0, "embedding": []}, {"index": 1, "embedding": []}]}"#,
            "has 0 dimensions",
        ),
    ];
    for (body, want) in cases {
        let server = Server::start(move |_| Reply::Body {
            status: 200,
            body: body.to_owned(),
        })
        .await;
        let error = embedder(OpenAiSettings::new(&server.base_url, "m"))
            .embed(&texts(2))
            .await
            .unwrap_err();
        assert!(
            matches!(&error, EmbedError::MalformedResponse { reason, .. } if reason.contains(want)),
            "{body}: {error}"
        );
        assert!(!error.is_retryable());
    }
}

#[tokio::test]
async fn a_hung_server_times_out() {
    let server = Server::start(|_| Reply::Hang).await;
    let mut settings = OpenAiSettings::new(&server.base_url, "m");
    settings.timeout = Duration::from_millis(300);
    let error = embedder(settings).embed(&texts(1)).await.unwrap_err();
    assert!(
        matches!(error, EmbedError::Timeout { after_ms: 300, .. }),
        "{error}"
    );
    assert!(error.is_retryable());
}

#[tokio::test]
async fn a_refused_connection_is_a_request_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let error = embedder(OpenAiSettings::new(url, "m"))
        .embed(&texts(1))
        .await
        .unwrap_err();
    assert!(matches!(error, EmbedError::Request { .. }), "{error}");
}
