//! Fetching the model into a cache directory, from a fake hub on 127.0.0.1 (never the real one).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use mc_embed::{EmbedError, fetch_model};

#[derive(Clone, Default)]
struct Hub {
    files: Arc<HashMap<String, Vec<u8>>>,
    requests: Arc<Mutex<Vec<String>>>,
}

async fn serve(State(hub): State<Hub>, Path(file): Path<String>) -> (StatusCode, Vec<u8>) {
    hub.requests.lock().unwrap().push(file.clone());
    match hub.files.get(&file) {
        Some(bytes) => (StatusCode::OK, bytes.clone()),
        None => (
            StatusCode::NOT_FOUND,
            b"{\"error\":\"Entry not found\"}".to_vec(),
        ),
    }
}

async fn start(files: &[(&str, &[u8])]) -> (String, Hub) {
    let hub = Hub {
        files: Arc::new(
            files
                .iter()
                .map(|(name, bytes)| ((*name).to_owned(), bytes.to_vec()))
                .collect(),
        ),
        requests: Arc::default(),
    };
    let app = Router::new()
        .route("/repo/{file}", axum::routing::get(serve))
        .with_state(hub.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/repo", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, hub)
}

#[tokio::test]
async fn fetches_missing_files_once() {
    let weights = vec![7u8; 300_000]; // several chunks
    let (base, hub) = start(&[
        ("config.json", b"{}"),
        ("tokenizer.json", b"{\"t\":1}"),
        ("model.safetensors", &weights),
    ])
    .await;
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().join("all-MiniLM-L6-v2");

    let files = fetch_model(&dir, &base).await.unwrap();
    assert_eq!(std::fs::read(&files.weights).unwrap(), weights);
    assert_eq!(std::fs::read(&files.tokenizer).unwrap(), b"{\"t\":1}");
    assert_eq!(files.config, Some(dir.join("config.json")));
    assert_eq!(
        *hub.requests.lock().unwrap(),
        ["config.json", "tokenizer.json", "model.safetensors"]
    );

    fetch_model(&dir, &base).await.unwrap();
    assert_eq!(
        hub.requests.lock().unwrap().len(),
        3,
        "present files are not fetched again"
    );
}

#[tokio::test]
async fn a_missing_file_fails_and_leaves_no_partial_file() {
    let (base, _hub) = start(&[("config.json", b"{}"), ("tokenizer.json", b"{}")]).await;
    let cache = tempfile::tempdir().unwrap();
    let error = fetch_model(cache.path(), &base).await.unwrap_err();
    assert!(
        matches!(&error, EmbedError::Status { status: 404, message, url }
            if message == "Entry not found" && url.ends_with("/model.safetensors")),
        "{error}"
    );
    let mut left: Vec<String> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["config.json", "tokenizer.json"]);
}
