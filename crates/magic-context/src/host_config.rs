//! Where each host keeps its config, and which keys `setup` writes there.
//!
//! Each host is pointed at the proxy its own way, found by reading the hosts themselves
//! (the pinned versions the tests run; see `../shared/CLIENTS.md` for OpenCode, Codex and
//! Pi):
//! - Claude Code: `settings.json` in its config dir (`CLAUDE_CONFIG_DIR`, else `~/.claude`)
//!   applies its `env` to every session, so `env.ANTHROPIC_BASE_URL` points it at the
//!   proxy, and `autoCompactEnabled: false` there turns its compaction off. User-scope MCP
//!   servers live in the global config, `~/.claude.json` (inside `CLAUDE_CONFIG_DIR` when
//!   that is set; a legacy `.config.json` in the config dir wins when it exists).
//! - OpenCode: its global config (`$XDG_CONFIG_HOME/opencode/`, the first of
//!   `opencode.jsonc`, `opencode.json`, `config.json`) takes a `baseURL` per provider (the
//!   AI SDK appends `/messages` to it, so it includes `/v1`), local MCP servers under `mcp`,
//!   and `compaction.auto`. OpenCode adds a `$schema` key to a config that lacks one, so a
//!   config `setup` creates starts with it.
//! - Codex: `config.toml` in `CODEX_HOME` (else `~/.codex`): `openai_base_url` for the
//!   built-in provider, which ignores `OPENAI_BASE_URL`, and `[mcp_servers.<name>]`. Codex
//!   has a compaction threshold but no switch: `model_auto_compact_token_limit` set to 0,
//!   -1, twice the window or `i64::MAX` still compacted at 95% of a 100K window (0.171.0;
//!   on the built-in provider too, where 10^9 and `i64::MAX` still sent a
//!   `compaction_trigger`), so it is left alone; the proxy keeps reported usage far below
//!   that.
//! - Pi: `models.json` in `PI_CODING_AGENT_DIR` (else `~/.pi/agent`) overrides a built-in
//!   provider's `baseUrl` (the Anthropic SDK there appends `/v1/messages`, so no `/v1`), and
//!   `settings.json` takes `compaction.enabled`. Pi has no MCP; the proxy adds the tools.
//!
//! Only these keys are ever written; API keys and auth entries are never read or touched.

use std::path::{Path, PathBuf};

use clap::ValueEnum;
use serde_json::{Value, json};

use crate::config_doc::Format;

/// The name the MCP server is registered under in every host.
pub const MCP_SERVER_NAME: &str = "magic-context";

/// A host `setup` can configure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Host {
    /// Claude Code (`claude`).
    ClaudeCode,
    /// OpenCode (`opencode`).
    Opencode,
    /// The Codex CLI (`codex`).
    Codex,
    /// The Pi coding agent (`pi`).
    Pi,
}

impl Host {
    /// Every host, in the order `doctor` reports them.
    pub const ALL: [Self; 4] = [Self::ClaudeCode, Self::Opencode, Self::Codex, Self::Pi];

    /// The name on the command line and in the setup record.
    pub fn id(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Opencode => "opencode",
            Self::Codex => "codex",
            Self::Pi => "pi",
        }
    }

    /// Whether the host registers tools through MCP.
    pub fn has_mcp(self) -> bool {
        match self {
            Self::ClaudeCode | Self::Opencode | Self::Codex => true,
            Self::Pi => false,
        }
    }
}

/// The start of an OpenCode config `setup` creates: OpenCode adds this `$schema` key to a
/// config without one when it loads it (1.18.33), so a file created without it would have
/// changed under `setup` by the host's first run.
const OPENCODE_NEW_CONFIG: &str = "{\n  \"$schema\": \"https://opencode.ai/config.json\"\n}\n";

/// Why a key is written: `doctor` checks each kind separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Points the host at the proxy.
    BaseUrl,
    /// Registers `magic-context mcp`.
    Mcp,
    /// Turns the host's own compaction off.
    Compaction,
}

/// One key `setup` wants at one value.
#[derive(Debug, Clone, PartialEq)]
pub struct Edit {
    /// The key's path from the top of the file.
    pub key: Vec<String>,
    /// The wanted value.
    pub value: Value,
    /// Why it is written.
    pub purpose: Purpose,
}

/// One file of a host and the keys wanted in it.
#[derive(Debug, Clone, PartialEq)]
pub struct FilePlan {
    /// The file.
    pub path: PathBuf,
    /// Its syntax.
    pub format: Format,
    /// The keys wanted there.
    pub edits: Vec<Edit>,
    /// The text the file starts from when `setup` creates it: empty, or what the host would
    /// add to it at its first run anyway, so the file `setup` created stays as written and
    /// `--undo` can remove it.
    pub new_file_text: &'static str,
}

/// The environment the hosts' config locations depend on.
#[derive(Debug, Clone, Default)]
pub struct HostEnv {
    /// `HOME`.
    pub home: PathBuf,
    /// `XDG_CONFIG_HOME`.
    pub xdg_config_home: Option<PathBuf>,
    /// `CLAUDE_CONFIG_DIR`.
    pub claude_config_dir: Option<PathBuf>,
    /// `CODEX_HOME`.
    pub codex_home: Option<PathBuf>,
    /// `PI_CODING_AGENT_DIR`.
    pub pi_agent_dir: Option<PathBuf>,
}

