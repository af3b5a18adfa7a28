//! The simulated provider as an HTTP server that real clients cannot tell from the provider.
//!
//! Speaks the Anthropic Messages API (`POST /v1/messages`, streamed or not, and
//! `/v1/messages/count_tokens`), OpenAI Chat Completions (`POST /v1/chat/completions`) and
//! OpenAI Responses (`POST /v1/responses`),
//! prices every call with [`SimProvider`] (cache reads and writes, the window, the
//! provider's error bodies), and answers with a [`Responder`]: a [`Script`] or a recorded
//! session. A call that forces the historian's `record_history` tool is answered by the
//! simulated historian instead, one that forces the dreamer's `judge_memories` by the
//! simulated dreamer, or either fails as its [`HistorianMode`] says, without moving the
//! responder on. `GET /_sim/ledger` lists every call with its usage and cost; `GET /v1/models`
//! lists a few models.
//!
//! Time comes from a [`Clock`]: the wall clock for end-to-end runs, a [`crate::clock::SimClock`]
//! in tests, so a test steps past a 5-minute TTL without sleeping.
//!
//! ```no_run
//! use mc_sim::script::Script;
//! use mc_sim::server::{Responder, SimConfig, SimServer};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let script = Script::parse(r#"[{"content": [{"type": "text", "text": "hi"}]}]"#, "inline")?;
//! let config = SimConfig::new(Responder::Script(script));
//! let server = SimServer::bind("127.0.0.1:0".parse()?, config).await?;
//! let base_url = format!("http://{}", server.local_addr()); // point a client here
//! # let _ = base_url;
//! let calls = server.ledger();
//! # let _ = calls;
//! server.shutdown().await?;
//! # Ok(())
//! # }
//! ```

mod anthropic;
mod anthropic_stream;
mod body;
mod error;
mod historian;
mod ids;
mod openai;
mod openai_stream;
mod reply;
mod responder;
mod responses;
mod responses_stream;
mod routes;
mod state;

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

pub use error::{InvalidHistorianMode, ServerError};
use historian::BackgroundModes;
pub use historian::HistorianMode;
pub use responder::Responder;

use self::responder::Playing;
use self::state::{App, SimState};
use crate::clock::{Clock, WallClock};
#[cfg(doc)]
use crate::script::Script;
use crate::{CallRecord, CountTokens, O200kCounter, SimProvider, TokenScale};

/// How to run a simulated provider.
pub struct SimConfig {
    /// Who plays the model.
    pub responder: Responder,
    /// Where time comes from; the wall clock by default.
    pub clock: Arc<dyn Clock>,
    /// Overrides every model's context window, in tokens.
    pub window_tokens: Option<u64>,
    /// Counts tokens; o200k_base by default.
    pub counter: Option<Arc<dyn CountTokens + Send + Sync>>,
    /// Multiplies every count the provider makes (see [`TokenScale`]); 1 by default.
    pub token_scale: TokenScale,
    /// How calls that force the historian's `record_history` tool are answered; honestly by
    /// default.
    pub historian: HistorianMode,
    /// How calls that force the dreamer's `judge_memories` tool are answered; honestly by
    /// default.
    pub dreamer: HistorianMode,
    /// The `dreamer_step` inputs a scripted dreamer gives, one per agent-loop step, before
    /// the honest player takes over; empty by default.
    pub dreamer_steps: Vec<serde_json::Value>,
    /// Whether a streamed Responses request over the window is refused inside a `200` stream
    /// (`response.created`, `response.in_progress`, then `response.failed` whose error has
    /// code `context_length_exceeded`), as some Responses backends refuse it, instead of
    /// OpenAI's HTTP 400. Off by default.
    pub overflow_in_stream: bool,
}

impl std::fmt::Debug for SimConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimConfig")
            .field("responder", &self.responder)
            .field("clock", &self.clock)
            .field("window_tokens", &self.window_tokens)
            .field("counter", &self.counter.as_ref().map(|_| "custom"))
            .field("token_scale", &self.token_scale)
            .field("historian", &self.historian)
            .field("dreamer", &self.dreamer)
            .field("dreamer_steps", &self.dreamer_steps.len())
            .field("overflow_in_stream", &self.overflow_in_stream)
            .finish()
    }
}

impl SimConfig {
    /// A config with the wall clock, the models' own windows and the o200k counter.
    pub fn new(responder: Responder) -> Self {
        Self {
            responder,
            clock: Arc::new(WallClock),
            window_tokens: None,
            counter: None,
            token_scale: TokenScale::ONE,
            historian: HistorianMode::Honest,
            dreamer: HistorianMode::Honest,
            dreamer_steps: Vec::new(),
            overflow_in_stream: false,
        }
    }

