//! Which tools are ours: the five the proxy adds to a request, and how a client's tool list
//! shows it already has them from our MCP server.

use mc_engine::tools::{ToolSpec, offer};

/// Every tool of ours, whichever a client is offered: a call to any of them is ours.
fn all() -> &'static [ToolSpec] {
    offer(true).specs
}

/// Whether `name` is one of our tools.
pub fn is_ours(name: &str) -> bool {
    all().iter().any(|spec| spec.name == name)
}

/// Whether a client's tool list already offers our tools: under their own names, or under
/// the names hosts give an MCP server's tools (`mcp__magic-context__ctx_search` in Claude
/// Code and Codex, `magic-context_ctx_search` in OpenCode). Such a client has our MCP
/// server, so the proxy adds nothing: the model would see every tool twice, and a tool of
/// the same name twice is an error upstream.
pub fn offers_ours<'a>(mut names: impl Iterator<Item = &'a str>) -> bool {
    names.any(|name| all().iter().any(|spec| names_tool(name, spec.name)))
}

/// Whether a client's listed tool name is `tool`: the name itself, or the name under a
/// host's prefix for an MCP server's tools (ending in a character that is not a letter or
/// digit, so `my_ctx_searcher` is not `ctx_search`).
pub fn names_tool(listed: &str, tool: &str) -> bool {
    listed.strip_suffix(tool).is_some_and(|prefix| {
        prefix.is_empty() || prefix.ends_with(|c: char| !c.is_ascii_alphanumeric())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_tools_are_recognised_under_the_names_hosts_give_mcp_tools() {
        for names in [
            ["read_file", "ctx_search"],
            ["read_file", "mcp__magic-context__ctx_memory"],
            ["magic-context_ctx_note", "bash"],
        ] {
            assert!(offers_ours(names.into_iter()), "{names:?}");
        }
        assert!(!offers_ours(
            ["read_file", "my_ctx_searcher", "xctx_search"].into_iter()
        ));
    }
}
