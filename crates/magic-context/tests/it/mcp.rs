//! `mcp`: a client speaking JSON-RPC to the built binary over stdio, as Claude Code would:
//! initialize, list the tools, and call each with good and bad input, against a store seeded
//! through the engine library with two lanes of one Claude Code session.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{ChildStdin, ChildStdout, Command, Stdio};

use mc_core::breakpoints::CacheTtlChoice;
use mc_core::config::Config;
use mc_core::{Host, Message, Part, ProjectId, Role, SessionId};
use mc_engine::{Engine, PassRequest};
use mc_store::Store;
use serde_json::{Value, json};

use crate::support::Machine;
use crate::support::deadline::{Bounded, QUICK};

/// Claude Code's id for the conversation; the proxy stores its lanes as `cc-<id>-<lane>`.
const CLIENT_ID: &str = "5f1c-client";

/// Stores `turns` tool-using turns as session `id`, through one engine pass.
fn seed(data: &Path, id: &str, turns: usize) {
    seed_in(data, id, turns, None, 1_795_952_640_000);
}

/// [`seed`] for `project`, as a request the proxy served at `now_ms`.
fn seed_in(data: &Path, id: &str, turns: usize, project: Option<&ProjectId>, now_ms: u64) {
    let mut messages = vec![Message::new(Role::User, vec![Part::text("fix the build")])];
    for turn in 0..turns {
        let call = format!("toolu_{turn}");
        messages.push(Message::new(
            Role::Assistant,
            vec![Part::ToolCall {
                id: call.clone(),
                name: "Bash".into(),
                input: json!({"command": "cargo build"}),
            }],
        ));
        messages.push(Message::new(
            Role::User,
            vec![Part::ToolResult {
                call_id: call,
                content: vec![Part::text(format!("linker error in crate number {turn}"))],
                is_error: false,
            }],
        ));
    }
    let store = Store::open(data.join("context.db")).unwrap();
    let engine = Engine::new(store, Config::default());
    let count = |text: &str| text.len() as u64 / 4;
    engine
        .pass(&PassRequest {
            session: &SessionId::new(id).unwrap(),
            host: Host::ClaudeCode,
            mode: mc_core::SessionMode::Primary,
            spawned_by: None,
            continues: None,
            project,
            model: "claude-sonnet-4-5",
            prefix_identity: "system",
            system_blocks: 1,
            messages: &messages,
            chain: None,
            now_ms,
            usable_window: Some(200_000),
            fixed_tokens: 0,
            last_usage_tokens: None,
            last_usage_pass: None,
            operator_flush: false,
            reduce_tool: false,
            project_docs: &[],
            client_ttl: CacheTtlChoice::Default,
            count_text: &count,
        })
        .unwrap();
}

/// The server as a child process, and a line-oriented JSON-RPC client of it.
struct Client {
    /// The instructions the server gave at initialize.
    instructions: String,
    child: Bounded,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Client {
    fn start(machine: &Machine, data: &Path, env: &[(&str, &str)]) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_magic-context"));
        command
            .arg("mcp")
            .current_dir(machine.path("work"))
            .env_clear()
            .env("HOME", machine.path("home"))
            .env("XDG_CONFIG_HOME", machine.path("xdg"))
            .env("MAGIC_CONTEXT_DATA_DIR", data)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = Bounded::spawn(&mut command, "magic-context mcp", QUICK);
        let stdin = child.child().stdin.take().unwrap();
        let stdout = BufReader::new(child.child().stdout.take().unwrap());
        let mut client = Self {
            instructions: String::new(),
            child,
            stdin,
            stdout,
            next_id: 1,
        };
        let init = client.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "it", "version": "1"}
            }),
        );
        assert_eq!(
            init["result"]["serverInfo"]["name"], "magic-context",
            "{init}"
        );
        assert!(
            init["result"]["capabilities"]["tools"].is_object(),
            "{init}"
        );
        client.instructions = init["result"]["instructions"].as_str().unwrap().to_owned();
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and reads lines until its response (skipping notifications).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let read = self.stdout.read_line(&mut line).unwrap();
            self.child.check_deadline();
            assert!(read > 0, "server closed stdout");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    /// Calls a tool; returns its text and whether it was an error result.
    fn call(&mut self, name: &str, arguments: Value) -> (String, bool) {
        let response = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        let result = &response["result"];
        assert!(
            result.is_object(),
            "a protocol error instead of a result: {response}"
        );
        let text = result["content"][0]["text"].as_str().unwrap().to_owned();
        (text, result["isError"] == json!(true))
    }

    fn close(mut self) {
        drop(self.stdin);
        let status = self.child.wait();
        assert!(status.success(), "{status}");
    }
}

