//! Every process a test starts runs against a deadline, in a process group of its own, and
//! is killed with everything it started once the deadline passes or the test is done.
//!
//! A child that never exits (an agent whose `trap` does nothing, a server retrying a call
//! forever, a prompt waiting for input) would otherwise hang the whole test binary, and with
//! it every crate `cargo test` has not reached yet. Past its deadline the group gets SIGKILL
//! from a watchdog thread, which also ends any blocking read of the child's pipes, and the
//! test fails naming the command. The group, not only the child, is killed so that a wrapper's
//! children (`run`'s agent, a shell's `sleep`) do not outlive the test.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// A deadline for commands that finish at once unless something is wrong: a debug build of
/// any `magic-context` subcommand on busy cores, with room to spare.
pub const QUICK: Duration = Duration::from_secs(300);

/// A deadline for one run of a real agent CLI (`claude -p`, `codex exec`, `pi -p`): a run
/// that takes longer is stuck, e.g. a client retrying a failing call.
pub const CLIENT: Duration = Duration::from_secs(600);

/// A deadline for a server a test keeps for its whole length (`sim`, `serve`): killing it
/// past this ends a test stuck waiting on it.
pub const SERVER: Duration = Duration::from_secs(1800);

/// A deadline for `npm install` of a client from the registry on a slow link.
pub const INSTALL: Duration = Duration::from_secs(900);

/// A started child bound to its deadline; killed, with its process group, on drop.
pub struct Bounded {
    child: Child,
    name: String,
    limit: Duration,
    fired: Arc<AtomicBool>,
    stop: Option<mpsc::Sender<()>>,
    watchdog: Option<JoinHandle<()>>,
}

impl Bounded {
    /// Starts `command` in a new process group, killed after `limit`. `name` says which
    /// command it was in a failure message.
    pub fn spawn(command: &mut Command, name: &str, limit: Duration) -> Self {
        use std::os::unix::process::CommandExt;
        let child = command
            .process_group(0)
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {name}: {error}"));
        let fired = Arc::new(AtomicBool::new(false));
        let (stop, stopped) = mpsc::channel::<()>();
        let group = child.id();
        let watchdog = {
            let fired = Arc::clone(&fired);
            std::thread::spawn(move || {
                // A message or a dropped sender both mean the test is done with the child.
                if stopped.recv_timeout(limit) == Err(mpsc::RecvTimeoutError::Timeout) {
                    fired.store(true, Ordering::SeqCst);
                    kill_group(group);
                }
            })
        };
        Self {
            child,
            name: name.to_owned(),
            limit,
            fired,
            stop: Some(stop),
            watchdog: Some(watchdog),
        }
    }

    /// Runs `command` to its end with no input, its stdout and stderr captured, within
    /// `limit`; whatever it left running is killed.
    pub fn output(command: &mut Command, name: &str, limit: Duration) -> Output {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Self::spawn(command, name, limit).wait_with_output()
    }

    /// Runs `command` to its end with no input and the given stdout and stderr, within
    /// `limit`.
    pub fn status(command: &mut Command, name: &str, limit: Duration) -> ExitStatus {
        command.stdin(Stdio::null());
        Self::spawn(command, name, limit).wait()
    }

    /// The child, for its pipes and id.
    pub fn child(&mut self) -> &mut Child {
        &mut self.child
    }

    /// The child's process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Whether the deadline passed (and the group was killed).
    pub fn timed_out(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }

    /// Fails the test if the deadline passed; call it where a dead child shows up (a pipe
    /// closed early) to say why it died.
    pub fn check_deadline(&self) {
        assert!(
            !self.timed_out(),
            "{} ran past its {:?} deadline; killed it and everything it started",
            self.name,
            self.limit
        );
    }

    /// The child's status without waiting, once it exited.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().unwrap()
    }

    /// Waits for the child to exit (the watchdog ends the wait at the deadline); fails the
    /// test if the deadline passed.
    pub fn wait(&mut self) -> ExitStatus {
        let status = self.child.wait().unwrap();
        self.check_deadline();
        status
    }

    /// Waits for the child, reading its piped stdout and stderr meanwhile (so a full pipe
    /// never blocks it), then kills what it left in its group, which also closes pipes a
    /// straggler still held.
    pub fn wait_with_output(mut self) -> Output {
        let stdout = self.child.stdout.take().map(read_all);
        let stderr = self.child.stderr.take().map(read_all);
        let status = self.child.wait().unwrap();
        kill_group(self.child.id());
        let collect = |reader: Option<JoinHandle<Vec<u8>>>| {
            reader
                .map(|reader| reader.join().unwrap())
                .unwrap_or_default()
        };
        let output = Output {
            status,
            stdout: collect(stdout),
            stderr: collect(stderr),
        };
        assert!(
            !self.timed_out(),
            "{} ran past its {:?} deadline; killed it and everything it started\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.name,
            self.limit,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }
}

impl Drop for Bounded {
    fn drop(&mut self) {
        kill_group(self.child.id());
        let _ = self.child.wait();
        drop(self.stop.take());
        if let Some(watchdog) = self.watchdog.take() {
            let _ = watchdog.join();
        }
    }
}

/// Reads a pipe to its end on a thread of its own.
fn read_all(mut pipe: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        // A read error ends the capture; what was read so far is still shown.
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    })
}

/// SIGKILL to the process group `group` (the id of the child that leads it); a group already
/// gone is fine.
fn kill_group(group: u32) {
    use rustix::process::{Pid, Signal, kill_process_group};
    if let Some(pid) = i32::try_from(group).ok().and_then(Pid::from_raw) {
        let _ = kill_process_group(pid, Signal::KILL);
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_child_past_its_deadline_is_killed_with_what_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("sleeper.pid");
    // The shell starts a grandchild that would outlive it, then never exits itself.
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg("sleep 600 & echo $! > \"$1\"; while true; do sleep 0.05; done")
        .arg("sh")
        .arg(&pid_file);
    let mut bounded = Bounded::spawn(
        &mut command,
        "a shell that never ends",
        Duration::from_secs(1),
    );
    let status = bounded.child().wait().unwrap();
    assert!(bounded.timed_out(), "the deadline fired: {status}");
    let grandchild = std::fs::read_to_string(&pid_file).unwrap();
    let stat_file = std::path::Path::new("/proc")
        .join(grandchild.trim())
        .join("stat");
    // Gone, or a zombie until whoever adopted it reaps it.
    let is_dead = || {
        std::fs::read_to_string(&stat_file)
            .map_or(true, |stat| stat.split_whitespace().nth(2) == Some("Z"))
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !is_dead() {
        assert!(
            std::time::Instant::now() < deadline,
            "the grandchild {} still runs",
            grandchild.trim()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let message = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        bounded.check_deadline();
    }))
    .unwrap_err();
    let message = message.downcast_ref::<String>().unwrap();
    assert!(message.contains("a shell that never ends"), "{message}");
}
