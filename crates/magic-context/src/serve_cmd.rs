//! `magic-context serve`: the proxy agents point their base URL at.
//!
//! Reads the user config file (the proxy serves many projects, so project files do not
//! apply to it), lets flags override it, opens the store and serves until Ctrl-C or
//! SIGTERM. Logs one line on stderr once it listens, with the real address (port 0 picks a
//! free one) and the store's path, so scripts and tests can read where to connect.

use std::io::{self, Write};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use mc_config::{ConfigSources, load};
use mc_core::config::{Config, upstream_url_problem};
use mc_engine::{Engine, TeamLink};
use mc_proxy::{ProxySettings, RetryPolicy, RunningProxy, ServeError};
use mc_store::{LocationEnv, Platform, Store, StoreOptions, resolve_data_dir};

use crate::proxy_probe::{Listener, probe};
use crate::team_link::{start_team_sync, team_link};
use crate::workspace_members::configured_workspaces;

/// How long an upstream may stay silent before a call is abandoned, in seconds: long
/// enough for a slow model's first token on a large prompt.
pub const DEFAULT_UPSTREAM_TIMEOUT_SECS: u64 = 600;

/// Arguments of `serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on [default: proxy.listen, 127.0.0.1:4141]; port 0 picks a free one.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,

    /// Anthropic API base URL [default: proxy.upstream_anthropic].
    #[arg(long, value_name = "URL")]
    pub upstream_anthropic: Option<String>,

    /// OpenAI API base URL [default: proxy.upstream_openai].
    #[arg(long, value_name = "URL")]
    pub upstream_openai: Option<String>,

    /// Overrides every model's context window, in tokens (for models the proxy does not
    /// know, or a deliberately small window).
    #[arg(long, value_name = "TOKENS")]
    pub context_window: Option<u64>,

    /// Seconds the upstream may stay silent before a call is abandoned.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_UPSTREAM_TIMEOUT_SECS)]
    pub upstream_timeout: u64,
}

