//! The agent as a child of `magic-context run`: found on PATH, given the terminal, sent the
//! signals `run` receives, and its exit reported as a shell would.
//!
//! `run` must be invisible between the user and the agent: the same stdin, stdout and
//! stderr, the same exit code (128 + the signal number when a signal killed it), and a
//! SIGTERM or SIGHUP sent to `run` reaches the agent rather than orphaning it. SIGINT is the
//! exception when `run` is the terminal's foreground job: the terminal has already sent
//! Ctrl-C to the agent (same process group), and a second copy would read as a double
//! Ctrl-C, which interactive agents take as "quit".
//!
//! Which dispositions the agent starts with: SIGINT and SIGTERM are caught by `run` before
//! the agent is started, so the agent starts with both at their defaults (a caught signal is
//! reset by exec; an ignored one would be passed on) whatever `run` inherited. An ignored
//! SIGINT is usually an accident of how `run` was started, not a choice: a shell starts every
//! background job of a script with SIGINT ignored, and so do many job launchers, and passing
//! it on would leave an agent that `run` cannot interrupt (its `trap … INT` does nothing). A
//! signal caught before the start is also never lost: it is forwarded once the agent runs.
//! SIGHUP is the exception, because ignoring it is what `nohup` asks: the agent inherits the
//! disposition `run` started with (`nohup magic-context run -- agent` keeps the agent alive
//! when the terminal goes), and `run` catches SIGHUP only once the agent has started.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{ExitCode, ExitStatus};

use anyhow::Context;

/// Exit code of a command that was not found, as shells report it.
pub const NOT_FOUND_EXIT: u8 = 127;
/// Exit code of a command that was found but could not be started.
pub const CANNOT_START_EXIT: u8 = 126;

/// Finds `program` the way a shell does: a name with a slash is a path, else the first
/// executable file of that name in `path` (the `PATH` value).
pub fn find_program(program: &OsStr, path: Option<&OsStr>) -> Option<PathBuf> {
    let as_path = Path::new(program);
    if as_path.components().count() > 1 {
        return is_executable(as_path).then(|| as_path.to_path_buf());
    }
    std::env::split_paths(path?)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

/// Runs `program` with `args` and `env` added to this process's environment, forwarding
/// signals, and returns the exit code to leave with.
pub async fn run_agent(
    program: &Path,
    args: &[OsString],
    env: &[(&'static str, String)],
) -> anyhow::Result<ExitCode> {
    let mut command = tokio::process::Command::new(program);
    command.args(args);
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    crate::malloc_arenas::give_back_environment(&mut command);
    for (name, value) in env {
        command.env(name, value);
    }
    // Caught before the start, so the agent gets SIGINT and SIGTERM at their defaults.
    let before_start = SignalsBeforeStart::watch()?;
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            report(&format!("cannot start {}: {error}", program.display()));
            return Ok(ExitCode::from(CANNOT_START_EXIT));
        }
    };
    let status = before_start.wait_forwarding(&mut child).await?;
    Ok(exit_code_of(status))
}

/// Writes one line to stderr; `run` shares the terminal with the agent, so it says little.
pub fn report(line: &str) {
    use std::io::Write;
    // A failed write to stderr has nowhere else to go.
    let _ = writeln!(std::io::stderr().lock(), "magic-context: {line}");
}

/// The signals `run` watches from before the agent starts (SIGINT, SIGTERM).
#[cfg(unix)]
struct SignalsBeforeStart {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl SignalsBeforeStart {
    fn watch() -> anyhow::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            interrupt: signal(SignalKind::interrupt()).context("cannot watch SIGINT")?,
            terminate: signal(SignalKind::terminate()).context("cannot watch SIGTERM")?,
        })
    }

    /// Waits for the agent, forwarding what `run` receives; SIGHUP is watched from here on,
    /// after the agent inherited the disposition `run` started with.
    async fn wait_forwarding(
        mut self,
        child: &mut tokio::process::Child,
    ) -> anyhow::Result<ExitStatus> {
        use rustix::process::{Pid, Signal, kill_process};
        use tokio::signal::unix::{SignalKind, signal};

        let mut hangup = signal(SignalKind::hangup()).context("cannot watch SIGHUP")?;
        let pid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(Pid::from_raw);
        loop {
            let forwarded = tokio::select! {
                status = child.wait() => return status.context("cannot wait for the agent"),
                _ = self.interrupt.recv() => (!is_foreground_job()).then_some(Signal::INT),
                _ = self.terminate.recv() => Some(Signal::TERM),
                _ = hangup.recv() => Some(Signal::HUP),
            };
            if let (Some(signal), Some(pid)) = (forwarded, pid) {
                // The child may have exited in between; its status comes on the next turn.
                let _ = kill_process(pid, signal);
            }
        }
    }
}

#[cfg(not(unix))]
struct SignalsBeforeStart;

#[cfg(not(unix))]
impl SignalsBeforeStart {
    fn watch() -> anyhow::Result<Self> {
        Ok(Self)
    }

    async fn wait_forwarding(
        self,
        child: &mut tokio::process::Child,
    ) -> anyhow::Result<ExitStatus> {
        child.wait().await.context("cannot wait for the agent")
    }
}

/// Whether this process is the foreground job of the terminal on stdin, so a Ctrl-C there
/// already reached the agent.
#[cfg(unix)]
fn is_foreground_job() -> bool {
    rustix::termios::tcgetpgrp(std::io::stdin())
        .is_ok_and(|group| group == rustix::process::getpgrp())
}

/// The code to exit with: the agent's, or 128 + the signal that killed it.
pub fn exit_code_of(status: ExitStatus) -> ExitCode {
    if let Some(code) = status.code() {
        return ExitCode::from(u8::try_from(code & 0xff).unwrap_or(1));
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return ExitCode::from(u8::try_from(128 + (signal & 0x7f)).unwrap_or(1));
        }
    }
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_programs_like_a_shell() {
        let dir = tempfile::tempdir().unwrap();
        let tool = dir.path().join("tool");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "not executable").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let path =
            std::env::join_paths(["/nonexistent-dir", dir.path().to_str().unwrap()]).unwrap();
        assert_eq!(
            find_program(OsStr::new("tool"), Some(&path)),
            Some(tool.clone())
        );
        assert_eq!(find_program(OsStr::new("plain"), Some(&path)), None);
        assert_eq!(find_program(OsStr::new("missing"), Some(&path)), None);
        assert_eq!(find_program(tool.as_os_str(), None), Some(tool));
        assert_eq!(find_program(OsStr::new("tool"), None), None);
    }
}
