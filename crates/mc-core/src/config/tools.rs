//! How the agent tools (`ctx_reduce`, `ctx_expand`, `ctx_note`, `ctx_memory`, `ctx_search`)
//! reach the model (DESIGN §6).

use serde::Serialize;

use super::units::Bounds;

/// Who offers the agent tools to the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolsMode {
    /// Chosen per client: `mcp` for Claude Code and Codex, whose setup registers `magic-context
    /// mcp` (offering the tools a second time in the proxy would show the model two copies;
    /// Codex may also hide MCP tools behind its tool search, where the proxy cannot see
    /// them), and for a client whose tool list already shows our MCP server; `proxy` for
    /// every other client, which has no MCP server of ours.
    #[default]
    Auto,
    /// The MCP server offers them; the proxy adds nothing.
    Mcp,
    /// The proxy adds them to each request and runs the calls itself, out of the client's
    /// sight.
    Proxy,
    /// Nobody offers them through the proxy; requests go up with the client's tools only.
    Off,
}

/// The agent tools' section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolsConfig {
    /// Who offers the tools; `auto` picks per client.
    pub mode: ToolsMode,
    /// Days an exchange the proxy ran for its own tools is kept after a request last put it
    /// back. Such exchanges are stored per conversation, not per session, so nothing else
    /// ends them; 30 days outlives any pause in a conversation someone still continues, and
    /// a conversation continued later still works (its request forks from the stored
    /// history instead of carrying calls without results).
    pub hidden_exchange_max_age_days: u32,
}

impl ToolsConfig {
    /// Accepted range of [`Self::hidden_exchange_max_age_days`]: at least a day, at most
    /// ten years.
    pub const HIDDEN_EXCHANGE_MAX_AGE_DAYS: Bounds = Bounds::count(1, 3650, "days");

    /// The unix time (ms) before which an exchange last used at `now_ms` or earlier counts
    /// as unused for too long.
    pub fn hidden_exchange_cutoff_ms(&self, now_ms: i64) -> i64 {
        const DAY_MS: i64 = 24 * 60 * 60 * 1000;
        now_ms.saturating_sub(i64::from(self.hidden_exchange_max_age_days).saturating_mul(DAY_MS))
    }
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            mode: ToolsMode::default(),
            hidden_exchange_max_age_days: 30,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cutoff_is_the_age_before_now() {
        let config = ToolsConfig {
            hidden_exchange_max_age_days: 2,
            ..ToolsConfig::default()
        };
        let now_ms = 10 * 24 * 60 * 60 * 1000;
        assert_eq!(
            config.hidden_exchange_cutoff_ms(now_ms),
            8 * 24 * 60 * 60 * 1000
        );
        assert_eq!(config.hidden_exchange_cutoff_ms(i64::MIN), i64::MIN);
    }
}