fn seeded() -> (Machine, std::path::PathBuf) {
    let machine = Machine::fresh();
    let data = machine.path("data");
    seed(&data, &format!("cc-{CLIENT_ID}-a1b2c3d4e5f6"), 6);
    // A side call of the same client (a title request): one short lane.
    seed(&data, &format!("cc-{CLIENT_ID}-0f0f0f0f0f0f"), 0);
    (machine, data)
}

#[test]
fn lists_five_tools_with_object_schemas() {
    let (machine, data) = seeded();
    let mut client = Client::start(&machine, &data, &[]);
    let listed = client.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "ctx_reduce",
            "ctx_expand",
            "ctx_note",
            "ctx_memory",
            "ctx_search"
        ]
    );
    for tool in tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert!(tool["description"].as_str().unwrap().len() > 40, "{tool}");
    }
    assert!(
        client.instructions.contains("§N§"),
        "{}",
        client.instructions
    );
    client.close();
}

/// With the engine's compaction off nothing is tagged: `ctx_reduce` could only refuse, so
/// it is not listed, and the instructions name neither tags nor drops.
#[test]
fn with_compaction_off_every_tool_but_reduce_is_listed() {
    let (machine, data) = seeded();
    let config = machine.path("compaction-off.jsonc");
    std::fs::write(&config, r#"{"compaction": {"enabled": false}}"#).unwrap();
    let mut client = Client::start(
        &machine,
        &data,
        &[("MAGIC_CONTEXT_CONFIG", config.to_str().unwrap())],
    );
    let listed = client.request("tools/list", json!({}));
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["ctx_expand", "ctx_note", "ctx_memory", "ctx_search"]
    );
    assert_eq!(
        client.instructions,
        mc_engine::tools::HOST_COMPACTS_GUIDANCE
    );
    client.close();
}

#[test]
fn every_tool_answers_good_and_bad_input_on_the_main_lane() {
    let (machine, data) = seeded();
    let mut client = Client::start(&machine, &data, &[("CLAUDE_CODE_SESSION_ID", CLIENT_ID)]);

    // The main lane has 13 tags, all within the default 20 protected; the side lane has
    // one. Tag 5 exists only on the main lane, so deferring it proves the lane chosen.
    let (text, error) = client.call("ctx_reduce", json!({"drop": "2,5"}));
    assert!(!error, "{text}");
    assert!(text.starts_with("deferred §2§ §5§"), "{text}");
    let (text, error) = client.call("ctx_reduce", json!({"drop": "9-3,x"}));
    assert!(error && text.contains("9-3"), "{text}");

    let (text, error) = client.call("ctx_expand", json!({"start": 0, "end": 4}));
    assert!(
        !error && text.contains("still in your live context"),
        "{text}"
    );
    let (text, error) = client.call("ctx_expand", json!({"message": 99}));
    assert!(error && text.contains("messages 0 to 12"), "{text}");

    let (text, error) = client.call(
        "ctx_note",
        json!({"action": "write", "content": "rerun the linker"}),
    );
    assert!(!error, "{text}");
    let (text, error) = client.call(
        "ctx_note",
        json!({"action": "write", "content": "check caches", "surface_condition": "when Cargo.lock changes"}),
    );
    assert!(!error && text.contains("pending"), "{text}");
    let (text, error) = client.call("ctx_note", json!({"action": "dismiss"}));
    assert!(error && text.contains("note_id"), "{text}");

    let memory =
        json!({"action": "write", "category": "constraints", "content": "Builds run offline."});
    let (text, error) = client.call("ctx_memory", memory.clone());
    assert_eq!(
        (text.as_str(), error),
        ("saved as memory 1 (CONSTRAINTS)", false)
    );
    let (text, error) = client.call("ctx_memory", memory);
    assert!(!error && text.contains("already says this"), "{text}");
    let (text, error) = client.call(
        "ctx_memory",
        json!({"action": "write", "category": "moods"}),
    );
    assert!(error && text.contains("unknown category"), "{text}");

    let (text, error) = client.call("ctx_search", json!({"query": "offline builds"}));
    assert!(!error && text.contains("memory 1 (CONSTRAINTS)"), "{text}");
    let (text, error) = client.call("ctx_search", json!({"query": "linker", "limit": 500}));
    assert!(error && text.contains("limit"), "{text}");

    let (text, error) = client.call("ctx_reduce", json!({"tags": "1"}));
    assert!(error && text.contains("invalid arguments"), "{text}");
    client.close();
}

