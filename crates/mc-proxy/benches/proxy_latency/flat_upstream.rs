//! An upstream whose cost does not depend on what it is sent: it reads the whole body and
//! answers every POST with the same short streamed message (Anthropic's, or that of the
//! Chat Completions or Responses wire its path names).
//!
//! The simulator's cost per call depends on the request's shape (its cache breakpoints, how
//! much of the prompt its cache already holds), and the proxy changes that shape: it moves
//! the client's markers and, in a long session, lands drops. Timed against the simulator, a
//! proxied call could come out cheaper than the direct one, or dearer, for reasons that are
//! the simulator's. Against this upstream, a call costs the same whichever way it comes, so
//! the paired difference is the proxy's own.

use std::net::SocketAddr;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::DefaultBodyLimit;
use axum::http::{Response, StatusCode, Uri, header};
use axum::routing::post;
use tokio::task::JoinHandle;

/// One short message, its usage reported as Anthropic reports it.
const STREAM: &str = concat!(
    "event: message_start\n",
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_flat\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":10,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":1000,\"output_tokens\":1}}}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Done.\"}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: message_delta\n",
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":3}}\n\n",
    "event: message_stop\n",
    "data: {\"type\":\"message_stop\"}\n\n",
);

/// The same short answer on the Chat Completions wire, with its usage chunk.
const CHAT_STREAM: &str = concat!(
    "data: {\"id\":\"chatcmpl-flat\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4.1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Done.\"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"chatcmpl-flat\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4.1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
    "data: {\"id\":\"chatcmpl-flat\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4.1\",\"choices\":[],\"usage\":{\"prompt_tokens\":1010,\"completion_tokens\":3,\"total_tokens\":1013,\"prompt_tokens_details\":{\"cached_tokens\":1000}}}\n\n",
    "data: [DONE]\n\n",
);

/// The same short answer on the Responses wire, ending with its usage.
const RESPONSES_STREAM: &str = concat!(
    "event: response.created\n",
    "data: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_flat\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"gpt-5\",\"output\":[]}}\n\n",
    "event: response.output_item.added\n",
    "data: {\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_flat\",\"role\":\"assistant\",\"content\":[]}}\n\n",
    "event: response.output_text.delta\n",
    "data: {\"type\":\"response.output_text.delta\",\"sequence_number\":2,\"output_index\":0,\"content_index\":0,\"delta\":\"Done.\"}\n\n",
    "event: response.output_item.done\n",
    "data: {\"type\":\"response.output_item.done\",\"sequence_number\":3,\"output_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_flat\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Done.\",\"annotations\":[]}]}}\n\n",
    "event: response.completed\n",
    "data: {\"type\":\"response.completed\",\"sequence_number\":4,\"response\":{\"id\":\"resp_flat\",\"object\":\"response\",\"status\":\"completed\",\"model\":\"gpt-5\",\"output\":[{\"type\":\"message\",\"id\":\"msg_flat\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Done.\",\"annotations\":[]}]}],\"usage\":{\"input_tokens\":1010,\"output_tokens\":3,\"total_tokens\":1013,\"input_tokens_details\":{\"cached_tokens\":1000}}}}\n\n",
);

/// A running flat upstream.
pub struct FlatUpstream {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl FlatUpstream {
    /// Serves on an ephemeral loopback port.
    pub async fn start() -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        // Bodies up to the proxy's own limit (axum's default stops at 2 MB).
        let app = Router::new()
            .fallback(post(answer))
            .layer(DefaultBodyLimit::disable());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { addr, task })
    }

    /// Its base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for FlatUpstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reads the whole body (extracting it does), then streams the canned message of the wire
/// the path names.
async fn answer(uri: Uri, body: Bytes) -> Response<Body> {
    let path = uri.path();
    let stream = if path.ends_with("/chat/completions") {
        CHAT_STREAM
    } else if path.ends_with("/responses") {
        RESPONSES_STREAM
    } else {
        STREAM
    };
    let mut response = Response::new(Body::from(stream));
    *response.status_mut() = if body.is_empty() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    if let Ok(value) = "text/event-stream".parse() {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
}
