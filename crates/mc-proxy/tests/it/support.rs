//! The harness every test shares: a proxy over a real SQLite store in a tempdir, in-process
//! upstreams that record every request they receive, a tap in front of mc-sim that records
//! the exact bytes the sim sends, and readers for what a client got back.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Response, StatusCode, header};
use mc_core::SessionId;
use mc_core::config::Config;
use mc_engine::Engine;
use mc_proxy::{ProxySettings, RetryPolicy, RunningProxy};
use mc_sim::CountTokens;
use mc_sim::server::{Responder, SimConfig, SimServer};
use mc_store::{SessionRecord, Store, StoreOptions, StoredMessage};
use mc_wire::sse::SseDecoder;
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// The model every Anthropic request names (the proxy knows its window: 200K).
pub const MODEL: &str = "claude-sonnet-4-5";

/// Settings for a proxy on a free loopback port whose upstreams are both `upstream`.
pub fn settings(upstream: &str) -> ProxySettings {
    ProxySettings {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream_anthropic: upstream.to_owned(),
        upstream_openai: upstream.to_owned(),
        max_request_bytes: 32 << 20,
        context_window: None,
        upstream_idle_timeout: Duration::from_secs(20),
        historian_retry: RetryPolicy::default(),
        cache_budget: mc_proxy::CacheBudget::default(),
        allowed_hosts: Vec::new(),
        client_limits: mc_proxy::ClientLimits::default(),
        user_config: None,
    }
}

/// A running proxy and the store file it writes.
pub struct Proxy {
    running: Option<RunningProxy>,
    addr: SocketAddr,
    db: PathBuf,
    dir: tempfile::TempDir,
}

impl Proxy {
    /// A proxy with default settings over a fresh store.
    pub async fn start(upstream: &str) -> Self {
        Self::start_with(settings(upstream)).await
    }

    /// A proxy with `settings` over a fresh store, the historian off: these tests count and
    /// inspect the upstream calls of the client's requests, and the historian's own calls
    /// (tested in `historian.rs`) would interleave with them. The proxy's agent tools are
    /// off too: these tests pin the engine's rendering of what the client sent, and the
    /// tools have their own (`agent_tools.rs`).
    pub async fn start_with(settings: ProxySettings) -> Self {
        Self::start_with_config(settings, quiet_config()).await
    }

