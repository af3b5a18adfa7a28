//! `magic-context run -- <agent>` with small shell scripts as agents: the agent sees the
//! proxy's URL, its exit code and signals pass through, a proxy `run` started is gone once
//! the agent exits, and one already listening is used and left running.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::support::Machine;
use crate::support::deadline::Bounded;
use crate::support::servers::Server;

/// How long one `run` in these tests may take, agent included, before it is killed with its
/// agent and the test fails.
const RUN_DEADLINE: Duration = Duration::from_secs(120);

/// A `magic-context run` child, killed with its agent once the test is done or its deadline
/// passed.
type RunChild = Bounded;

/// The signal dispositions a test starts `run` with, given to `env` (GNU coreutils): the
/// forwarded signals at their defaults unless one is named ignored. A test must not depend
/// on what the suite inherited, which from a background job or `nohup` is SIGINT or SIGHUP
/// ignored.
fn dispositions(ignored: &[&str]) -> Vec<String> {
    let defaults: Vec<&str> = ["INT", "TERM", "HUP"]
        .into_iter()
        .filter(|signal| !ignored.contains(signal))
        .collect();
    let mut args = vec![format!("--default-signal={}", defaults.join(","))];
    if !ignored.is_empty() {
        args.push(format!("--ignore-signal={}", ignored.join(",")));
    }
    args
}

/// `magic-context ARGS` as a child in the machine's environment, PATH included so `sh`
/// and `sleep` are found, with the forwarded signals at their defaults.
fn spawn(machine: &Machine, args: &[&str], extra_env: &[(&str, &OsStr)]) -> RunChild {
    spawn_ignoring(&[], machine, args, extra_env)
}

/// [`spawn`] with the signals in `ignored` ignored when `run` starts, as `nohup` or a
/// shell's background job would leave them.
fn spawn_ignoring(
    ignored: &[&str],
    machine: &Machine,
    args: &[&str],
    extra_env: &[(&str, &OsStr)],
) -> RunChild {
    // `env` replaces itself with `run`, so the child's id is `run`'s.
    let mut command = Command::new("env");
    command
        .args(dispositions(ignored))
        .arg(env!("CARGO_BIN_EXE_magic-context"))
        .args(args)
        .current_dir(machine.path("work"))
        .env_clear()
        .env("HOME", machine.path("home"))
        .env("XDG_CONFIG_HOME", machine.path("xdg"))
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in extra_env {
        command.env(name, value);
    }
    let name = format!("magic-context {}", args.join(" "));
    Bounded::spawn(&mut command, &name, RUN_DEADLINE)
}

/// Waits for `path` to appear (the agent writes it once started) and returns its text.
fn wait_for_file(path: &Path, run: &mut RunChild) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && text.ends_with('\n')
        {
            return text;
        }
        if let Some(status) = run.try_wait() {
            let mut stderr = String::new();
            run.child()
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut stderr)
                .unwrap();
            panic!("run exited early ({status}): {stderr}");
        }
        assert!(
            Instant::now() < deadline,
            "the agent never wrote {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The health route's JSON at `base_url` (`http://ADDR`).
fn health(base_url: &str) -> serde_json::Value {
    let address = base_url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).unwrap();
    write!(
        stream,
        "GET /_magic-context/health HTTP/1.0\r\nHost: {address}\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.lines().next().unwrap().contains(" 200 "), "{head}");
    serde_json::from_str(body).unwrap()
}

fn finish(run: RunChild) -> (ExitStatus, String, String) {
    let output = run.wait_with_output();
    (
        output.status,
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

/// A loopback port nothing listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An agent that records its base URLs, waits for the test to say `go`, then exits 3.
const WAITING_AGENT: &str = r#"printf '%s %s\n' "$ANTHROPIC_BASE_URL" "$OPENAI_BASE_URL" > urls.txt
while [ ! -f go ]; do sleep 0.05; done
echo "agent done"
exit 3"#;

#[test]
fn the_agent_reaches_the_proxy_run_started_and_the_proxy_stops_with_it() {
    let machine = Machine::fresh();
    let port = free_port();
    let port_text = port.to_string();
    let mut child = spawn(
        &machine,
        &["run", "--port", &port_text, "--", "sh", "-c", WAITING_AGENT],
        &[],
    );
    let urls = wait_for_file(&machine.path("work/urls.txt"), &mut child);
    let base = format!("http://127.0.0.1:{port}");
    // An unknown agent gets both wires' variables, each in its SDK's convention.
    assert_eq!(urls, format!("{base} {base}/v1\n"));
    let answer = health(&base);
    assert_eq!(answer["service"], "magic-context");
    assert_eq!(answer["store"], "ok");

    std::fs::write(machine.path("work/go"), "").unwrap();
    let (status, stdout, stderr) = finish(child);
    assert_eq!(status.code(), Some(3), "{stderr}");
    assert_eq!(
        stdout, "agent done\n",
        "the agent's stdout passes through untouched"
    );
    // The proxy went with the agent: its port can be bound again.
    TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port)))
        .unwrap_or_else(|error| panic!("port {port} still taken after run exited: {error}"));
}

