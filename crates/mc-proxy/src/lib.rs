//! The Magic Context proxy (`magic-context serve`).
//!
//! Agents point their provider base URL here. Model calls on the provider routes (Anthropic
//! `POST /v1/messages`, OpenAI `POST /v1/chat/completions` and `POST /v1/responses`) are
//! resolved to a session, run through the transform engine and sent upstream; the response
//! streams back to the client byte for byte while a copy is parsed for usage and the stop
//! reason. A Responses call that leans on history stored at the provider
//! (`previous_response_id`) cannot be rewritten and goes up as sent. `GET
//! /_magic-context/health` names the service, so tools can tell this proxy from another
//! server on the port. The dashboard ([`dashboard`]) answers under `/_magic-context/ui/` and
//! `/_magic-context/api/`, to this machine only and with its access token; no other path
//! under `/_magic-context/` is ever forwarded. Everything else (`count_tokens`,
//! `/v1/models`, unknown paths) is forwarded verbatim.
//!
//! ```no_run
//! # async fn run(engine: mc_engine::Engine) -> Result<(), Box<dyn std::error::Error>> {
//! use mc_proxy::{ProxySettings, RunningProxy};
//! let settings = ProxySettings {
//!     listen: "127.0.0.1:0".parse()?,
//!     upstream_anthropic: "https://api.anthropic.com".into(),
//!     upstream_openai: "https://api.openai.com".into(),
//!     max_request_bytes: 32 << 20,
//!     context_window: None,
//!     upstream_idle_timeout: std::time::Duration::from_secs(600),
//!     historian_retry: mc_proxy::RetryPolicy::default(),
//!     cache_budget: mc_proxy::CacheBudget::default(),
//!     allowed_hosts: Vec::new(),
//!     client_limits: mc_proxy::ClientLimits::default(),
//!     user_config: None,
//! };
//! let proxy = RunningProxy::start(settings, Ok(engine)).await?;
//! println!("ANTHROPIC_BASE_URL=http://{}", proxy.local_addr());
//! proxy.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod acceptance;
mod agent_tools;
mod app;
mod body_layout;
mod browser_guard;
mod call_in_flight;
mod chat_incremental;
mod chunked_body;
mod client_call;
mod client_connections;
mod client_request;
mod clock;
mod dashboard;
mod dreamer_credentials;
mod dreamer_start;
mod embedding_runtime;
mod embedding_start;
mod encoded_chat;
mod encoded_head;
mod encoded_list;
mod encoded_messages;
mod encoded_responses;
mod fixed_tokens;
mod forward;
mod git_history;
mod head_edits;
mod headers;
mod health;
mod historian_runtime;
mod historian_start;
mod host_managed_body;
mod last_good;
mod ledger;
mod ledger_writer;
mod list_writer;
mod managed;
mod overflow;
mod pass_decode;
mod pass_run;
mod pass_threads;
mod plan;
mod planned;
mod project;
mod project_docs;
mod provider;
mod render_anthropic;
mod render_openai;
mod render_responses;
mod reported_usage;
mod request_body;
mod responses_incremental;
mod retention;
mod router;
mod search_index_start;
mod session_resolve;
mod settings;
mod side_call;
mod sse_frame;
mod stated_directories;
mod store_slot;
mod stream_back;
mod stream_overflow;
mod subagent;
mod success_error;
mod tee;
mod tokens;
mod upstream;
mod usage;
mod usage_filter;
mod windows;
mod workspace_members;

use std::net::SocketAddr;
use std::sync::Arc;

use mc_engine::Engine;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use app::App;
/// The browser-request screening checked against its rules, for the fuzz targets in
/// `fuzz/`; not an API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub use browser_guard::check_screening;
/// The incremental Chat decoder checked against the full decoder, for the fuzz targets in
/// `fuzz/`; not an API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub use chat_incremental::check_chat_against_full;
pub use client_connections::ClientLimits;
pub use dashboard::access_token::{AccessToken, TOKEN_FILE, TokenError, load_or_create};
pub use dashboard::{TOKEN_HEADER, login_url};
pub use git_history::{MAX_COMMITS, read_commits};
pub use health::{HEALTH_PATH, SERVICE_NAME};
pub use mc_engine::CacheBudget;
pub use mc_llm::RetryPolicy;
/// The incremental follow-up decoder checked against the full decoder, for the fuzz
/// targets in `fuzz/`; not an API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub use mc_wire::anthropic_incremental::check_against_full;
pub use overflow::{Overflow, parse_overflow};
pub use project::{PROJECT_HEADER, identify as identify_project};
pub use provider::{ErrorKind, Provider, ProxyError};
/// The incremental Responses decoder checked against the full decoder, for the fuzz targets
/// in `fuzz/`; not an API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub use responses_incremental::check_responses_against_full;
pub use router::router;
pub use session_resolve::SESSION_HEADER;
pub use settings::ProxySettings;
pub use side_call::STATEFUL_RESPONSES_ROUTE;
pub use store_slot::{OPEN_WAIT, Reopen};
pub use tokens::TokenEstimator;
pub use workspace_members::{UnknownMember, identify_workspaces};

/// Why the proxy could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The HTTP client could not be built (TLS roots unavailable).
    #[error("cannot build the upstream HTTP client: {0}")]
    Client(#[from] reqwest::Error),
}

/// A proxy serving on a bound socket.
pub struct RunningProxy {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
    /// The daily prune of expired sessions ([`retention`]).
    retention: JoinHandle<()>,
    /// The dreamer's scheduler ([`dreamer_start`]), when it runs.
    dreamer: Option<JoinHandle<()>>,
}

impl RunningProxy {
    /// Binds `settings.listen` and serves until [`Self::shutdown`]; `engine` is the engine
    /// over the store, or why the store could not be opened (managed calls are then
    /// refused).
    pub async fn start(
        settings: ProxySettings,
        engine: Result<Engine, String>,
    ) -> Result<Self, ServeError> {
        Self::start_reopening(settings, engine, None).await
    }

    /// Like [`Self::start`]; while the store is not open, a managed call first tries
    /// `reopen` (at most one attempt at a time, waited for at most [`OPEN_WAIT`]), so the
    /// proxy serves again once what kept the store closed (a lock, a full disk) is gone.
    pub async fn start_reopening(
        settings: ProxySettings,
        engine: Result<Engine, String>,
        reopen: Option<Reopen>,
    ) -> Result<Self, ServeError> {
        let listener = tokio::net::TcpListener::bind(settings.listen)
            .await
            .map_err(|source| ServeError::Bind {
                addr: settings.listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| ServeError::Bind {
            addr: settings.listen,
            source,
        })?;
        let limits = settings.client_limits;
        let app = Arc::new(App::new(settings, engine, reopen)?);
        let retention = retention::start(&app);
        let dreamer = dreamer_start::start(&app);
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(client_connections::serve(
            listener,
            router(app),
            limits,
            stopped,
        ));
        Ok(Self {
            addr,
            stop: Some(stop),
            task,
            retention,
            dreamer,
        })
    }

    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, lets in-flight calls finish, and waits.
    pub async fn shutdown(mut self) {
        self.retention.abort();
        if let Some(dreamer) = &self.dreamer {
            dreamer.abort();
        }
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }

    /// Serves until the server stops on its own (an I/O error).
    pub async fn wait(self) -> std::io::Result<()> {
        let result = self.task.await;
        self.retention.abort();
        if let Some(dreamer) = &self.dreamer {
            dreamer.abort();
        }
        match result {
            Ok(result) => result,
            Err(error) => Err(std::io::Error::other(error)),
        }
    }
}
