//! A scripted fake embeddings server that records every request it sees.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// What the fake answers, given the parsed request body.
pub type Script = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

/// One answer.
pub enum Reply {
    /// A status and a body, sent as JSON.
    Body { status: u16, body: String },
    /// Accept the request and answer after a long while.
    Hang,
}

/// A request as the fake saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub authorization: Option<String>,
    pub body: Value,
}

#[derive(Clone)]
struct Fake {
    script: Script,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// A running fake; dropping it leaves the server task to end with the test's runtime.
pub struct Server {
    pub base_url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    pub async fn start(script: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let fake = Fake {
            script: Arc::new(script),
            seen: Arc::clone(&seen),
        };
        let app = Router::new().fallback(handle).with_state(fake);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { base_url, seen }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn handle(State(fake): State<Fake>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    fake.seen.lock().unwrap().push(Seen {
        path: uri.path().to_owned(),
        authorization: headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        body: body.clone(),
    });
    match (fake.script)(&body) {
        Reply::Body { status, body } => (
            StatusCode::from_u16(status).unwrap(),
            [("content-type", "application/json")],
            body,
        )
            .into_response(),
        Reply::Hang => {
            tokio::time::sleep(Duration::from_secs(30)).await;
            StatusCode::OK.into_response()
        }
    }
}

/// An OpenAI-shaped answer: for input i, the vector `[i + 1, 2(i + 1), 0, ...]` of `width`
/// values (not unit length, so normalisation shows), listed in reverse index order.
pub fn vectors_reply(body: &Value, width: usize) -> Reply {
    let inputs = body["input"].as_array().map_or(0, Vec::len);
    let data: Vec<Value> = (0..inputs)
        .rev()
        .map(|i| {
            let mut embedding = vec![0.0f32; width];
            embedding[0] = (i + 1) as f32;
            embedding[1] = 2.0 * (i + 1) as f32;
            serde_json::json!({"object": "embedding", "index": i, "embedding": embedding})
        })
        .collect();
    Reply::Body {
        status: 200,
        body: serde_json::json!({"object": "list", "data": data, "model": body["model"]})
            .to_string(),
    }
}
