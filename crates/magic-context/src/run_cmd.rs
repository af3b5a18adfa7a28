//! `magic-context run -- <agent> [args…]`: the agent, pointed at a proxy, in one command.
//!
//! A proxy already listening at the configured address (or `--port`) is used as it is;
//! otherwise one is started inside this process, on a free loopback port unless `--port`
//! names one (or the agent reads the address from its own config, as Pi does: then at the
//! configured address), with the user's config and store, and it stops when the agent exits. A proxy
//! `run` did not start is never stopped. Whatever can be checked before the agent starts is
//! (the agent on PATH, the port, the store), so a mistake shows as one clear line rather
//! than as an agent failing its first model call; a provider that cannot be reached is said
//! once too, but the agent starts anyway (it may be about to work offline, or the network may
//! come back).
//!
//! Once the agent runs, the terminal is the agent's: the proxy logs to a file
//! ([`crate::run_log`]) whose path is said before the start, and the only line of ours that
//! can follow is a fatal error.

use std::ffi::OsString;
use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use mc_config::{ConfigSources, load};
use mc_core::config::Config;
use mc_proxy::{RunningProxy, ServeError};

use crate::agent_launch::{Launch, Wire, launch_for, reads_url_from_own_config};
use crate::agent_process::{NOT_FOUND_EXIT, find_program, report, run_agent};
use crate::cli::LogLevel;
use crate::proxy_probe::{Listener, probe};
use crate::run_log;
use crate::serve_cmd::{
    DEFAULT_UPSTREAM_TIMEOUT_SECS, ServeArgs, configured_listen, open_engine, proxy_settings,
};
use crate::team_link::{start_team_sync, team_link};
use crate::upstream_reach::{REACH_DEADLINE, Upstream, unreachable};

/// How long a proxy `run` started may take to finish in-flight calls once the agent is gone.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Arguments of `run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Loopback port of the proxy: used when one listens there, else a proxy is started on
    /// it [default: use the one at proxy.listen, else start one on a free port].
    #[arg(long, value_name = "PORT")]
    pub port: Option<u16>,

    /// The wire an unknown agent speaks, so it gets only that wire's base-URL variable
    /// [default: known by the program name (claude, codex, opencode, pi); both variables for
    /// any other].
    #[arg(long, value_enum)]
    pub wire: Option<Wire>,

    /// The agent and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "AGENT")]
    pub agent: Vec<OsString>,
}

/// Runs the agent through a proxy and exits with the agent's code.
pub fn run(args: &RunArgs, log_level: Option<LogLevel>) -> anyhow::Result<ExitCode> {
    // The proxy this may start holds long sessions' bodies as `serve` does (the agent gets
    // its own allocator settings back).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    crate::malloc_arenas::use_one_arena();
    let log = run_log::install(log_level);
    let Some((program, agent_args)) = args.agent.split_first() else {
        bail!("name the agent to run after `--`, e.g. `magic-context run -- claude`");
    };
    let Some(resolved) = find_program(program, std::env::var_os("PATH").as_deref()) else {
        report(&format!(
            "`{}` was not found on PATH; install the agent or give its path",
            program.to_string_lossy()
        ));
        return Ok(ExitCode::from(NOT_FOUND_EXIT));
    };
    let loaded = load(&ConfigSources::discover(None));
    for diagnostic in &loaded.diagnostics {
        report(&format!("config: {diagnostic}"));
    }
    let wanted = match args.port {
        Some(port) => SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
        None => configured_listen(&loaded.config)?,
    };
    // Probed before the runtime starts: the probe blocks (briefly) on its socket.
    let found = probe(wanted);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let proxy = match found {
            Listener::MagicContext { store_ok: true, .. } => Proxy::Existing(wanted),
            Listener::MagicContext {
                store_ok: false, ..
            } => bail!(
                "the proxy at {wanted} cannot open its store and refuses managed calls; see `magic-context doctor`"
            ),
            Listener::Other if args.port.is_some() => bail!(
                "port {} is in use by another program; choose another with --port, or leave it out for a free port",
                wanted.port()
            ),
            Listener::Nothing if reads_url_from_own_config(&resolved) => {
                Proxy::Started(start_proxy(&loaded.config, wanted).await?)
            }
            Listener::Other | Listener::Nothing => {
                let port = args.port.unwrap_or(0);
                let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
                Proxy::Started(start_proxy(&loaded.config, listen).await?)
            }
        };
        let base_url = format!("http://{}", proxy.addr());
        let log_note = match &log {
            Ok(path) => format!("log in {}", path.display()),
            Err(problem) => problem.clone(),
        };
        match &proxy {
            Proxy::Existing(_) => {
                tracing::info!(%base_url, "using the proxy already listening");
                report(&format!(
                    "using the proxy already listening on {base_url}; {log_note}"
                ));
            }
            Proxy::Started(_) => {
                tracing::info!(%base_url, "started a proxy for the agent");
                report(&format!("proxy on {base_url}, {log_note}"));
            }
        }
        let launch = launch_for(
            &resolved,
            args.wire,
            &base_url,
            !loaded.config.compaction.enabled,
        );
        if let Proxy::Started(_) = proxy {
            // Its upstreams are the config's; the check blocks (briefly) on its sockets.
            let upstreams = upstreams_of(&launch, &loaded.config);
            let warnings =
                tokio::task::spawn_blocking(move || unreachable(&upstreams, REACH_DEADLINE))
                    .await
                    .unwrap_or_default();
            for warning in warnings {
                report(&warning);
            }
        }
        if let Some(note) = launch.note {
            report(note);
        }
        let mut all_args = launch.leading_args.clone();
        all_args.extend(agent_args.iter().cloned());
        let code = run_agent(&resolved, &all_args, &launch.env).await;
        if let Proxy::Started(started) = proxy
            && tokio::time::timeout(SHUTDOWN_GRACE, started.shutdown())
                .await
                .is_err()
        {
            tracing::warn!("the proxy did not finish its calls in time; stopping anyway");
        }
        code
    })
}