    /// Uses `clock` (e.g. a shared [`crate::clock::SimClock`]).
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Overrides every model's context window.
    pub fn with_window(mut self, window_tokens: u64) -> Self {
        self.window_tokens = Some(window_tokens);
        self
    }

    /// Makes the provider count `token_scale` times what its calibration says, so a client's
    /// estimate and the reported usage disagree by a known factor.
    pub fn with_token_scale(mut self, token_scale: TokenScale) -> Self {
        self.token_scale = token_scale;
        self
    }

    /// Answers historian calls as `mode` says (e.g. overloaded, to test that the proxy's
    /// requests are served while its historian fails).
    pub fn with_historian(mut self, mode: HistorianMode) -> Self {
        self.historian = mode;
        self
    }

    /// Answers dreamer calls as `mode` says (e.g. garbage, to test that a confused model
    /// changes no memory).
    pub fn with_dreamer(mut self, mode: HistorianMode) -> Self {
        self.dreamer = mode;
        self
    }

    /// Answers the dreamer's agent-loop steps with `steps`, in order (each a `dreamer_step`
    /// input: `{"calls": [...]}`), then honestly: a scripted model driving the loop.
    pub fn with_dreamer_steps(mut self, steps: Vec<serde_json::Value>) -> Self {
        self.dreamer_steps = steps;
        self
    }

    /// Refuses a streamed Responses request over the window inside the stream, with a
    /// `response.failed` event (see [`Self::overflow_in_stream`]).
    pub fn with_overflow_in_stream(mut self) -> Self {
        self.overflow_in_stream = true;
        self
    }

    /// Counts tokens with `counter`.
    pub fn with_counter(mut self, counter: Arc<dyn CountTokens + Send + Sync>) -> Self {
        self.counter = Some(counter);
        self
    }
}

/// A running simulated provider.
///
/// Dropping it without [`SimServer::shutdown`] aborts the server task.
#[derive(Debug)]
pub struct SimServer {
    local_addr: SocketAddr,
    app: App,
    stop: Option<oneshot::Sender<()>>,
    /// Dropped when the server stops, which ends stalled calls.
    stopping: Option<watch::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl SimServer {
    /// Binds `addr` (port 0 picks a free port) and starts serving.
    pub async fn bind(addr: SocketAddr, config: SimConfig) -> Result<Self, ServerError> {
        let counter = match config.counter {
            Some(counter) => counter,
            // Loading the tables takes ~150 ms of CPU: off the runtime's threads.
            None => {
                let loaded = tokio::task::spawn_blocking(O200kCounter::load)
                    .await
                    .map_err(|source| ServerError::Task { source })??;
                Arc::new(loaded)
            }
        };
        let mut provider = SimProvider::new(counter).with_token_scale(config.token_scale);
        if let Some(window_tokens) = config.window_tokens {
            provider = provider.with_window(window_tokens);
        }
        let state = SimState {
            provider,
            playing: Playing::new(config.responder),
            background: BackgroundModes {
                historian: config.historian,
                dreamer: config.dreamer,
            },
            dreamer_steps: config.dreamer_steps.into(),
            overflow_in_stream: config.overflow_in_stream,
        };
        let (stopping, stopping_seen) = watch::channel(());
        let app = App::new(state, config.clock, stopping_seen);
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServerError::Bind { addr, source })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| ServerError::Bind { addr, source })?;
        let (stop, stopped) = oneshot::channel::<()>();
        let router = routes::router(app.clone());
        let task = tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(async move {
                    // A dropped sender also stops the server.
                    let _ = stopped.await;
                })
                .await
        });
        tracing::info!(%local_addr, "simulated provider listening");
        Ok(Self {
            local_addr,
            app,
            stop: Some(stop),
            stopping: Some(stopping),
            task: Some(task),
        })
    }

    /// The address it listens on, with the real port when bound to port 0.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Every call so far, in order.
    pub fn ledger(&self) -> Vec<CallRecord> {
        self.app.lock().provider.ledger().rows().to_vec()
    }

    /// Stops accepting connections, lets calls in flight finish (stalled calls end with an
    /// error), and waits for the server.
    pub async fn shutdown(mut self) -> Result<(), ServerError> {
        self.stopping.take();
        if let Some(stop) = self.stop.take() {
            // The server may already have stopped; then there is nobody to tell.
            let _ = stop.send(());
        }
        let Some(task) = self.task.take() else {
            return Ok(());
        };
        task.await
            .map_err(|source| ServerError::Task { source })?
            .map_err(|source| ServerError::Serve { source })
    }
}

impl Drop for SimServer {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}