#[test]
fn without_a_port_the_proxy_gets_a_free_one_and_known_agents_their_own_variables() {
    let machine = Machine::fresh();
    // Named `claude`, so it is known as Claude Code: Anthropic's variable and no OpenAI one.
    let bin = machine.path("bin");
    std::fs::create_dir(&bin).unwrap();
    let agent = bin.join("claude");
    std::fs::write(
        &agent,
        "#!/bin/sh\nprintf '%s|%s|%s\\n' \"$ANTHROPIC_BASE_URL\" \"${OPENAI_BASE_URL:-unset}\" \"$DISABLE_AUTO_COMPACT\"\nexit 0\n",
    )
    .unwrap();
    make_executable(&agent);
    let path = std::env::join_paths(
        std::iter::once(bin.clone())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let (status, stdout, stderr) = finish(spawn(
        &machine,
        &["run", "--", "claude"],
        &[("PATH", path.as_os_str())],
    ));
    assert_eq!(status.code(), Some(0), "{stderr}");
    let fields: Vec<&str> = stdout.trim_end().split('|').collect();
    assert_eq!(fields[1..], ["unset", "1"], "{stdout}");
    let port: u16 = fields[0]
        .strip_prefix("http://127.0.0.1:")
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("not a loopback URL: {stdout}"));
    assert_ne!(port, 4141, "a free port, not the configured one");
}