    /// A proxy with `settings` and `config` over a fresh store.
    pub async fn start_with_config(settings: ProxySettings, config: Config) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("context.db");
        let engine = Engine::new(Store::open(&db).unwrap(), config);
        Self::launch(settings, Ok(engine), None, dir, db).await
    }

    /// A proxy with `settings` over a fresh store, the historian off, whose engine keeps
    /// its per-session caches within `budget` (the proxy's own come from `settings`).
    pub async fn start_with_engine_budget(
        settings: ProxySettings,
        budget: mc_proxy::CacheBudget,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("context.db");
        let mut config = Config::default();
        config.historian.enabled = false;
        let engine = Engine::new(Store::open(&db).unwrap(), config).with_cache_budget(budget);
        Self::launch(settings, Ok(engine), None, dir, db).await
    }

    /// A proxy over the store file `context.db` in `dir` (created if need be), opened with
    /// `options`, the historian and the agent tools off as in [`Self::start_with`].
    pub async fn over_store(
        settings: ProxySettings,
        dir: tempfile::TempDir,
        options: StoreOptions,
    ) -> Self {
        let db = dir.path().join("context.db");
        let engine = Engine::new(Store::open_with(&db, options).unwrap(), quiet_config());
        Self::launch(settings, Ok(engine), None, dir, db).await
    }

    /// A proxy whose store in `dir` could not be opened, for `reason`, and which tries
    /// `reopen` on later calls, as `serve` does.
    pub async fn reopening(
        settings: ProxySettings,
        dir: tempfile::TempDir,
        reason: &str,
        reopen: mc_proxy::Reopen,
    ) -> Self {
        let db = dir.path().join("context.db");
        Self::launch(settings, Err(reason.to_owned()), Some(reopen), dir, db).await
    }

    /// A proxy whose store could not be opened, for `reason`.
    pub async fn without_store(settings: ProxySettings, reason: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("never-opened.db");
        Self::launch(settings, Err(reason.to_owned()), None, dir, db).await
    }

    async fn launch(
        settings: ProxySettings,
        engine: Result<Engine, String>,
        reopen: Option<mc_proxy::Reopen>,
        dir: tempfile::TempDir,
        db: PathBuf,
    ) -> Self {
        let running = RunningProxy::start_reopening(settings, engine, reopen)
            .await
            .unwrap();
        Self {
            addr: running.local_addr(),
            running: Some(running),
            db,
            dir,
        }
    }

    /// `http://ADDR{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The directory of the store file (the data directory).
    pub fn data_dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// Whether the store file exists.
    pub fn has_store_file(&self) -> bool {
        self.db.exists()
    }

    /// A second handle on the proxy's store file, as another process would open it.
    pub fn store(&self) -> Store {
        Store::open(&self.db).unwrap()
    }

    /// Every stored session, most recently seen first.
    pub fn sessions(&self) -> Vec<SessionRecord> {
        self.store().read(|tx| tx.list_sessions(1000)).unwrap()
    }

    /// The stored ids, sorted.
    pub fn session_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .sessions()
            .into_iter()
            .map(|session| session.id.as_str().to_owned())
            .collect();
        ids.sort();
        ids
    }

    /// A session's raw log.
    pub fn messages(&self, session: &str) -> Vec<StoredMessage> {
        let id = SessionId::new(session).unwrap();
        self.store().read(|tx| tx.messages(&id, ..)).unwrap()
    }

    /// Stops the proxy (so every queued write is on disk) and returns the bytes of every
    /// file in the store's directory: the database and its journal files.
    pub async fn stop_and_read_store_files(mut self) -> Vec<u8> {
        if let Some(running) = self.running.take() {
            running.shutdown().await;
        }
        let mut bytes = Vec::new();
        for entry in std::fs::read_dir(self.dir.path()).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                bytes.extend(std::fs::read(&path).unwrap());
            }
        }
        assert!(!bytes.is_empty(), "no store file was written");
        bytes
    }

    /// The ledger rows of `session` once there are `count` of them (they are written off
    /// the request path), oldest first.
    pub async fn calls(&self, session: &str, count: usize) -> Vec<mc_store::CallRow> {
        let id = SessionId::new(session).unwrap();
        let mut calls = Vec::new();
        for _ in 0..250 {
            calls = self.store().read(|tx| tx.calls(&id, 100)).unwrap();
            if calls.len() >= count {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(calls.len(), count, "{calls:?}");
        calls.reverse();
        calls
    }

    /// Stops the proxy and waits for in-flight calls.
    pub async fn shutdown(mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown().await;
        }
    }

    /// Stops the proxy and hands back the directory of its store, for another proxy or a
    /// check of what is on disk.
    pub async fn stop(mut self) -> tempfile::TempDir {
        if let Some(running) = self.running.take() {
            running.shutdown().await;
        }
        self.dir
    }
}

/// The config of [`Proxy::start_with`]: the historian and the agent tools off.
pub fn quiet_config() -> Config {
    let mut config = Config::default();
    config.historian.enabled = false;
    config.tools.mode = mc_core::config::ToolsMode::Off;
    config
}

