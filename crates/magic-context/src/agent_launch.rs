//! How `magic-context run` points an agent at the proxy: which variables (and, for Codex,
//! which arguments) each agent reads its provider base URL from.
//!
//! Agents are known by their program name, because each reads a different variable with a
//! different convention: Claude Code and the official Anthropic SDKs append `/v1/messages`
//! to `ANTHROPIC_BASE_URL`, while the AI SDK inside OpenCode appends only `/messages` and so
//! wants `/v1` in the URL; OpenAI SDKs want `/v1` in `OPENAI_BASE_URL`. Codex's built-in
//! provider ignores `OPENAI_BASE_URL` and honours only its `openai_base_url` setting, given
//! here as a `-c` override. Pi reads base URLs only from its `models.json`, which `magic-context
//! setup pi` writes. An unknown agent gets both common variables, or one with `--wire`.
//! Where an agent has an environment switch for its own compaction, it is turned off: the
//! proxy keeps the session inside the window, and a host compaction would throw that away.
//! With `compaction.enabled: false` the host's compaction is what manages the window, so
//! the switch is left alone.

use std::ffi::OsString;
use std::path::Path;

use clap::ValueEnum;

/// The wire an unknown agent speaks, for `--wire`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Wire {
    /// Anthropic Messages: `ANTHROPIC_BASE_URL` (without `/v1`).
    Anthropic,
    /// OpenAI Chat Completions or Responses: `OPENAI_BASE_URL` (with `/v1`).
    Openai,
}

/// What to add to the agent's command so it goes through the proxy.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Launch {
    /// Variables set in the agent's environment.
    pub env: Vec<(&'static str, String)>,
    /// Arguments put before the agent's own.
    pub leading_args: Vec<OsString>,
    /// Something the user should know, printed once on stderr.
    pub note: Option<&'static str>,
}

/// The launch for `program` against the proxy at `base_url` (`http://127.0.0.1:PORT`, no
/// trailing slash); `wire` forces the generic variables of one wire; `host_compacts` (the
/// config's compaction is off) keeps the agent's own compaction on.
pub fn launch_for(
    program: &Path,
    wire: Option<Wire>,
    base_url: &str,
    host_compacts: bool,
) -> Launch {
    let mut launch = launch_without_compaction_choice(program, wire, base_url);
    if host_compacts {
        launch
            .env
            .retain(|(name, _)| !COMPACTION_SWITCHES.contains(name));
    }
    launch
}

/// The agents' environment switches that turn their own compaction off.
const COMPACTION_SWITCHES: [&str; 2] = ["DISABLE_AUTO_COMPACT", "OPENCODE_DISABLE_AUTOCOMPACT"];

fn launch_without_compaction_choice(program: &Path, wire: Option<Wire>, base_url: &str) -> Launch {
    let v1 = format!("{base_url}/v1");
    if let Some(wire) = wire {
        return generic(Some(wire), base_url);
    }
    match agent_name(program).as_deref() {
        Some("claude") => Launch {
            env: vec![
                ("ANTHROPIC_BASE_URL", base_url.to_owned()),
                ("DISABLE_AUTO_COMPACT", "1".to_owned()),
            ],
            ..Launch::default()
        },
        Some("opencode") => Launch {
            env: vec![
                ("ANTHROPIC_BASE_URL", v1.clone()),
                ("OPENAI_BASE_URL", v1),
                ("OPENCODE_DISABLE_AUTOCOMPACT", "1".to_owned()),
            ],
            ..Launch::default()
        },
        Some("codex") => Launch {
            leading_args: vec![
                OsString::from("-c"),
                OsString::from(format!("openai_base_url=\"{v1}\"")),
            ],
            env: vec![("OPENAI_BASE_URL", v1)],
            ..Launch::default()
        },
        Some("pi") => Launch {
            note: Some(
                "Pi reads its base URLs only from its models.json; `magic-context setup pi` points it at the proxy address in your config, where `run` serves it",
            ),
            ..generic(None, base_url)
        },
        _ => generic(None, base_url),
    }
}

/// Whether `program` ignores base-URL variables and reads the proxy's address only from its
/// own config (Pi's `models.json`, written by `setup`): a proxy started for it must then
/// listen at the configured address, not on a free port, or it would never be reached.
pub fn reads_url_from_own_config(program: &Path) -> bool {
    agent_name(program).as_deref() == Some("pi")
}

/// The SDK-convention variables of one wire, or of both.
fn generic(wire: Option<Wire>, base_url: &str) -> Launch {
    let anthropic = ("ANTHROPIC_BASE_URL", base_url.to_owned());
    let openai = ("OPENAI_BASE_URL", format!("{base_url}/v1"));
    let env = match wire {
        Some(Wire::Anthropic) => vec![anthropic],
        Some(Wire::Openai) => vec![openai],
        None => vec![anthropic, openai],
    };
    Launch {
        env,
        ..Launch::default()
    }
}

/// The program's name without its folder or a `.exe` suffix (npm installs Claude Code as
/// `claude.exe` on every platform).
fn agent_name(program: &Path) -> Option<String> {
    let name = program.file_name()?.to_str()?;
    Some(name.strip_suffix(".exe").unwrap_or(name).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "http://127.0.0.1:9";

    fn env_of(program: &str, wire: Option<Wire>) -> Vec<(&'static str, String)> {
        launch_for(Path::new(program), wire, BASE, false).env
    }

    #[test]
    fn with_compaction_off_the_agents_own_compaction_stays_on() {
        for program in ["claude", "opencode"] {
            let env = launch_for(Path::new(program), None, BASE, true).env;
            assert!(
                env.iter()
                    .all(|(name, _)| !COMPACTION_SWITCHES.contains(name)),
                "{program}: {env:?}"
            );
            assert!(!env.is_empty(), "{program} still gets its base URL");
        }
    }

    #[test]
    fn each_known_agent_gets_its_own_variables() {
        assert_eq!(
            env_of("/opt/bin/claude.exe", None),
            [
                ("ANTHROPIC_BASE_URL", BASE.to_owned()),
                ("DISABLE_AUTO_COMPACT", "1".to_owned())
            ]
        );
        assert_eq!(
            env_of("opencode", None)[..2],
            [
                ("ANTHROPIC_BASE_URL", format!("{BASE}/v1")),
                ("OPENAI_BASE_URL", format!("{BASE}/v1"))
            ]
        );
        let codex = launch_for(Path::new("codex"), None, BASE, false);
        assert_eq!(
            codex.leading_args,
            [
                OsString::from("-c"),
                OsString::from(format!("openai_base_url=\"{BASE}/v1\""))
            ]
        );
        assert!(
            launch_for(Path::new("pi"), None, BASE, false)
                .note
                .is_some()
        );
        assert!(reads_url_from_own_config(Path::new("/usr/bin/pi")));
        assert!(!reads_url_from_own_config(Path::new("claude")));
    }

    #[test]
    fn unknown_agents_get_both_wires_unless_told_one() {
        assert_eq!(
            env_of("my-agent", None),
            [
                ("ANTHROPIC_BASE_URL", BASE.to_owned()),
                ("OPENAI_BASE_URL", format!("{BASE}/v1"))
            ]
        );
        assert_eq!(
            env_of("my-agent", Some(Wire::Openai)),
            [("OPENAI_BASE_URL", format!("{BASE}/v1"))]
        );
        assert_eq!(
            env_of("claude", Some(Wire::Anthropic)),
            [("ANTHROPIC_BASE_URL", BASE.to_owned())]
        );
    }
}