#[test]
fn pi_gets_its_proxy_at_the_configured_address_that_setup_points_it_at() {
    let machine = Machine::fresh();
    let port = free_port();
    std::fs::create_dir_all(machine.user_file().parent().unwrap()).unwrap();
    std::fs::write(
        machine.user_file(),
        format!(r#"{{ "proxy": {{ "listen": "127.0.0.1:{port}" }} }}"#),
    )
    .unwrap();
    let bin = machine.path("bin");
    std::fs::create_dir(&bin).unwrap();
    let agent = bin.join("pi");
    std::fs::write(&agent, format!("#!/bin/sh\n{WAITING_AGENT}\n")).unwrap();
    make_executable(&agent);
    let path = std::env::join_paths(
        std::iter::once(bin.clone())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let mut child = spawn(
        &machine,
        &["run", "--", "pi"],
        &[("PATH", path.as_os_str())],
    );
    wait_for_file(&machine.path("work/urls.txt"), &mut child);
    assert_eq!(
        health(&format!("http://127.0.0.1:{port}"))["service"],
        "magic-context"
    );
    std::fs::write(machine.path("work/go"), "").unwrap();
    let (status, _, stderr) = finish(child);
    assert_eq!(status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("magic-context setup pi"), "{stderr}");
}

#[test]
fn exit_codes_and_signals_pass_through() {
    let machine = Machine::fresh();
    let run = |script: &str| finish(spawn(&machine, &["run", "--", "sh", "-c", script], &[]));

    let (status, _, stderr) = run("exit 7");
    assert_eq!(status.code(), Some(7), "{stderr}");
    // Killed by a signal: 128 + its number, as a shell reports it.
    let (status, _, stderr) = run("kill -KILL $$");
    assert_eq!(status.code(), Some(128 + 9), "{stderr}");
    let (status, _, stderr) = run("kill -TERM $$");
    assert_eq!(status.code(), Some(128 + 15), "{stderr}");
}

#[test]
fn signals_sent_to_run_reach_the_agent() {
    signals_reach_the_agent_when_run_starts_ignoring(&[]);
}

/// Started from a script's background job (or a job launcher that does the same), `run`
/// inherits SIGINT ignored; the agent still starts with SIGINT at its default, so every
/// forwarded signal reaches it, and the test ends within its deadline instead of waiting on
/// an agent whose `trap … INT` does nothing.
#[test]
fn signals_reach_the_agent_when_run_starts_with_sigint_ignored() {
    signals_reach_the_agent_when_run_starts_ignoring(&["INT"]);
}

/// Sends each forwarded signal to `run`, started with `ignored` ignored, and checks that the
/// agent's trap for it ran.
fn signals_reach_the_agent_when_run_starts_ignoring(ignored: &[&str]) {
    for (signal, number) in [("TERM", 15), ("HUP", 1), ("INT", 2)] {
        let machine = Machine::fresh();
        let agent = format!(
            r#"trap 'echo "got {signal}"; exit 40' {signal}
echo ready > ready.txt
while true; do sleep 0.05; done"#
        );
        let mut child = spawn_ignoring(ignored, &machine, &["run", "--", "sh", "-c", &agent], &[]);
        wait_for_file(&machine.path("work/ready.txt"), &mut child);
        let sent = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(child.id().to_string())
            .status()
            .unwrap();
        assert!(sent.success());
        let (status, stdout, stderr) = finish(child);
        assert_eq!(
            (status.code(), stdout.as_str()),
            (Some(40), format!("got {signal}\n").as_str()),
            "signal {number} with {ignored:?} ignored at the start: {stderr}"
        );
    }
}

/// The dispositions the agent starts with: SIGINT and SIGTERM at their defaults whatever
/// `run` inherited; SIGHUP ignored exactly when `run` started with it ignored, as under
/// `nohup`.
#[cfg(target_os = "linux")]
#[test]
fn the_agent_starts_with_default_dispositions_but_keeps_nohup() {
    // The agent's own ignored set: `grep` inherits what the shell inherited from `run`.
    const AGENT: &str = "grep '^SigIgn:' /proc/self/status > ignored.txt";
    for (ignored, agent_ignores) in [
        (&[][..], &[][..]),
        (&["INT", "TERM"][..], &[][..]),
        (&["INT", "TERM", "HUP"][..], &["HUP"][..]),
    ] {
        let machine = Machine::fresh();
        let (status, _, stderr) = finish(spawn_ignoring(
            ignored,
            &machine,
            &["run", "--", "sh", "-c", AGENT],
            &[],
        ));
        assert_eq!(status.code(), Some(0), "{stderr}");
        let line = std::fs::read_to_string(machine.path("work/ignored.txt")).unwrap();
        let mask = u64::from_str_radix(line.trim_start_matches("SigIgn:").trim(), 16).unwrap();
        let seen: Vec<&str> = [("HUP", 1), ("INT", 2), ("TERM", 15)]
            .into_iter()
            .filter(|(_, number)| mask & (1 << (number - 1)) != 0)
            .map(|(name, _)| name)
            .collect();
        assert_eq!(seen, agent_ignores, "run started with {ignored:?} ignored");
    }
}

#[test]
fn a_proxy_already_listening_is_used_and_left_running() {
    let machine = Machine::fresh();
    let data_dir = machine.path("data");
    let serve = Server::serve(&machine, "http://127.0.0.1:9", &data_dir, 200_000);
    let port = serve.base_url.rsplit(':').next().unwrap().to_owned();
    let (status, _, stderr) = finish(spawn(
        &machine,
        &[
            "run",
            "--port",
            &port,
            "--wire",
            "anthropic",
            "--",
            "sh",
            "-c",
            "echo \"$ANTHROPIC_BASE_URL ${OPENAI_BASE_URL:-none}\" > urls.txt",
        ],
        &[],
    ));
    assert_eq!(status.code(), Some(0), "{stderr}");
    let urls = std::fs::read_to_string(machine.path("work/urls.txt")).unwrap();
    assert_eq!(urls, format!("{} none\n", serve.base_url));
    // `run` did not start it, so it did not stop it.
    assert_eq!(health(&serve.base_url)["service"], "magic-context");
}

#[test]
fn mistakes_are_reported_before_the_agent_starts() {
    let machine = Machine::fresh();
    let run = machine.run(
        &["run", "--", "no-such-agent-anywhere"],
        &[("PATH", OsStr::new("/nonexistent"))],
    );
    assert_eq!(run.code, Some(127));
    assert!(
        run.stderr
            .contains("`no-such-agent-anywhere` was not found on PATH"),
        "{}",
        run.stderr
    );

    // Another program holds the port: it never answers as our proxy does.
    let squatter = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = squatter.local_addr().unwrap().port().to_string();
    let run = machine.run(
        &["run", "--port", &port, "--", "/bin/sh", "-c", "echo ran"],
        &[],
    );
    assert_eq!(run.code, Some(1));
    assert!(
        run.stdout.is_empty(),
        "the agent must not run: {}",
        run.stdout
    );
    assert!(
        run.stderr
            .contains(&format!("port {port} is in use by another program")),
        "{}",
        run.stderr
    );

    // A store that cannot be opened: every call would be refused, so the agent is not run.
    let data = machine.path("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("context.db"), "not a database\n".repeat(200)).unwrap();
    let run = machine.run(
        &["run", "--", "/bin/sh", "-c", "echo ran"],
        &[("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())],
    );
    assert_eq!(run.code, Some(1));
    assert!(
        run.stdout.is_empty(),
        "the agent must not run: {}",
        run.stdout
    );
    assert!(
        run.stderr.contains("cannot open the store"),
        "{}",
        run.stderr
    );
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// An agent that records the allocator settings it was given, then waits for `go`.
const ALLOCATOR_AGENT: &str = r#"printf '%s %s\n' "${MALLOC_ARENA_MAX-unset}" "${MAGIC_CONTEXT_SET_MALLOC_ARENA_MAX-unset}" > arenas.txt
while [ ! -f go ]; do sleep 0.05; done"#;

/// The proxy `run` hosts runs with one malloc arena, as `serve` does; the agent allocates as
/// it would without magic-context: no limit of ours, and the user's own limit kept.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn run_hosts_its_proxy_with_one_malloc_arena_and_gives_the_agent_its_own_settings() {
    let four = OsStr::new("4");
    for (user_limit, agent_sees, run_has) in [
        (None, "unset unset\n", &b"MALLOC_ARENA_MAX=1"[..]),
        (Some(four), "4 unset\n", b"MALLOC_ARENA_MAX=4"),
    ] {
        let machine = Machine::fresh();
        let extra_env: Vec<(&str, &OsStr)> = user_limit
            .map(|limit| ("MALLOC_ARENA_MAX", limit))
            .into_iter()
            .collect();
        let mut child = spawn(
            &machine,
            &["run", "--", "sh", "-c", ALLOCATOR_AGENT],
            &extra_env,
        );
        let seen = wait_for_file(&machine.path("work/arenas.txt"), &mut child);
        assert_eq!(seen, agent_sees);
        // Re-executed in place: the same process, now with the limit.
        let environ = std::fs::read(format!("/proc/{}/environ", child.id())).unwrap();
        assert!(
            environ
                .split(|&byte| byte == 0)
                .any(|variable| variable == run_has),
            "{}",
            String::from_utf8_lossy(&environ)
        );
        std::fs::write(machine.path("work/go"), "").unwrap();
        let (status, _, stderr) = finish(child);
        assert!(status.success(), "{stderr}");
    }
}

/// An agent that prints its URLs, then a line to stderr every 20 ms until the test says `go`.
const CHATTY_AGENT: &str = r#"printf '%s\n' "$ANTHROPIC_BASE_URL" > urls.txt
i=0
while [ ! -f go ]; do i=$((i+1)); echo "agent line $i" >&2; sleep 0.02; done
echo "agent done" >&2"#;

/// Once the agent runs, the terminal is the agent's: the proxy `run` hosts logs to `run.log`
/// in the data directory (its path said once, before the agent's first line), so a call that
/// fails upstream while the agent writes to stderr leaves no line of ours among the agent's;
/// `status` then shows where the log is.
#[test]
fn the_proxy_logs_to_its_file_and_never_between_the_agents_lines() {
    let machine = Machine::fresh();
    // An upstream that refuses connections: the call below fails there and is logged.
    let upstream = format!("http://127.0.0.1:{}", free_port());
    std::fs::create_dir_all(machine.user_file().parent().unwrap()).unwrap();
    std::fs::write(
        machine.user_file(),
        format!(
            r#"{{ "proxy": {{ "upstream_anthropic": "{upstream}", "upstream_openai": "{upstream}" }} }}"#
        ),
    )
    .unwrap();
    let data = machine.path("data");
    let mut child = spawn(
        &machine,
        &["run", "--log-level", "info", "--", "sh", "-c", CHATTY_AGENT],
        &[("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())],
    );
    let base = wait_for_file(&machine.path("work/urls.txt"), &mut child);
    let answer = post_message(base.trim());
    assert!(!answer.starts_with("HTTP/1.1 200"), "{answer}");
    std::fs::write(machine.path("work/go"), "").unwrap();
    let (status, _, stderr) = finish(child);
    assert_eq!(status.code(), Some(0), "{stderr}");

    let log_path = data.join("run.log");
    let lines: Vec<&str> = stderr.lines().collect();
    let first_agent_line = lines
        .iter()
        .position(|line| line.starts_with("agent line"))
        .unwrap_or_else(|| panic!("the agent wrote nothing: {stderr}"));
    let (before, after) = lines.split_at(first_agent_line);
    assert!(
        after
            .iter()
            .all(|line| line.starts_with("agent line ") || *line == "agent done"),
        "a line of ours among the agent's:\n{stderr}"
    );
    assert!(
        before
            .iter()
            .all(|line| line.starts_with("magic-context: ")),
        "{stderr}"
    );
    // Said once, before the start: where the log is, and that the provider cannot be reached.
    let said_log = format!("log in {}", log_path.display());
    assert_eq!(
        before
            .iter()
            .filter(|line| line.contains(&said_log))
            .count(),
        1,
        "{stderr}"
    );
    assert_eq!(
        before
            .iter()
            .filter(|line| line.contains(&format!(
                "cannot reach the Anthropic provider at {upstream}"
            )))
            .count(),
        1,
        "{stderr}"
    );
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        log.contains("/v1/messages"),
        "the failed call is in the log:\n{log}"
    );

    let status = machine.run(&["status"], &[("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())]);
    assert!(
        status
            .stdout
            .ends_with("\nrun's proxy log: [TMP]/data/run.log\n"),
        "{}",
        status.stdout
    );
    let json = machine
        .run(
            &["status", "--json"],
            &[("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())],
        )
        .success()
        .json();
    assert_eq!(json["run_log"], "[TMP]/data/run.log");
}

/// POSTs a small Messages call to the proxy at `base_url` and returns the raw answer.
fn post_message(base_url: &str) -> String {
    let address = base_url.trim_start_matches("http://");
    let body =
        r#"{"model":"claude-test","max_tokens":8,"messages":[{"role":"user","content":"hello"}]}"#;
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write!(
        stream,
        "POST /v1/messages HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         x-api-key: sk-ant-test\r\nanthropic-version: 2023-06-01\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}