/// One request an in-process upstream received, exactly as it arrived.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: Method,
    /// Path and query.
    pub uri: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Seen {
    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|error| {
            panic!(
                "upstream body is not JSON ({error}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// A header's value as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }
}

/// An in-process upstream on a free loopback port: records every request whole, then
/// answers with the test's handler (given the request and its index, from 0).
pub struct Upstream {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    _stop: oneshot::Sender<()>,
}

impl Upstream {
    pub async fn start<F, Fut>(handler: F) -> Self
    where
        F: Fn(Seen, usize) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response<Body>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&seen);
        let router = Router::new().fallback(move |request: Request| {
            let (handler, recorded) = (Arc::clone(&handler), Arc::clone(&recorded));
            async move {
                let (parts, body) = request.into_parts();
                let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
                let request = Seen {
                    method: parts.method,
                    uri: parts.uri.to_string(),
                    headers: parts.headers,
                    body,
                };
                let index = {
                    let mut recorded = recorded.lock().unwrap();
                    recorded.push(request.clone());
                    recorded.len() - 1
                };
                handler(request, index).await
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await
        });
        Self {
            addr,
            seen,
            _stop: stop,
        }
    }

    /// An upstream answering every request with `response(request, index)`.
    pub async fn replying<F>(response: F) -> Self
    where
        F: Fn(&Seen, usize) -> Response<Body> + Send + Sync + 'static,
    {
        let response = Arc::new(response);
        Self::start(move |seen, index| {
            let response = Arc::clone(&response);
            async move { response(&seen, index) }
        })
        .await
    }

    /// `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request so far, in arrival order.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// A response with a JSON body.
pub fn json_response(status: u16, body: &Value) -> Response<Body> {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = StatusCode::from_u16(status).unwrap();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A non-streamed Anthropic answer saying `text`.
pub fn anthropic_message(text: &str) -> Value {
    json!({
        "id": "msg_upstream_1",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": {"input_tokens": 12, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 3}
    })
}

/// One SSE event, as a provider frames it.
pub fn sse_event(event: &str, data: &Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

/// The first events of a streamed Anthropic answer: `message_start` and one text block
/// with `text` (no `message_stop`).
pub fn anthropic_stream_head(text: &str) -> Vec<String> {
    vec![
        sse_event(
            "message_start",
            &json!({"type": "message_start", "message": {
                "id": "msg_stream_1", "type": "message", "role": "assistant", "model": MODEL,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 20, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1}}}),
        ),
        sse_event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        sse_event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        ),
    ]
}

/// A `text/event-stream` response with `body`.
pub fn sse_response(body: impl Into<Body>) -> Response<Body> {
    let mut response = Response::new(body.into());
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    response
}

/// The events of an SSE body: (event name, data parsed as JSON, or as a JSON string when
/// it is not JSON, like OpenAI's `[DONE]`).
pub fn sse_events(body: &[u8]) -> Vec<(Option<String>, Value)> {
    let mut decoder = SseDecoder::new();
    let events = decoder.push(body).unwrap();
    decoder.finish().unwrap();
    events
        .into_iter()
        .map(|event| {
            let data = serde_json::from_str(&event.data).unwrap_or(Value::String(event.data));
            (event.event, data)
        })
        .collect()
}

/// A client that talks to the proxy directly (never through an environment proxy) and
/// leaves bodies as they arrive.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// What a client got back.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|error| {
            panic!(
                "reply is not JSON ({error}): {} {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Sends `body` with `headers` to `url` and reads the whole reply.
pub async fn send(
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: impl Into<reqwest::Body>,
) -> Reply {
    let mut request = client().request(method, url).body(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.bytes().await.unwrap();
    Reply {
        status,
        headers,
        body,
    }
}

/// POSTs JSON to `path` on the proxy.
pub async fn post(proxy: &Proxy, path: &str, headers: &[(&str, &str)], body: &Value) -> Reply {
    let mut all = vec![("content-type", "application/json")];
    all.extend_from_slice(headers);
    send(Method::POST, &proxy.url(path), &all, body.to_string()).await
}

/// An Anthropic Messages request with a short system prompt and no tools.
pub fn anthropic_request(messages: &[Value]) -> Value {
    json!({
        "model": MODEL,
        "max_tokens": 1024,
        "system": "You are a careful coding agent.",
        "messages": messages,
    })
}

pub fn user(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}]})
}

pub fn assistant(text: &str) -> Value {
    json!({"role": "assistant", "content": [{"type": "text", "text": text}]})
}

/// Every `cache_control` marker in a JSON value.
pub fn cache_markers(value: &Value) -> usize {
    match value {
        Value::Object(map) => map
            .iter()
            .map(|(key, inner)| usize::from(key == "cache_control") + cache_markers(inner))
            .sum(),
        Value::Array(items) => items.iter().map(cache_markers).sum(),
        _ => 0,
    }
}

