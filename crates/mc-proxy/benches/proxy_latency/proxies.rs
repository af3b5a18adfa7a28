//! The proxies the bench measures: each over a fresh store, sending both wires to one
//! upstream.

use std::time::Duration;

use mc_core::config::{ToolsConfig, ToolsMode};
use mc_proxy::{ProxySettings, RunningProxy};

use super::{Result, WINDOW_TOKENS};

/// How a measured proxy manages its sessions.
#[derive(Debug, Clone, Copy)]
pub struct Managed {
    /// The agent tools' mode.
    pub tools: ToolsMode,
    /// The engine's compaction (`compaction.enabled`): off, the host manages the window and
    /// the client's body goes up with the head spliced in.
    pub compaction: bool,
}

impl Managed {
    /// The latency tables' proxy: compaction on, tools off.
    pub const TOOLS_OFF: Self = Self {
        tools: ToolsMode::Off,
        compaction: true,
    };

    /// The defaults: compaction on, the tools in their default mode.
    pub fn defaults() -> Self {
        Self {
            tools: ToolsConfig::default().mode,
            compaction: true,
        }
    }

    /// Compaction off, the tools in their default mode.
    pub fn compaction_off() -> Self {
        Self {
            compaction: false,
            ..Self::defaults()
        }
    }
}

/// A proxy over a fresh store in a temp dir (kept alive by the returned guard), sending
/// both wires to `upstream`. Every tag is protected: nothing is dropped, so the proxied body
/// is the client's (plus tags) and the pairs compare like with like. With drops, the first
/// pass of a long session lands reclaimed output and the upstream then handles a smaller
/// body than the direct call's. The latency tables turn the proxy's own tools off for the
/// same reason (they would add our tool definitions and guidance to every body); the
/// growing session compares both `tools` modes, and compaction off.
pub async fn start_proxy(
    upstream: &str,
    managed: Managed,
) -> Result<(RunningProxy, tempfile::TempDir)> {
    let store_dir = tempfile::tempdir()?;
    let store = mc_store::Store::open(store_dir.path().join("bench.db"))?;
    let mut config = mc_core::config::Config::default();
    config.reduction.protected_tags = u32::MAX;
    config.tools.mode = managed.tools;
    config.compaction.enabled = managed.compaction;
    let engine = mc_engine::Engine::new(store, config);
    let settings = ProxySettings {
        listen: "127.0.0.1:0".parse()?,
        upstream_anthropic: upstream.to_owned(),
        upstream_openai: upstream.to_owned(),
        max_request_bytes: 64 << 20,
        context_window: Some(WINDOW_TOKENS),
        upstream_idle_timeout: Duration::from_secs(120),
        historian_retry: mc_proxy::RetryPolicy::default(),
        cache_budget: mc_proxy::CacheBudget::default(),
        allowed_hosts: Vec::new(),
        client_limits: mc_proxy::ClientLimits::default(),
        user_config: None,
    };
    Ok((RunningProxy::start(settings, Ok(engine)).await?, store_dir))
}