/// The upstreams the agent's calls go to through a proxy started with `config`: those of the
/// base-URL variables the agent gets (both for an agent whose wire is unknown).
fn upstreams_of(launch: &Launch, config: &Config) -> Vec<Upstream> {
    let gets = |variable: &str| launch.env.iter().any(|(name, _)| *name == variable);
    let mut upstreams = Vec::new();
    if gets("ANTHROPIC_BASE_URL") {
        upstreams.push(Upstream {
            wire: "Anthropic",
            url: config.proxy.upstream_anthropic.clone(),
        });
    }
    if gets("OPENAI_BASE_URL") {
        upstreams.push(Upstream {
            wire: "OpenAI",
            url: config.proxy.upstream_openai.clone(),
        });
    }
    upstreams
}

/// The proxy the agent talks to.
enum Proxy {
    /// One that was already listening: left running.
    Existing(SocketAddr),
    /// One this command started: stopped when the agent exits.
    Started(RunningProxy),
}

impl Proxy {
    fn addr(&self) -> SocketAddr {
        match self {
            Self::Existing(addr) => *addr,
            Self::Started(proxy) => proxy.local_addr(),
        }
    }
}

/// Starts a proxy on `listen` (port 0: a free one) over the user's store; refuses when the
/// store cannot be opened, since every managed call would then be refused.
async fn start_proxy(config: &Config, listen: SocketAddr) -> anyhow::Result<RunningProxy> {
    let serve_args = ServeArgs {
        listen: Some(listen),
        upstream_anthropic: None,
        upstream_openai: None,
        context_window: None,
        upstream_timeout: DEFAULT_UPSTREAM_TIMEOUT_SECS,
    };
    let settings = proxy_settings(&serve_args, config)?;
    let team = team_link(config, &tokio::runtime::Handle::current());
    if let Some(link) = &team {
        start_team_sync(link);
    }
    let (engine, store_path) = open_engine(config, team.as_ref());
    let engine = match engine {
        Ok(engine) => engine,
        Err(reason) => bail!(
            "cannot open the store ({reason}); the agent would have every call refused. See `magic-context doctor` (store: {store_path})"
        ),
    };
    match RunningProxy::start(settings, Ok(engine)).await {
        Ok(proxy) => Ok(proxy),
        Err(ServeError::Bind { addr, source })
            if source.kind() == std::io::ErrorKind::AddrInUse =>
        {
            bail!(
                "port {} is in use by another program; choose another with --port, or leave it out for a free port",
                addr.port()
            )
        }
        Err(error) => Err(error.into()),
    }
}