/// The texts of every `text` block of an Anthropic request's messages, tool results
/// included, in order.
pub fn message_texts(request: &Value) -> Vec<String> {
    fn collect(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if map.get("type").and_then(Value::as_str) == Some("text")
                    && let Some(text) = map.get("text").and_then(Value::as_str)
                {
                    out.push(text.to_owned());
                }
                map.values().for_each(|inner| collect(inner, out));
            }
            Value::Array(items) => items.iter().for_each(|inner| collect(inner, out)),
            Value::String(text) => out.push(text.clone()),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for message in request["messages"].as_array().into_iter().flatten() {
        match &message["content"] {
            Value::String(text) => out.push(text.clone()),
            content => collect(content, &mut out),
        }
    }
    out
}

/// Counts a token per four bytes: cheap and deterministic, for the simulator.
pub struct QuarterBytes;

impl CountTokens for QuarterBytes {
    fn count_tokens(&self, text: &str) -> u64 {
        text.len().div_ceil(4) as u64
    }
}

/// A simulator playing `script` (JSON), with a context window of `window` tokens if given.
pub async fn sim(script: &Value, window: Option<u64>) -> SimServer {
    let script = mc_sim::script::Script::parse(&script.to_string(), "test script").unwrap();
    let mut config = SimConfig::new(Responder::Script(script)).with_counter(Arc::new(QuarterBytes));
    if let Some(window) = window {
        config = config.with_window(window);
    }
    SimServer::bind("127.0.0.1:0".parse().unwrap(), config)
        .await
        .unwrap()
}

/// What a tap relayed: the sim's status and exact body bytes, per call.
pub type Relayed = Arc<Mutex<Vec<(u16, Bytes)>>>;

/// An upstream that relays every request to `target` (headers and body as received) and
/// returns the target's answer byte for byte, recording both ways.
pub async fn tap(target: SocketAddr) -> (Upstream, Relayed) {
    let relayed: Relayed = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&relayed);
    let upstream = Upstream::start(move |seen, _| {
        let log = Arc::clone(&log);
        async move {
            let mut request = client()
                .request(seen.method.clone(), format!("http://{target}{}", seen.uri))
                .body(seen.body.clone());
            for (name, value) in &seen.headers {
                if name != header::HOST && name != header::CONTENT_LENGTH {
                    request = request.header(name, value);
                }
            }
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            let body = response.bytes().await.unwrap();
            log.lock().unwrap().push((status, body.clone()));
            let mut out = Response::new(Body::from(body));
            *out.status_mut() = StatusCode::from_u16(status).unwrap();
            for name in [header::CONTENT_TYPE, HeaderName::from_static("request-id")] {
                if let Some(value) = headers.get(&name) {
                    out.headers_mut().insert(name, value.clone());
                }
            }
            out
        }
    })
    .await;
    (upstream, relayed)
}

/// The log of every test in this binary from the first call on, captured at `trace` as
/// `magic-context serve --log-level trace` writes it, with the records of the crates that
/// log through `log` rather than `tracing` (reqwest) added. The subscriber is process-global
/// so lines from the blocking pool and spawned tasks are caught too.
pub fn log_buffer() -> Arc<Mutex<Vec<u8>>> {
    static BUFFER: std::sync::OnceLock<Arc<Mutex<Vec<u8>>>> = std::sync::OnceLock::new();
    Arc::clone(BUFFER.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let writer = Captured(Arc::clone(&buffer));
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(writer)
            .with_ansi(false)
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
        static BRIDGE: LogBridge = LogBridge;
        log::set_logger(&BRIDGE).unwrap();
        log::set_max_level(log::LevelFilter::Trace);
        buffer
    }))
}

/// Writes `log` records into the captured log, one line each, target included.
struct LogBridge;

impl log::Log for LogBridge {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        let line = format!(
            "{} {}: {}\n",
            record.level(),
            record.target(),
            record.args()
        );
        log_buffer()
            .lock()
            .unwrap()
            .extend_from_slice(line.as_bytes());
    }

    fn flush(&self) {}
}

#[derive(Clone)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Self;

    fn make_writer(&'a self) -> Self {
        self.clone()
    }
}

/// A loopback URL nothing listens on (a port bound, then released).
pub fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}