#[test]
fn without_a_session_memory_works_and_the_rest_say_why() {
    let (machine, data) = seeded();
    let mut client = Client::start(&machine, &data, &[]);
    let (text, error) = client.call("ctx_expand", json!({"message": 1}));
    assert!(error && text.contains("MAGIC_CONTEXT_SESSION"), "{text}");
    let (text, error) = client.call("ctx_memory", json!({"action": "list"}));
    assert_eq!((text.as_str(), error), ("no memories yet", false));
    client.close();
}

/// A host that passes its MCP server no conversation id (Codex, OpenCode): the server acts
/// for the project's one conversation the proxy is serving now, and says so when there are
/// several.
#[test]
fn without_a_session_id_the_projects_one_live_conversation_is_used() {
    let (machine, data) = seeded();
    let project = mc_proxy::identify_project(&machine.path("work")).unwrap();
    let now_ms = u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    // Long finished, in the same project: not live.
    seed_in(&data, "codex-old", 2, Some(&project), now_ms - 3_600_000);
    seed_in(&data, "codex-live", 3, Some(&project), now_ms);
    let mut client = Client::start(&machine, &data, &[]);
    let (text, error) = client.call("ctx_expand", json!({"message": 1}));
    // It found the session: the message is there, and still in the conversation's view.
    assert!(
        !error && text.contains("still in your live context"),
        "{text}"
    );
    client.close();

    seed_in(&data, "codex-other", 1, Some(&project), now_ms);
    let mut client = Client::start(&machine, &data, &[]);
    let (text, error) = client.call("ctx_expand", json!({"message": 1}));
    assert!(error && text.contains("more than one"), "{text}");
    client.close();
}

/// A Task subagent's lane of the same Claude Code id may hold more messages than the main
/// conversation; the tools still act for the main one.
#[test]
fn a_longer_subagent_lane_does_not_take_the_tools_from_the_main_lane() {
    let (machine, data) = seeded();
    let subagent = SessionId::new(format!("cc-{CLIENT_ID}-5ab5ab5ab5ab")).unwrap();
    seed(&data, subagent.as_str(), 20);
    let main = SessionId::new(format!("cc-{CLIENT_ID}-a1b2c3d4e5f6")).unwrap();
    Store::open(data.join("context.db"))
        .unwrap()
        .write(|tx| tx.set_session_mode(&subagent, mc_core::SessionMode::Subagent, Some(&main)))
        .unwrap();
    let mut client = Client::start(&machine, &data, &[("CLAUDE_CODE_SESSION_ID", CLIENT_ID)]);
    // The main lane holds messages 0 to 12; the subagent's, 0 to 40.
    let (text, error) = client.call("ctx_expand", json!({"message": 99}));
    assert!(error && text.contains("messages 0 to 12"), "{text}");
    client.close();
}
