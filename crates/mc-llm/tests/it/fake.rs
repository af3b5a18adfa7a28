//! A scripted fake provider that records every request it sees.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use mc_core::Secret;
use mc_llm::{ModelEndpoint, RetryPolicy, StructuredRequest, Wire};
use serde_json::{Value, json};

/// What the fake answers to one request.
#[derive(Clone)]
pub enum Reply {
    /// A status, extra headers and a body.
    Body {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
    /// Accept the request and never answer.
    Hang,
}

impl Reply {
    pub fn json(status: u16, body: Value) -> Self {
        Self::Body {
            status,
            headers: Vec::new(),
            body: body.to_string(),
        }
    }

    pub fn with_header(self, name: &'static str, value: &str) -> Self {
        match self {
            Self::Body {
                status,
                mut headers,
                body,
            } => {
                headers.push((name, value.to_owned()));
                Self::Body {
                    status,
                    headers,
                    body,
                }
            }
            Self::Hang => Self::Hang,
        }
    }
}

/// A request as the fake saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

#[derive(Default)]
struct Script {
    replies: VecDeque<Reply>,
    last: Option<Reply>,
    seen: Vec<Seen>,
}

pub struct Fake {
    pub base_url: String,
    script: Arc<Mutex<Script>>,
}

impl Fake {
    /// Serves `replies` in order, repeating the last one once they run out.
    pub async fn start(replies: Vec<Reply>) -> Self {
        let script = Arc::new(Mutex::new(Script {
            replies: replies.into(),
            ..Script::default()
        }));
        let router = Router::new().fallback(answer).with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await });
        Self {
            base_url: format!("http://{address}"),
            script,
        }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.script.lock().unwrap().seen.clone()
    }

    pub fn endpoint(&self, wire: Wire, model: &str, key: Option<&str>) -> ModelEndpoint {
        ModelEndpoint::new(wire, self.base_url.clone(), model, key.map(Secret::new))
    }
}

async fn answer(
    State(script): State<Arc<Mutex<Script>>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let reply = {
        let mut script = script.lock().unwrap();
        script.seen.push(Seen {
            path: uri.path().to_owned(),
            headers,
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        });
        let next = script.replies.pop_front();
        if let Some(next) = &next {
            script.last = Some(next.clone());
        }
        next.or_else(|| script.last.clone())
    };
    match reply {
        Some(Reply::Body {
            status,
            headers,
            body,
        }) => {
            let mut response = (StatusCode::from_u16(status).unwrap(), body).into_response();
            response
                .headers_mut()
                .insert("content-type", "application/json".parse().unwrap());
            for (name, value) in headers {
                response.headers_mut().insert(name, value.parse().unwrap());
            }
            response
        }
        Some(Reply::Hang) => std::future::pending().await,
        None => StatusCode::NOT_IMPLEMENTED.into_response(),
    }
}

/// Quick retries so the tests take milliseconds.
pub fn fast_policy() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        attempt_timeout: Duration::from_secs(5),
        base_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
        max_retry_after: Duration::from_millis(60),
    }
}

pub fn request() -> StructuredRequest {
    StructuredRequest {
        system: "You summarise.".into(),
        user: "1 U: hello".into(),
        tool: json!({
            "name": "record_history",
            "description": "Record it.",
            "input_schema": {"type": "object", "properties": {"title": {"type": "string"}}},
        }),
        max_tokens: 1024,
    }
}

pub fn anthropic_answer(input: Value) -> Reply {
    Reply::json(
        200,
        json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "tool_use", "id": "tu_1", "name": "record_history", "input": input}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
        }),
    )
}

pub fn openai_answer(input: &Value) -> Reply {
    Reply::json(
        200,
        json!({
            "id": "chatcmpl-1", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "record_history", "arguments": input.to_string()}}],
            }}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20},
        }),
    )
}

pub fn responses_answer(input: &Value) -> Reply {
    Reply::json(
        200,
        json!({
            "id": "resp_1", "object": "response", "model": "m", "status": "completed",
            "output": [
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": input.to_string(), "annotations": []}]},
            ],
            "usage": {"input_tokens": 100, "output_tokens": 20, "input_tokens_details": {"cached_tokens": 64}},
        }),
    )
}

pub fn overloaded() -> Reply {
    Reply::json(
        529,
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    )
}
