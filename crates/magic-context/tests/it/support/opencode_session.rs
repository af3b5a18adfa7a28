//! One scripted end-to-end run of the real OpenCode CLI (`opencode run`) on the Anthropic or
//! the Chat wire (see [`super::client_run`]), with OpenCode's own record of its tool results:
//! the `tool_use` events it prints with `--format json`.
//!
//! OpenCode talks to a provider of our own config whose AI SDK package picks the wire, its
//! `baseURL` at the proxy; the model's window there is far above the proxy's, so OpenCode
//! never compacts by itself and only the proxy manages the context. The session gets a
//! title on the command line, so OpenCode makes no title call (the script plays the main
//! conversation only). OpenCode's own traffic is switched off, and npm is pointed at a dead
//! registry so its plugin resolution stays offline.

use std::path::Path;

use serde_json::{Value, json};

use super::Machine;
use super::claude_session::Script;
use super::client_run::{ClientRun, Servers, bare_command, label_by_tool};
use super::transcript::ToolResult;
use crate::opencode;

/// The shell tool OpenCode offers the model.
pub const SHELL_TOOL: &str = "bash";
/// OpenCode's own window for the model, far above the proxy's.
const OPENCODE_WINDOW_TOKENS: u64 = 1_000_000;
/// The provider name in OpenCode's config.
const PROVIDER: &str = "sim";

/// The wire OpenCode speaks, by the AI SDK package its provider uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpencodeWire {
    /// Anthropic Messages (`@ai-sdk/anthropic`), to a Claude model.
    Anthropic,
    /// OpenAI Chat Completions (`@ai-sdk/openai-compatible`), to a GPT model.
    Chat,
}

impl OpencodeWire {
    fn package(self) -> &'static str {
        match self {
            Self::Anthropic => "@ai-sdk/anthropic",
            Self::Chat => "@ai-sdk/openai-compatible",
        }
    }

    /// The model: one the simulator prices on this wire's caching rules.
    pub fn model(self) -> &'static str {
        match self {
            Self::Anthropic => "claude-sonnet-4-5",
            Self::Chat => "gpt-5.5",
        }
    }
}

/// Starts the servers (all at `window_tokens`) and runs OpenCode on `wire` in `repo` (inside
/// `machine`) to the end of `script`.
pub fn run(
    machine: Machine,
    repo: &Path,
    script: &Script,
    window_tokens: u64,
    wire: OpencodeWire,
) -> ClientRun {
    let servers = Servers::start(&machine, script, window_tokens, label);
    let home = machine.path("home");
    let config_dir = home.join(".config/opencode");
    std::fs::create_dir_all(&config_dir).unwrap();
    let config = config(wire, &format!("{}/v1", servers.proxy.base_url));
    std::fs::write(config_dir.join("opencode.json"), config.to_string()).unwrap();
    let mut command = bare_command(&opencode::binary(), &machine, repo);
    command
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
        .env("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1")
        .env("OPENCODE_DISABLE_LSP_DOWNLOAD", "1")
        .env("OPENCODE_DISABLE_SHARE", "1")
        .env("npm_config_registry", "http://127.0.0.1:9/")
        .args(["run", "--format", "json", "--title", "Numbered steps"])
        .arg("Work through the steps.");
    let mut run = ClientRun::run(machine, servers, script, "opencode", command);
    run.tool_results = tool_results(&run.stdout);
    run
}

fn label(body: &[u8]) -> String {
    label_by_tool(body, SHELL_TOOL)
}

/// OpenCode's config: one provider at the proxy on `wire`, its model's window far above the
/// proxy's, no sharing or updates.
fn config(wire: OpencodeWire, base_url: &str) -> Value {
    let model = wire.model();
    json!({
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": false,
        "share": "disabled",
        "model": format!("{PROVIDER}/{model}"),
        "small_model": format!("{PROVIDER}/{model}"),
        "provider": {PROVIDER: {
            "npm": wire.package(),
            "name": "Simulator",
            "options": {"baseURL": base_url, "apiKey": "sk-dummy-key-for-tests"},
            "models": {model: {
                "name": model,
                "tool_call": true,
                "limit": {"context": OPENCODE_WINDOW_TOKENS, "output": 8192},
            }},
        }},
    })
}

/// The completed tool calls among OpenCode's `--format json` events, in order.
fn tool_results(events: &str) -> Vec<ToolResult> {
    events
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["type"] == "tool_use")
        .map(|event| event["part"].clone())
        .filter(|part| part["state"]["status"] == "completed")
        .map(|part| ToolResult {
            tool_use_id: part["callID"].as_str().unwrap_or_default().to_owned(),
            texts: vec![
                part["state"]["output"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            ],
            is_error: false,
        })
        .collect()
}
