//! A fault-injecting Anthropic upstream, written on raw TCP so a test controls every byte
//! and the way the connection ends: a TCP reset, a chunked body cut mid-event, a stall, a
//! trickle. One request per connection (`connection: close`); each request is recorded and
//! answered by the fault planned for its index, else by a normal streamed answer.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::support::{MODEL, sse_event};

/// What the upstream does with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The normal streamed answer.
    None,
    /// The stream's first events (reporting a huge prompt), then a TCP reset.
    ResetMidStream,
    /// The first events and half of the next, then a TCP reset.
    ResetMidEvent,
    /// The first events and half of the next, then a clean end of the chunked body.
    CutMidEvent,
    /// The first events, then silence longer than the proxy's idle timeout.
    Stall,
    /// The normal answer, a few bytes at a time.
    Trickle,
    /// 429 with `retry-after` and a rate-limit header.
    RateLimited,
    /// 500 `api_error`.
    ServerError,
    /// 529 `overloaded_error`.
    Overloaded,
}

/// The context window the tests give the proxy, in tokens.
pub const WINDOW_TOKENS: u64 = 20_000;

/// The prompt size a broken stream reports before it breaks: near the window, so a proxy
/// that planned with it would plan the next request differently. A whole answer reports
/// a plausible count (a token per four bytes of the body).
const BROKEN_STREAM_PROMPT_TOKENS: u64 = WINDOW_TOKENS;

/// The error body of a status fault.
pub fn error_body(fault: Fault) -> Option<(u16, Value)> {
    let (status, kind, message) = match fault {
        Fault::RateLimited => (
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
        ),
        Fault::ServerError => (500, "api_error", "Internal server error"),
        Fault::Overloaded => (529, "overloaded_error", "Overloaded"),
        Fault::None
        | Fault::ResetMidStream
        | Fault::ResetMidEvent
        | Fault::CutMidEvent
        | Fault::Stall
        | Fault::Trickle => return None,
    };
    Some((
        status,
        json!({"type": "error", "error": {"type": kind, "message": message}}),
    ))
}

/// The `retry-after` a rate-limited answer carries.
pub const RETRY_AFTER: &str = "17";

/// The text the upstream answers a request of `messages` messages with.
pub fn answer_text(messages: usize) -> String {
    format!("Answer to turn {}.", messages.div_ceil(2))
}

/// A running fault upstream.
pub struct FaultUpstream {
    addr: std::net::SocketAddr,
    seen: Arc<Mutex<Vec<Bytes>>>,
}

impl FaultUpstream {
    /// Serves requests with `plan[index]` (a normal answer past its end).
    pub async fn start(plan: Vec<Fault>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&seen);
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let (plan, recorded) = (plan.clone(), Arc::clone(&recorded));
                tokio::spawn(async move {
                    let Some(body) = read_request(&mut socket).await else {
                        return;
                    };
                    let index = {
                        let mut recorded = recorded.lock().unwrap();
                        recorded.push(body.clone());
                        recorded.len() - 1
                    };
                    let fault = plan.get(index).copied().unwrap_or(Fault::None);
                    answer(socket, fault, &body).await;
                });
            }
        });
        Self { addr, seen }
    }

    /// `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request body so far, in arrival order.
    pub fn seen(&self) -> Vec<Bytes> {
        self.seen.lock().unwrap().clone()
    }
}

/// Reads one request's head and its `content-length` body.
async fn read_request(socket: &mut TcpStream) -> Option<Bytes> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .map_or(0, |value| value.trim().parse().unwrap());
    while buffer.len() < head_end + length {
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    Some(Bytes::copy_from_slice(&buffer[head_end..head_end + length]))
}

/// The events of a streamed answer to `body`, reporting `prompt_tokens`.
fn stream_events(body: &[u8], prompt_tokens: u64) -> Vec<String> {
    let request: Value = serde_json::from_slice(body).unwrap();
    let messages = request["messages"].as_array().map_or(0, Vec::len);
    vec![
        sse_event(
            "message_start",
            &json!({"type": "message_start", "message": {
                "id": "msg_fault", "type": "message", "role": "assistant", "model": MODEL,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": prompt_tokens, "cache_creation_input_tokens": 0,
                          "cache_read_input_tokens": 0, "output_tokens": 1}}}),
        ),
        sse_event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        sse_event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": answer_text(messages)}}),
        ),
        sse_event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": 0}),
        ),
        sse_event(
            "message_delta",
            &json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                    "usage": {"output_tokens": 6}}),
        ),
        sse_event("message_stop", &json!({"type": "message_stop"})),
    ]
}

const STREAM_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";

fn chunk(data: &str) -> String {
    format!("{:x}\r\n{data}\r\n", data.len())
}

/// The upstream's bytes for a normal streamed answer to `body`.
pub fn normal_answer(body: &[u8]) -> String {
    let mut out = String::from(STREAM_HEAD);
    for event in stream_events(body, body.len() as u64 / 4) {
        out.push_str(&chunk(&event));
    }
    out.push_str("0\r\n\r\n");
    out
}

async fn answer(mut socket: TcpStream, fault: Fault, body: &[u8]) {
    if let Some((status, error)) = error_body(fault) {
        let text = error.to_string();
        let extra = if fault == Fault::RateLimited {
            format!("retry-after: {RETRY_AFTER}\r\nanthropic-ratelimit-requests-remaining: 0\r\n")
        } else {
            String::new()
        };
        let response = format!(
            "HTTP/1.1 {status} Fault\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{text}",
            text.len()
        );
        let _ = socket.write_all(response.as_bytes()).await;
        return;
    }
    let events = stream_events(body, BROKEN_STREAM_PROMPT_TOKENS);
    let mut head = String::from(STREAM_HEAD);
    for event in &events[..3] {
        head.push_str(&chunk(event));
    }
    let half = chunk(&events[3][..events[3].len() / 2]);
    match fault {
        Fault::None => {
            let _ = socket.write_all(normal_answer(body).as_bytes()).await;
        }
        Fault::Trickle => {
            for piece in normal_answer(body).as_bytes().chunks(24) {
                if socket.write_all(piece).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        Fault::ResetMidStream | Fault::ResetMidEvent => {
            if fault == Fault::ResetMidEvent {
                head.push_str(&half);
            }
            let _ = socket.write_all(head.as_bytes()).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
            // A zero linger turns the close into a reset (RST), not a clean FIN.
            let _ = socket.set_zero_linger();
            drop(socket);
        }
        Fault::CutMidEvent => {
            head.push_str(&half);
            head.push_str("0\r\n\r\n");
            let _ = socket.write_all(head.as_bytes()).await;
        }
        Fault::Stall => {
            let _ = socket.write_all(head.as_bytes()).await;
            tokio::time::sleep(Duration::from_secs(30)).await;
        }
        Fault::RateLimited | Fault::ServerError | Fault::Overloaded => {}
    }
}