/// Serves until Ctrl-C or SIGTERM.
pub fn run(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    crate::malloc_arenas::use_one_arena();
    let loaded = load(&ConfigSources::discover(None));
    for diagnostic in &loaded.diagnostics {
        tracing::warn!("config: {diagnostic}");
    }
    let settings = proxy_settings(args, &loaded.config)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let team = team_link(&loaded.config, runtime.handle());
    let (engine, store_path) = open_engine(&loaded.config, team.as_ref());
    if let Err(reason) = &engine {
        tracing::error!(%reason, "the store cannot be opened; managed calls are refused until it can");
    }
    let config = loaded.config.clone();
    let reopen_team = team.clone();
    let reopen: mc_proxy::Reopen = Box::new(move || open_engine(&config, reopen_team.as_ref()).0);
    runtime.block_on(async {
        if let Some(link) = &team {
            start_team_sync(link);
        }
        serve(settings, engine, reopen, &store_path).await
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The address `proxy.listen` names, which `serve` binds and `run` looks at first.
pub fn configured_listen(config: &Config) -> anyhow::Result<SocketAddr> {
    let listen = &config.proxy.listen;
    listen
        .parse()
        .with_context(|| format!("proxy.listen `{listen}` is not an IP address and port"))
}

/// The proxy's settings: the config file's values with the flags of `args` over them.
pub fn proxy_settings(args: &ServeArgs, config: &Config) -> anyhow::Result<ProxySettings> {
    let proxy = &config.proxy;
    let listen = match args.listen {
        Some(listen) => listen,
        None => configured_listen(config)?,
    };
    let upstream_anthropic = args
        .upstream_anthropic
        .clone()
        .unwrap_or_else(|| proxy.upstream_anthropic.clone());
    let upstream_openai = args
        .upstream_openai
        .clone()
        .unwrap_or_else(|| proxy.upstream_openai.clone());
    for url in [&upstream_anthropic, &upstream_openai] {
        if let Some(problem) = upstream_url_problem(url) {
            bail!("upstream URL: {problem}");
        }
    }
    if !listen.ip().is_loopback() {
        tracing::warn!(
            %listen,
            "listening beyond loopback: anyone who can reach this address can use the proxy and see the traffic that passes through it"
        );
    }
    if args.context_window == Some(0) {
        bail!("--context-window must be a positive number of tokens");
    }
    Ok(ProxySettings {
        listen,
        upstream_anthropic,
        upstream_openai,
        max_request_bytes: usize::try_from(proxy.max_request_bytes).unwrap_or(usize::MAX),
        context_window: args.context_window,
        upstream_idle_timeout: Duration::from_secs(args.upstream_timeout.max(1)),
        historian_retry: RetryPolicy::default(),
        cache_budget: mc_proxy::CacheBudget::new(config.proxy.cache_budget_bytes()),
        allowed_hosts: config.proxy.allowed_hosts.clone(),
        client_limits: mc_proxy::ClientLimits::default(),
        user_config: ConfigSources::discover(None).user,
    })
}

/// The engine over the default store, or why it cannot be opened: the proxy still starts
/// and refuses managed calls with that reason, so the agent shows the user what is wrong,
/// and opens it again when a later call comes. With `team`, project knowledge lives in the
/// team store.
pub fn open_engine(
    config: &Config,
    team: Option<&Arc<TeamLink>>,
) -> (Result<Engine, String>, String) {
    let location = match resolve_data_dir(&LocationEnv::from_process(), Platform::current()) {
        Ok(location) => location,
        Err(error) => return (Err(error.to_string()), "(no data directory)".to_owned()),
    };
    let path = location.db_path().display().to_string();
    match Store::open_location(&location, StoreOptions::default()) {
        Ok(store) => {
            let budget = mc_proxy::CacheBudget::new(config.proxy.cache_budget_bytes());
            let engine = Engine::new(store, config.clone())
                .with_cache_budget(budget)
                .with_workspaces(configured_workspaces(config));
            let engine = match team {
                Some(link) => engine.with_team_store(Arc::clone(link)),
                None => engine,
            };
            (Ok(engine), path)
        }
        Err(error) => (Err(format!("{error} ({path})")), path),
    }
}

async fn serve(
    settings: ProxySettings,
    engine: Result<Engine, String>,
    reopen: mc_proxy::Reopen,
    store_path: &str,
) -> anyhow::Result<()> {
    let managed = if engine.is_ok() {
        ""
    } else {
        " (store unavailable: managed calls refused until it opens)"
    };
    let proxy = match RunningProxy::start_reopening(settings, engine, Some(reopen)).await {
        Ok(proxy) => proxy,
        Err(ServeError::Bind { addr, source }) => {
            // The probe blocks briefly on its socket.
            let problem = tokio::task::spawn_blocking(move || listen_problem(addr, &source))
                .await
                .context("cannot check what holds the address")?;
            bail!(problem)
        }
        Err(error) => return Err(error.into()),
    };
    writeln!(
        io::stderr().lock(),
        "magic-context listening on http://{} with store {store_path}{managed}",
        proxy.local_addr()
    )?;
    shutdown_signal().await;
    proxy.shutdown().await;
    Ok(())
}

/// Why `serve` cannot listen on `addr`, said once (the OS error is not repeated as a cause)
/// with what to do: a proxy of ours already there is named as such, since starting a second
/// one is the usual mistake.
fn listen_problem(addr: SocketAddr, source: &io::Error) -> String {
    let elsewhere = "choose another address with --listen ADDR (or proxy.listen in the config)";
    match source.kind() {
        io::ErrorKind::AddrInUse => match probe(addr) {
            Listener::MagicContext { .. } => format!(
                "a magic-context proxy already listens on {addr}; point agents at it, or {elsewhere}"
            ),
            Listener::Other | Listener::Nothing => format!(
                "cannot listen on {addr}: another program holds the port ({source}); stop it, or {elsewhere}"
            ),
        },
        _ => format!("cannot listen on {addr}: {source}; {elsewhere}"),
    }
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