impl HostEnv {
    /// Reads the variables; `None` when `HOME` is not set.
    pub fn from_process() -> Option<Self> {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
        };
        Some(Self {
            home: var("HOME")?,
            xdg_config_home: var("XDG_CONFIG_HOME"),
            claude_config_dir: var("CLAUDE_CONFIG_DIR"),
            codex_home: var("CODEX_HOME"),
            pi_agent_dir: var("PI_CODING_AGENT_DIR"),
        })
    }
}

/// The files and keys that point `host` at the proxy at `proxy_url` (no trailing slash, no
/// `/v1`) and register `mcp_command` (this binary) as its MCP server.
pub fn plan(host: Host, env: &HostEnv, proxy_url: &str, mcp_command: &Path) -> Vec<FilePlan> {
    let v1 = format!("{proxy_url}/v1");
    let command = mcp_command.display().to_string();
    let edit = |key: &[&str], value: Value, purpose| Edit {
        key: key.iter().map(|part| (*part).to_owned()).collect(),
        value,
        purpose,
    };
    let json_file = |path: PathBuf, edits| FilePlan {
        path,
        format: Format::Json,
        edits,
        new_file_text: "",
    };
    match host {
        Host::ClaudeCode => {
            let dir = env
                .claude_config_dir
                .clone()
                .unwrap_or_else(|| env.home.join(".claude"));
            let legacy = dir.join(".config.json");
            let global = if legacy.is_file() {
                legacy
            } else {
                env.claude_config_dir
                    .as_ref()
                    .unwrap_or(&env.home)
                    .join(".claude.json")
            };
            vec![
                json_file(
                    dir.join("settings.json"),
                    vec![
                        edit(
                            &["env", "ANTHROPIC_BASE_URL"],
                            json!(proxy_url),
                            Purpose::BaseUrl,
                        ),
                        edit(&["autoCompactEnabled"], json!(false), Purpose::Compaction),
                    ],
                ),
                json_file(
                    global,
                    vec![edit(
                        &["mcpServers", MCP_SERVER_NAME],
                        json!({"type": "stdio", "command": command, "args": ["mcp"], "env": {}}),
                        Purpose::Mcp,
                    )],
                ),
            ]
        }
        Host::Opencode => {
            let dir = env
                .xdg_config_home
                .clone()
                .unwrap_or_else(|| env.home.join(".config"))
                .join("opencode");
            let path = ["opencode.jsonc", "opencode.json", "config.json"]
                .iter()
                .map(|name| dir.join(name))
                .find(|path| path.is_file())
                .unwrap_or_else(|| dir.join("opencode.json"));
            vec![FilePlan {
                new_file_text: OPENCODE_NEW_CONFIG,
                ..json_file(
                    path,
                    vec![
                        edit(
                            &["provider", "anthropic", "options", "baseURL"],
                            json!(v1),
                            Purpose::BaseUrl,
                        ),
                        edit(
                            &["provider", "openai", "options", "baseURL"],
                            json!(v1),
                            Purpose::BaseUrl,
                        ),
                        edit(
                            &["mcp", MCP_SERVER_NAME],
                            json!({"type": "local", "command": [command, "mcp"], "enabled": true}),
                            Purpose::Mcp,
                        ),
                        edit(&["compaction", "auto"], json!(false), Purpose::Compaction),
                    ],
                )
            }]
        }
        Host::Codex => {
            let dir = env
                .codex_home
                .clone()
                .unwrap_or_else(|| env.home.join(".codex"));
            vec![FilePlan {
                path: dir.join("config.toml"),
                format: Format::Toml,
                new_file_text: "",
                edits: vec![
                    edit(&["openai_base_url"], json!(v1), Purpose::BaseUrl),
                    edit(
                        &["mcp_servers", MCP_SERVER_NAME, "command"],
                        json!(command),
                        Purpose::Mcp,
                    ),
                    edit(
                        &["mcp_servers", MCP_SERVER_NAME, "args"],
                        json!(["mcp"]),
                        Purpose::Mcp,
                    ),
                ],
            }]
        }
        Host::Pi => {
            let dir = env
                .pi_agent_dir
                .clone()
                .unwrap_or_else(|| env.home.join(".pi/agent"));
            vec![
                json_file(
                    dir.join("models.json"),
                    vec![
                        edit(
                            &["providers", "anthropic", "baseUrl"],
                            json!(proxy_url),
                            Purpose::BaseUrl,
                        ),
                        edit(
                            &["providers", "openai", "baseUrl"],
                            json!(v1),
                            Purpose::BaseUrl,
                        ),
                    ],
                ),
                json_file(
                    dir.join("settings.json"),
                    vec![edit(
                        &["compaction", "enabled"],
                        json!(false),
                        Purpose::Compaction,
                    )],
                ),
            ]
        }
    }
}
