//! One scripted end-to-end run of the real Codex CLI (`codex exec`) on the Responses wire
//! (see [`super::client_run`]), with Codex's own record of it: its rollout.
//!
//! Codex is pointed at the proxy the way `magic-context setup codex` does it: the built-in
//! OpenAI provider with `openai_base_url` (Codex's WebSocket attempt on that provider is
//! answered 426 by the proxy, so it posts over HTTP at once). The rest of its config keeps
//! it offline and unattended, and sets its own window far above the proxy's, so that Codex
//! never compacts by itself and only the proxy manages the context.

use std::path::Path;

use serde_json::Value;

use super::Machine;
use super::claude_session::{Route, Script};
use super::client_run::{ClientRun, Servers, bare_command, label_by_tool};
use super::codex_rollout;
use crate::codex;

/// The model Codex is told to use: a slug Codex knows (its own prompt and tools for it) and
/// the simulator prices as the GPT-5 family, with OpenAI's automatic caching.
pub const MODEL: &str = "gpt-5.5";
/// Codex's own window, far above the proxy's, so Codex never compacts by itself.
const CODEX_WINDOW_TOKENS: u64 = 1_000_000;
/// The shell tool Codex offers the model for this model.
pub const SHELL_TOOL: &str = "exec_command";

/// A finished `codex exec` run and Codex's rollout entries.
pub struct CodexSession {
    pub run: ClientRun,
    pub rollout: Vec<Value>,
}

impl CodexSession {
    /// Starts the servers (all at `window_tokens`) and runs Codex in `repo` (inside
    /// `machine`) to the end of `script`, through the proxy or, on [`Route::Direct`], at
    /// the relay in front of the simulator (the proxy then idles).
    pub fn run(
        machine: Machine,
        repo: &Path,
        script: &Script,
        window_tokens: u64,
        route: Route,
    ) -> Self {
        let servers = Servers::start(&machine, script, window_tokens, label);
        let codex_home = machine.path("home/.codex");
        let base_url = match route {
            Route::Proxy => &servers.proxy.base_url,
            Route::Direct => &servers.relay.base_url,
        };
        write_config(&codex_home, base_url);
        let mut command = bare_command(&codex::binary(), &machine, repo);
        command
            .env("CODEX_HOME", &codex_home)
            .env("OPENAI_API_KEY", "sk-dummy-key-for-tests")
            .env("RUST_LOG", "error")
            .args(["exec", "--skip-git-repo-check", "Work through the steps."]);
        let mut run = ClientRun::run(machine, servers, script, "codex", command);
        let rollout = codex_rollout::entries(&codex_rollout::rollout_file(&codex_home));
        run.tool_results = codex_rollout::tool_results(&rollout);
        Self { run, rollout }
    }
}

fn label(body: &[u8]) -> String {
    label_by_tool(body, SHELL_TOOL)
}

/// Writes `config.toml` in `codex_home`: the built-in provider at `base_url` (the key
/// `setup codex` writes), no prompts for approval, no network but the provider, and Codex's
/// own window far above the proxy's.
fn write_config(codex_home: &Path, base_url: &str) {
    std::fs::create_dir_all(codex_home).unwrap();
    let config = format!(
        r#"model = "{MODEL}"
openai_base_url = "{base_url}/v1"
model_context_window = {CODEX_WINDOW_TOKENS}
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false
remote_plugin = false
apps = false
"#
    );
    std::fs::write(codex_home.join("config.toml"), config).unwrap();
}
