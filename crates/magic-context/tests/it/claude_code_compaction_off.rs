//! `compaction.enabled: false` with the real Claude Code: Claude Code reads a few work logs
//! with Bash through `magic-context serve` to `magic-context sim`, with a recording relay on
//! each side of the proxy. Every request the proxy sent upstream must be the request Claude
//! Code sent, byte for byte, with the head's two messages first in its message list: the
//! messages, their cache markers, the system prompt, the tools and every other field as the
//! client wrote them. The session is stored as `compaction_off`.
//!
//! A run takes a few seconds; set `MC_CLAUDE_BIN` to skip the npm install of Claude Code
//! (see [`crate::claude_code`]).

use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;

use mc_core::SessionMode;
use mc_store::Store;

use crate::claude_code_historian::work_logs::{self, FINAL_ANSWER};
use crate::support::Machine;
use crate::support::claude_session::{MAIN_MODEL, Script, claude_command, run_bounded};
use crate::support::recording_relay::{Relay, TURN_HEADER};
use crate::support::servers::Server;

/// Logs the session reads.
const STEPS: usize = 3;
/// The key both relays file Claude Code's requests under.
const KEY: &str = "claude-code";

#[derive(Deserialize)]
struct MessageList<'a> {
    #[serde(borrow)]
    messages: Vec<&'a RawValue>,
}

/// The raw bytes of each message of a body.
fn raw_messages(body: &[u8]) -> Vec<&str> {
    let list: MessageList<'_> = serde_json::from_slice(body).unwrap();
    list.messages.iter().map(|message| message.get()).collect()
}

/// `client` with `head` put first in its message list: what the proxy must have sent.
fn with_head(client: &[u8], head: &[&str]) -> Vec<u8> {
    let first = raw_messages(client)[0];
    let at = (first.as_ptr() as usize) - (client.as_ptr() as usize);
    let mut expected = client[..at].to_vec();
    for message in head {
        expected.extend_from_slice(message.as_bytes());
        expected.push(b',');
    }
    expected.extend_from_slice(&client[at..]);
    expected
}

#[test]
fn with_compaction_off_claude_codes_requests_go_up_as_sent_after_the_head() {
    let machine = Machine::fresh();
    let repo = machine.path("work/repo");
    work_logs::create(&repo, STEPS);
    let script = Script::install(&machine, "script.json", &work_logs::script(STEPS));
    let user_file = machine.user_file();
    std::fs::create_dir_all(user_file.parent().unwrap()).unwrap();
    std::fs::write(
        &user_file,
        json!({"compaction": {"enabled": false}}).to_string(),
    )
    .unwrap();
    let sim = Server::sim(&script.path, 200_000, 1.0);
    let upstream = Relay::start(&sim.base_url);
    let data = machine.path("data");
    let proxy = Server::serve(&machine, &upstream.base_url, &data, 200_000);
    let client = Relay::start(&proxy.base_url);
    let mut command = claude_command(&machine, &repo, &client.base_url);
    command
        .args(["-p", "Work through the repository step by step."])
        .args(["--model", MAIN_MODEL, "--dangerously-skip-permissions"])
        .env("ANTHROPIC_CUSTOM_HEADERS", format!("{TURN_HEADER}: {KEY}"));
    let status = run_bounded(&machine, command, "claude");
    let stdout = std::fs::read_to_string(machine.path("claude.stdout")).unwrap();
    let diagnostics = || {
        format!(
            "{status}\n--- stdout ---\n{stdout}\n--- stderr ---\n{}\n{}\n{}",
            std::fs::read_to_string(machine.path("claude.stderr")).unwrap(),
            sim.stderr(),
            proxy.stderr()
        )
    };
    assert!(
        status.success() && stdout.contains(FINAL_ANSWER),
        "{}",
        diagnostics()
    );

    let sent = client.log.bodies(KEY);
    let received = upstream.log.bodies(KEY);
    assert_eq!(sent.len(), received.len(), "{}", diagnostics());
    let main_calls = sent
        .iter()
        .filter(|body| String::from_utf8_lossy(body).contains(MAIN_MODEL))
        .count();
    assert!(main_calls > STEPS, "one call per step and the answer");
    for (client_body, upstream_body) in sent.iter().zip(&received) {
        let head = raw_messages(upstream_body)[..2].to_vec();
        assert!(
            head.iter()
                .all(|message| message.contains("\"role\":\"user\""))
        );
        assert!(
            *upstream_body == with_head(client_body, &head),
            "the upstream body is the client's with the head first\n--- client ---\n{}\n--- upstream ---\n{}",
            String::from_utf8_lossy(client_body),
            String::from_utf8_lossy(upstream_body)
        );
    }
    let store = Store::open(data.join("context.db")).unwrap();
    let sessions = store.read(|tx| tx.list_sessions(usize::MAX)).unwrap();
    assert!(!sessions.is_empty());
    assert!(
        sessions
            .iter()
            .all(|session| session.mode == SessionMode::CompactionOff),
        "{sessions:#?}"
    );
}
