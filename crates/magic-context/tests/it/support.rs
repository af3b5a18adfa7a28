//! Runs the built binary in a hermetic environment.
//!
//! The submodules run real clients through the built binary's servers, for the end-to-end
//! sessions: [`claude_session`] runs one scripted Claude Code session and [`pi_session`] one
//! of Pi, each keeping what every party recorded; [`client_run`] does the same for the real
//! Codex and OpenCode CLIs.

pub mod claude_session;
pub mod client_run;
pub mod codex_rollout;
pub mod codex_session;
pub mod deadline;
pub mod git_repo;
pub mod npm_client;
pub mod opencode_session;
pub mod pi_session;
pub mod recording_relay;
pub mod seq_steps;
pub mod servers;
pub mod small_window_checks;
pub mod store_check;
pub mod stream_client;
pub mod transcript;

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fake machine: a home directory, an XDG config home and a working directory.
pub struct Machine {
    pub root: tempfile::TempDir,
}

impl Machine {
    pub fn fresh() -> Self {
        let root = tempfile::tempdir().unwrap();
        for dir in ["home", "xdg", "work"] {
            std::fs::create_dir(root.path().join(dir)).unwrap();
        }
        Self { root }
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.root.path().join(relative)
    }

    /// Where the user file lives on this machine.
    pub fn user_file(&self) -> PathBuf {
        self.path("xdg/magic-context/magic-context.jsonc")
    }

    /// Copies `tests/fixtures/<name>` to `to`.
    pub fn install_fixture(&self, name: &str, to: &Path) {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(fixture, to).unwrap();
    }

    /// Runs the binary in `work/` with only HOME and XDG_CONFIG_HOME set (plus `extra_env`).
    pub fn run(&self, args: &[&str], extra_env: &[(&str, &OsStr)]) -> Run {
        self.run_in(&self.path("work"), args, extra_env)
    }

    pub fn run_in(&self, cwd: &Path, args: &[&str], extra_env: &[(&str, &OsStr)]) -> Run {
        self.run_bounded(cwd, args, extra_env, deadline::QUICK)
    }

    /// [`Self::run_in`] with a deadline of `limit` instead of [`deadline::QUICK`], for a
    /// command whose work is long by nature (a benchmark).
    pub fn run_bounded(
        &self,
        cwd: &Path,
        args: &[&str],
        extra_env: &[(&str, &OsStr)],
        limit: std::time::Duration,
    ) -> Run {
        let mut command = Command::new(env!("CARGO_BIN_EXE_magic-context"));
        command
            .args(args)
            .current_dir(cwd)
            .env_clear()
            .env("HOME", self.path("home"))
            .env("XDG_CONFIG_HOME", self.path("xdg"));
        for (name, value) in extra_env {
            command.env(name, value);
        }
        let name = format!("magic-context {}", args.join(" "));
        let output = deadline::Bounded::output(&mut command, &name, limit);
        Run::from(output, self.root.path())
    }
}

/// What one run printed, with the machine's temp path replaced by `[TMP]`.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn from(output: Output, root: &Path) -> Self {
        let clean = |bytes: Vec<u8>| {
            String::from_utf8(bytes)
                .unwrap()
                .replace(root.to_str().unwrap(), "[TMP]")
        };
        Self {
            code: output.status.code(),
            stdout: clean(output.stdout),
            stderr: clean(output.stderr),
        }
    }

    pub fn success(self) -> Self {
        assert_eq!(
            self.code,
            Some(0),
            "stdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap()
    }
}

/// The simulator's `GET /_sim/ledger` at `base_url` (`http://ADDR`): one row per call, in
/// arrival order, over a plain HTTP/1.0 exchange (the server closes when done).
pub fn sim_ledger(base_url: &str) -> serde_json::Value {
    let address = base_url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).unwrap();
    write!(
        stream,
        "GET /_sim/ledger HTTP/1.0\r\nHost: {address}\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "GET /_sim/ledger: {head}"
    );
    serde_json::from_str(body).unwrap()
}
