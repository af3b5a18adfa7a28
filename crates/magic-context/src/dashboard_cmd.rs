//! `magic-context dashboard`: prints the URL that logs a browser in to the dashboard of the
//! proxy (`serve`, or `run`'s own).
//!
//! With a proxy listening and a browser on this machine ([`crate::browser_open`]), the page
//! is opened too (`--no-open` only prints).
//!
//! The URL carries the access token from the data directory, where the proxy reads it too
//! (created here, 0600, when neither side has yet), so only someone who can read the store
//! can open the pages. The address is the proxy's loopback address: the dashboard answers
//! no other. Whether a proxy listens there is said on stderr, never in the URL's line, so
//! `$(magic-context dashboard)` stays a URL.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use mc_config::{ConfigSources, load};
use mc_store::{LocationEnv, Platform, Store, StoreOptions, resolve_data_dir};
use serde_json::json;

use crate::output::{pretty, write_stdout};
use crate::proxy_probe::{Listener, probe};
use crate::serve_cmd::configured_listen;

/// Arguments of `dashboard`.
#[derive(Debug, Args)]
pub struct DashboardArgs {
    /// Loopback port of the proxy [default: the port of proxy.listen].
    #[arg(long)]
    pub port: Option<u16>,

    /// Print one JSON object: {"url", "proxy"} (`proxy`: "listening", "not_listening",
    /// "store_unavailable" or "other_program"); opens nothing.
    #[arg(long)]
    pub json: bool,

    /// Only print the URL, even where a browser could open it.
    #[arg(long)]
    pub no_open: bool,
}

/// Prints the login URL.
pub fn run(args: &DashboardArgs) -> anyhow::Result<ExitCode> {
    let loaded = load(&ConfigSources::discover(None));
    for diagnostic in &loaded.diagnostics {
        tracing::warn!("config: {diagnostic}");
    }
    let listen = match args.port {
        Some(port) => SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
        None => configured_listen(&loaded.config)?,
    };
    let addr = loopback_address(listen)?;
    let location = resolve_data_dir(&LocationEnv::from_process(), Platform::current())
        .context("cannot find the data directory")?;
    if !location.db_path().exists() {
        // The store makes the data directory (0700) on first use; the token lives beside it.
        Store::open_location(&location, StoreOptions::default())
            .with_context(|| format!("cannot create the store {}", location.db_path().display()))?;
    }
    let token = mc_proxy::load_or_create(&location.dir)?;
    let url = mc_proxy::login_url(addr, &token);
    let (proxy, warning) = match probe(addr) {
        Listener::MagicContext { store_ok: true, .. } => ("listening", None),
        Listener::MagicContext {
            store_ok: false, ..
        } => (
            "store_unavailable",
            Some(format!(
                "the proxy at {addr} cannot open its store, so the dashboard cannot show it; \
                 see `magic-context doctor`"
            )),
        ),
        Listener::Other => (
            "other_program",
            Some(format!(
                "another program, not magic-context, listens at {addr}"
            )),
        ),
        Listener::Nothing => (
            "not_listening",
            Some(format!(
                "no proxy listens at {addr} yet: start one with `magic-context serve` (or \
                 `magic-context run`), then open the URL"
            )),
        ),
    };
    if args.json {
        write_stdout(&pretty(&json!({"url": url, "proxy": proxy}))?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(warning) = &warning {
        tracing::warn!("{warning}");
    }
    write_stdout(&format!("{url}\n"))?;
    if warning.is_none() && !args.no_open {
        match crate::browser_open::open(&url) {
            Ok(Some(browser)) => eprintln!("opened in {browser}"),
            Ok(None) => {}
            Err(error) => tracing::warn!("could not start the browser ({error}); open the URL"),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The loopback address a browser on this machine reaches the proxy at: the listen address
/// itself, or loopback when the proxy listens on every interface. A proxy bound to another
/// interface only has no dashboard a browser here can open.
fn loopback_address(listen: SocketAddr) -> anyhow::Result<SocketAddr> {
    let ip = listen.ip();
    if ip.is_loopback() {
        return Ok(listen);
    }
    if ip.is_unspecified() {
        let loopback = match ip {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        };
        return Ok(SocketAddr::new(loopback, listen.port()));
    }
    bail!(
        "proxy.listen is {listen}, not a loopback address: the dashboard answers only on \
         loopback; listen on 127.0.0.1 (or 0.0.0.0) to open it"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_names_loopback() {
        let at = |text: &str| loopback_address(text.parse().unwrap()).map(|addr| addr.to_string());
        assert_eq!(at("127.0.0.1:4141").unwrap(), "127.0.0.1:4141");
        assert_eq!(at("0.0.0.0:4141").unwrap(), "127.0.0.1:4141");
        assert_eq!(at("[::]:4141").unwrap(), "[::1]:4141");
        assert_eq!(at("[::1]:80").unwrap(), "[::1]:80");
        assert!(at("192.168.1.7:4141").is_err());
    }
}
