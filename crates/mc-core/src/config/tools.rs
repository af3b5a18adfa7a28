//! How the agent tools (`ctx_reduce`, `ctx_expand`, `ctx_note`, `ctx_memory`, `ctx_search`)
//! reach the model (DESIGN §6).

use serde::Serialize;

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
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ToolsConfig {
    /// Who offers the tools; `auto` picks per client.
    pub mode: ToolsMode,
}
