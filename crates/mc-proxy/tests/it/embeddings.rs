//! Semantic search's vectors are made in the background of managed calls: a call through the
//! proxy leaves its messages embedded by the configured OpenAI-compatible endpoint soon
//! after, without waiting for it; an endpoint that fails leaves no vector and no failed call.

use std::time::{Duration, Instant};

use mc_core::config::{Config, EmbeddingProviderChoice};
use serde_json::{Value, json};

use crate::support::{
    Proxy, Upstream, anthropic_message, anthropic_request, assistant, json_response, post,
    settings, user,
};

const SESSION: &str = "embeddings-it";

/// A unit vector of 4 numbers derived from `text`, so equal texts get equal vectors.
fn fake_vector(text: &str) -> Vec<f64> {
    let sum: u32 = text.bytes().map(u32::from).sum();
    let raw = [
        1.0,
        f64::from(sum % 7),
        f64::from(sum % 11),
        f64::from(sum % 13),
    ];
    let norm = raw.iter().map(|x| x * x).sum::<f64>().sqrt();
    raw.iter().map(|x| x / norm).collect()
}

/// An embeddings endpoint: `fail` answers 500 to everything.
async fn embedding_server(fail: bool) -> Upstream {
    Upstream::replying(move |seen, _| {
        if fail {
            return json_response(500, &json!({"error": {"message": "model not loaded"}}));
        }
        let body: Value = serde_json::from_slice(&seen.body).unwrap();
        let data: Vec<Value> = body["input"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(index, text)| {
                json!({"index": index, "embedding": fake_vector(text.as_str().unwrap())})
            })
            .collect();
        json_response(200, &json!({"data": data, "model": "fake-embed"}))
    })
    .await
}

fn config(endpoint: &str) -> Config {
    let mut config = Config::default();
    config.historian.enabled = false;
    config.tools.mode = mc_core::config::ToolsMode::Off;
    config.embeddings.enabled = true;
    config.embeddings.provider = EmbeddingProviderChoice::OpenAiCompatible;
    config.embeddings.endpoint = Some(endpoint.to_owned());
    config.embeddings.model = Some("fake-embed".to_owned());
    config
}

fn conversation() -> Value {
    anthropic_request(&[
        user("The deploy script fails on the staging host."),
        assistant("Let me read the deploy log."),
        user("It says the disk is full."),
    ])
}

fn vector_rows(proxy: &Proxy) -> Vec<(String, Option<String>, Option<u64>)> {
    proxy
        .store()
        .read(|tx| tx.vectors_since("openai:fake-embed", 0, 100))
        .unwrap()
        .into_iter()
        .filter(|row| row.source == mc_store::VectorSource::Message)
        .map(|row| {
            (
                "openai:fake-embed".to_owned(),
                row.place.session,
                row.place.ordinal,
            )
        })
        .collect()
}

#[tokio::test]
async fn a_managed_calls_messages_are_embedded_in_the_background() {
    let model =
        Upstream::replying(|_, _| json_response(200, &anthropic_message("Free space first.")))
            .await;
    let embedder = embedding_server(false).await;
    let proxy = Proxy::start_with_config(settings(&model.url()), config(&embedder.url())).await;
    let reply = post(
        &proxy,
        "/v1/messages",
        &[("x-magic-context-session", SESSION)],
        &conversation(),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let deadline = Instant::now() + Duration::from_secs(20);
    let rows = loop {
        let rows = vector_rows(&proxy);
        if rows.len() == 3 || Instant::now() > deadline {
            break rows;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        rows,
        (0..3)
            .map(|ordinal| (
                "openai:fake-embed".to_owned(),
                Some(SESSION.to_owned()),
                Some(ordinal)
            ))
            .collect::<Vec<_>>()
    );
    let asked: Vec<String> = embedder
        .seen()
        .iter()
        .flat_map(|seen| {
            let body: Value = serde_json::from_slice(&seen.body).unwrap();
            body["input"]
                .as_array()
                .unwrap()
                .iter()
                .map(|text| text.as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        asked.iter().any(|text| text.contains("disk is full")),
        "{asked:?}"
    );
    assert!(
        embedder
            .seen()
            .iter()
            .all(|seen| seen.uri.ends_with("/v1/embeddings"))
    );
}

#[tokio::test]
async fn a_failing_embedding_endpoint_costs_the_client_nothing() {
    let model =
        Upstream::replying(|_, _| json_response(200, &anthropic_message("Free space first.")))
            .await;
    let embedder = embedding_server(true).await;
    let proxy = Proxy::start_with_config(settings(&model.url()), config(&embedder.url())).await;
    for _ in 0..2 {
        let reply = post(
            &proxy,
            "/v1/messages",
            &[("x-magic-context-session", SESSION)],
            &conversation(),
        )
        .await;
        assert_eq!(reply.status, 200, "{}", reply.text());
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while embedder.seen().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!embedder.seen().is_empty(), "the endpoint was asked");
    assert!(vector_rows(&proxy).is_empty());
    assert_eq!(proxy.messages(SESSION).len(), 3);
}
