//! The real Claude Code CLI against `magic-context sim`: the simulator must be a provider a
//! real client cannot tell from the real one, and the session file Claude Code writes must
//! replay through `magic-context replay`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use crate::claude_code;
use crate::support::deadline::{Bounded, CLIENT, QUICK, SERVER};
use crate::support::{Machine, sim_ledger};

/// A running `magic-context sim`, killed on drop.
struct Sim {
    _child: Bounded,
    base_url: String,
}

impl Sim {
    fn start(script: &Path) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_magic-context"));
        command
            .args(["sim", "--listen", "127.0.0.1:0", "--script"])
            .arg(script)
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .stdout(Stdio::null());
        let mut child = Bounded::spawn(&mut command, "magic-context sim", SERVER);
        let stderr = child.child().stderr.take().unwrap();
        let mut line = String::new();
        BufReader::new(stderr).read_line(&mut line).unwrap();
        let base_url = line
            .trim()
            .strip_prefix("mc-sim listening on ")
            .unwrap_or_else(|| panic!("unexpected first line from sim: {line:?}"))
            .to_owned();
        Self {
            _child: child,
            base_url,
        }
    }

    /// The simulator's ledger.
    fn ledger(&self) -> Vec<serde_json::Value> {
        serde_json::from_value(sim_ledger(&self.base_url)).unwrap()
    }
}

const SCRIPT: &str = r#"{"turns": [
  {"content": [{"type": "text", "text": "Looking around."},
               {"type": "tool_use", "name": "Bash", "input": {"command": "ls && echo marker-from-bash", "description": "List files"}}]},
  {"when": {"last_tool_result_contains": "marker-from-bash"},
   "content": [{"type": "tool_use", "name": "Read", "input": {"file_path": "README_PATH"}}]},
  {"when": {"last_tool_result_contains": "demo repository"},
   "content": [{"type": "text", "text": "The repository holds one README."}]}
], "final_text": "Nothing more to do."}"#;

#[test]
fn claude_code_runs_tools_through_the_simulator_and_its_session_replays() {
    let machine = Machine::fresh();
    let repo = machine.path("work/repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("README.md"), "# demo repository\n").unwrap();
    let git = |args: &[&str]| {
        let mut git = Command::new("git");
        git.args(args).current_dir(&repo);
        let status = Bounded::status(&mut git, "git", QUICK);
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&[
        "-c",
        "user.email=t@example.com",
        "-c",
        "user.name=t",
        "commit",
        "-qm",
        "init",
    ]);

    let script = machine.path("script.json");
    let readme = repo.join("README.md");
    std::fs::write(
        &script,
        SCRIPT.replace("README_PATH", readme.to_str().unwrap()),
    )
    .unwrap();
    let sim = Sim::start(&script);

    let mut claude = Command::new(claude_code::binary());
    claude
        .args([
            "-p",
            "describe this repository",
            "--dangerously-skip-permissions",
        ])
        .current_dir(&repo)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", machine.path("home"))
        .env("ANTHROPIC_BASE_URL", &sim.base_url)
        .env("ANTHROPIC_API_KEY", "sk-ant-dummy-key-for-tests")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("IS_SANDBOX", "1");
    let output = Bounded::output(&mut claude, "claude -p", CLIENT);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "claude failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("The repository holds one README."),
        "{stdout}"
    );

    // Three model calls: Bash, Read, then the final answer; the cached prefix grows.
    let ledger = sim.ledger();
    let main: Vec<&serde_json::Value> = ledger.iter().filter(|row| row["status"] == 200).collect();
    assert!(main.len() >= 3, "{ledger:#?}");
    let last = main.last().unwrap();
    assert!(
        last["cache_read"].as_u64().unwrap() > 10_000,
        "later calls read Claude Code's cached prefix: {last}"
    );

    // Claude Code wrote its session file; it loads and replays as a claude-code recording.
    let projects = machine.path("home/.claude/projects");
    let session_dir = std::fs::read_dir(&projects)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let run = machine
        .run(
            &[
                "replay",
                session_dir.to_str().unwrap(),
                "--format",
                "claude-code",
                "--json",
            ],
            &[],
        )
        .success();
    let report = run.json();
    assert_eq!(report["files"], 1);
    assert_eq!(report["strategies"]["passthrough"]["requests"], main.len());
}
