//! The two servers of an end-to-end session, run as child processes of the built binary:
//! `magic-context sim` (the provider) and `magic-context serve` (the proxy).
//!
//! Each prints a line containing `listening on http://ADDR` on stderr once it listens (with
//! the real port, since both bind port 0). A thread keeps reading stderr after that line, so a
//! chatty server never blocks on a full pipe, and what it said is kept for failure messages.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mc_sim::CallRecord;

use super::deadline::{Bounded, SERVER};
use super::{Machine, sim_ledger};

/// How long a server may take to print its listening line (the debug build loads the
/// tokenizer tables first).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A running child server, killed on drop (or past [`SERVER`], which ends a test stuck on it).
pub struct Server {
    name: &'static str,
    child: Bounded,
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    stderr: Arc<Mutex<String>>,
}

impl Server {
    /// `magic-context sim --script SCRIPT --model-window WINDOW --token-scale SCALE` on a
    /// free port: a provider that counts `token_scale` times what a client estimates.
    pub fn sim(script: &Path, window_tokens: u64, token_scale: f64) -> Self {
        Self::sim_playing(script, window_tokens, token_scale, "honest")
    }

    /// [`Self::sim`] with the historian's calls answered as `historian` says (`--historian`).
    pub fn sim_playing(
        script: &Path,
        window_tokens: u64,
        token_scale: f64,
        historian: &str,
    ) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_magic-context"));
        command
            .args(["sim", "--listen", "127.0.0.1:0", "--script"])
            .arg(script)
            .args(["--model-window", &window_tokens.to_string()])
            .args(["--token-scale", &token_scale.to_string()])
            .args(["--historian", historian]);
        Self::start("sim", command)
    }

    /// `magic-context sim --script SCRIPT --historian MODE` on a free port: calls forcing the
    /// historian's tool are answered as `mode` says (`honest`, `garbage`, …).
    pub fn sim_historian(script: &Path, mode: &str) -> Self {
        Self::sim_answering(script, "--historian", mode)
    }

    /// `magic-context sim --script SCRIPT --dreamer MODE` on a free port: calls forcing the
    /// dreamer's tool are answered as `mode` says.
    pub fn sim_dreamer(script: &Path, mode: &str) -> Self {
        Self::sim_answering(script, "--dreamer", mode)
    }

    fn sim_answering(script: &Path, flag: &str, mode: &str) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_magic-context"));
        command
            .args(["sim", "--listen", "127.0.0.1:0", "--script"])
            .arg(script)
            .args([flag, mode]);
        Self::start("sim", command)
    }

    /// `magic-context serve` on a free port in front of `upstream` (for the Anthropic and the
    /// OpenAI routes alike: the simulator serves both), with its store in
    /// `data_dir` (`MAGIC_CONTEXT_DATA_DIR`) and its window set to `window_tokens`, in the
    /// machine's hermetic environment (its own HOME and XDG_CONFIG_HOME, so no user config
    /// applies).
    pub fn serve(machine: &Machine, upstream: &str, data_dir: &Path, window_tokens: u64) -> Self {
        Self::serve_under(&[], machine, upstream, data_dir, window_tokens)
    }

    /// [`Self::serve`] run by the command `wrapper` (its program and arguments, the serve
    /// command line following them), e.g. one that drops privileges.
    pub fn serve_under(
        wrapper: &[&OsStr],
        machine: &Machine,
        upstream: &str,
        data_dir: &Path,
        window_tokens: u64,
    ) -> Self {
        let exe = OsStr::new(env!("CARGO_BIN_EXE_magic-context"));
        let (program, leading) = match wrapper {
            [program, leading @ ..] => (*program, leading),
            [] => (exe, &[][..]),
        };
        let mut command = Command::new(program);
        command.args(leading);
        if !wrapper.is_empty() {
            command.arg(exe);
        }
        command
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--upstream-anthropic",
                upstream,
                "--upstream-openai",
                upstream,
            ])
            .args(["--context-window", &window_tokens.to_string()])
            .args(["--log-level", "info"])
            .env_clear()
            .env("HOME", machine.path("home"))
            .env("XDG_CONFIG_HOME", machine.path("xdg"))
            .env("MAGIC_CONTEXT_DATA_DIR", data_dir);
        Self::start("serve", command)
    }

    fn start(name: &'static str, mut command: Command) -> Self {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = Bounded::spawn(&mut command, name, SERVER);
        let stderr = Arc::new(Mutex::new(String::new()));
        let (found, address) = mpsc::channel();
        let pipe = child.child().stderr.take().unwrap();
        let kept = Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if let Some(url) = listening_url(&line) {
                    let _ = found.send(url);
                }
                let mut kept = kept.lock().unwrap();
                kept.push_str(&line);
                kept.push('\n');
            }
        });
        let Ok(base_url) = address.recv_timeout(START_TIMEOUT) else {
            drop(child);
            panic!(
                "`magic-context {name}` printed no `listening on http://` line:\n{}",
                stderr.lock().unwrap()
            );
        };
        Self {
            name,
            child,
            base_url,
            stderr,
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the server wrote to stderr so far, for failure messages.
    pub fn stderr(&self) -> String {
        format!(
            "--- {} stderr ---\n{}",
            self.name,
            self.stderr.lock().unwrap()
        )
    }

    /// The simulator's `GET /_sim/ledger`: one row per call, in arrival order.
    pub fn ledger(&self) -> Vec<CallRecord> {
        serde_json::from_value(sim_ledger(&self.base_url)).unwrap()
    }
}

/// The URL in a line like `mc-sim listening on http://127.0.0.1:4141` or
/// `magic-context listening on http://127.0.0.1:4141 with store …`.
fn listening_url(line: &str) -> Option<String> {
    let (_, rest) = line.split_once("listening on http://")?;
    let address = rest.split_whitespace().next()?;
    Some(format!("http://{address}"))
}

#[test]
fn reads_the_address_from_either_listening_line() {
    assert_eq!(
        listening_url("mc-sim listening on http://127.0.0.1:4000").as_deref(),
        Some("http://127.0.0.1:4000")
    );
    assert_eq!(
        listening_url("magic-context listening on http://127.0.0.1:4141 with store /d/context.db")
            .as_deref(),
        Some("http://127.0.0.1:4141")
    );
    assert_eq!(listening_url("warning: config file ignored"), None);
}
