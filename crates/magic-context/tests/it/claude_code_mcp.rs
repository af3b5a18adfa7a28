//! The agent tools end to end with the real Claude Code CLI: Claude Code runs through
//! `magic-context serve` against `magic-context sim`, with `magic-context mcp` registered by
//! `--mcp-config`; the simulated model calls our tools (`mcp__magic-context__ctx_*`), Claude
//! Code runs each through our MCP server, and the result it sends back in its next request
//! carries our answer, bound to the session the proxy manages for that conversation.
//!
//! One conversation in two `claude -p` runs of one Claude Code session (`--session-id`, then
//! `--resume`), with `magic-context wrapup` in between:
//! 1. the model says a codename and writes a session note, searches for the codename
//!    (nothing found: the session still sees it), writes a project memory and drops the
//!    search's result;
//! 2. `wrapup` summarises messages 0 to 3, so they leave the live context on the next
//!    request, whose pass busts and lands the drop: the search's result, still live, now
//!    reads `[dropped §6§: …]` upstream;
//! 3. in the resumed run the same search finds the codename in message 2 of this session,
//!    `ctx_expand` returns the original text of messages 0 to 3, and the note and the memory
//!    written through the first run's server read back through the second run's.
//!
//! Every scripted turn waits for a marker in the previous tool result, so a wrong answer ends
//! the run with the script's `SCRIPT-FELL-THROUGH` instead of the run's done marker: the
//! simulator itself checks what came back in each request. The test then compares each
//! answer in Claude Code's transcript whole, checks that each reached the simulator in the
//! request after its call (a relay between the proxy and the simulator records the bodies),
//! and reads the store.
//!
//! The MCP server is started through a small shell wrapper that records what Claude Code
//! gives it, then execs `magic-context mcp`. Measured with Claude Code 2.1.197: one server per
//! run, started in Claude Code's working directory, with Claude Code's whole environment (its
//! ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL included, so the server must never log its
//! environment), the config's `env` (here MAGIC_CONTEXT_DATA_DIR and XDG_CONFIG_HOME), and
//! CLAUDE_CODE_SESSION_ID (the session's id, the same after `--resume`), CLAUDE_PROJECT_DIR
//! (the working directory), CLAUDECODE=1, CLAUDE_CODE_ENTRYPOINT=sdk-cli, AI_AGENT (the
//! harness and its version), COREPACK_ENABLE_AUTO_PIN=0 and
//! NoDefaultCurrentDirectoryInExePath=1. No MAGIC_CONTEXT_SESSION: the binding comes from
//! CLAUDE_CODE_SESSION_ID alone.
//!
//! Offline: the servers listen on loopback and Claude Code's own traffic is switched off. A
//! run takes under 10 s after the build; set `MC_CLAUDE_BIN` to skip the npm install of
//! Claude Code (see [`crate::claude_code`]).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use mc_core::SessionId;
use mc_engine::tools::TOOL_GUIDANCE;
use mc_store::{NoteOwner, SessionRecord, Store};
use serde_json::{Value, json};

use crate::support::Machine;
use crate::support::claude_session::{MAIN_MODEL, Script, claude_command, run_bounded};
use crate::support::recording_relay::{Relay, TURN_HEADER};
use crate::support::servers::Server;
use crate::support::store_check::assert_tool_results_stored;
use crate::support::transcript::{self, ToolResult};

/// The MCP server's name in Claude Code's config; Claude Code calls its tools
/// `mcp__<name>__<tool>`.
const SERVER_NAME: &str = "magic-context";
/// Claude Code's id for the conversation (`--session-id` takes a UUID).
const CLIENT_SESSION: &str = "7d3f0a52-9c1e-4b6a-8f2d-5e4c3b2a1f09";
/// A word the model says once ([`codename_line`]), for the search to find.
const CODENAME: &str = "quokkazephyr4471";
const NOTE: &str = "check the lockfile before the release";
const MEMORY: &str = "Release builds run offline.";
/// Few enough that the search's result is out of protection when the model drops it.
const PROTECTED_TAGS: u64 = 1;
/// The tag of run 1's search result (message 5). Claude Code 2.1 opens with a user message
/// of two text parts (a reminder, the prompt: tags 1 and 2) and a system-role message (3);
/// then the model's text (4), the note's result (5, message 3), the search's result (6).
const SEARCH_RESULT_TAG: u32 = 6;
/// What `wrapup` leaves raw: the newest three tags (the search's, the memory's and the
/// drop's results), so messages 0 to 3 are summarised and the search's result stays live.
const KEEP_TAGS: &str = "3";
/// The key the relay files the proxy's requests under (Claude Code sends it as a custom
/// header, which the proxy passes on).
const RELAY_KEY: &str = "mcp-flow";
const FIRST_DONE: &str = "PHASE-1-DONE";
const SECOND_DONE: &str = "PHASE-2-DONE";
const FELL_THROUGH: &str = "SCRIPT-FELL-THROUGH";

#[test]
fn claude_code_runs_our_mcp_tools_on_the_proxys_session() {
    let run = Conversation::run();
    let results = transcript::tool_results(&transcript::session_file(&run.machine.path("home")));
    assert_eq!(results.len(), run.script.tool_calls, "{results:#?}");
    assert!(
        results.iter().all(|result| !result.is_error),
        "{results:#?}"
    );
    assert_answers(&results, &run.session.id);
    let bodies = run.upstream_bodies();
    assert_upstream(&bodies, &results);
    assert_drop_landed_upstream(&bodies, run.first_run_calls);
    // The raw log holds every answer, whole.
    assert_tool_results_stored(&run.store_path(), &results);
    run.assert_server_wrote_for_the_proxys_session();
    assert_claude_code_bound_the_servers(&run.machine, &run.repo);
}

/// The two runs of one Claude Code session through the proxy, and `wrapup` between them.
struct Conversation {
    machine: Machine,
    repo: PathBuf,
    script: Script,
    /// The store's only session, read after run 1.
    session: SessionRecord,
    /// Main-model calls of run 1: run 2's first request is the session's pass of this number.
    first_run_calls: usize,
    /// Between the proxy and the simulator: what the model was sent.
    relay: Relay,
    _sim: Server,
    _proxy: Server,
}

impl Conversation {
    fn run() -> Self {
        let machine = Machine::fresh();
        let repo = machine.path("work/repo");
        std::fs::create_dir_all(&repo).unwrap();
        let repo = repo.canonicalize().unwrap();
        let data = machine.path("data");
        let script = Script::install(&machine, "script.json", &script().to_string());
        let sim = Server::sim(&script.path, 200_000, 1.0);
        write_user_config(&machine, &sim.base_url);
        let relay = Relay::start(&sim.base_url);
        let proxy = Server::serve(&machine, &relay.base_url, &data, 200_000);
        let mcp_config = install_mcp_config(&machine, &data);
        let run_claude = |name: &str, args: &[&str], done: &str| {
            let mut command = claude_command(&machine, &repo, &proxy.base_url);
            command
                .args(args)
                .args(["--model", MAIN_MODEL, "--dangerously-skip-permissions"])
                .arg("--mcp-config")
                .arg(&mcp_config)
                .arg("--strict-mcp-config")
                .env(
                    "ANTHROPIC_CUSTOM_HEADERS",
                    format!("{TURN_HEADER}: {RELAY_KEY}"),
                );
            let status = run_bounded(&machine, command, name);
            let read = |ext: &str| {
                std::fs::read_to_string(machine.path(&format!("{name}.{ext}"))).unwrap()
            };
            let stdout = read("stdout");
            assert!(
                status.success() && stdout.contains(done),
                "{name} run: {status}, not `{done}` (`{FELL_THROUGH}` means a tool's answer \
                 lacked the marker the next turn waits for)\n--- stdout ---\n{stdout}\n\
                 --- stderr ---\n{}\n--- tool answers so far ---\n{}\n{}\n{}",
                read("stderr"),
                answers_so_far(&machine.path("home")),
                sim.stderr(),
                proxy.stderr()
            );
        };
        run_claude(
            "first",
            &[
                "-p",
                "PHASE-1: note what matters for the release.",
                "--session-id",
                CLIENT_SESSION,
            ],
            FIRST_DONE,
        );
        let first_run_calls = sim
            .ledger()
            .iter()
            .filter(|call| call.model == MAIN_MODEL)
            .count();
        let session = the_one_session(&data);
        let wrapup = machine
            .run(
                &[
                    "wrapup",
                    "--session",
                    session.id.as_str(),
                    "--keep",
                    KEEP_TAGS,
                    "--json",
                ],
                &[("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())],
            )
            .success()
            .json();
        // Messages 0 to 3 leave the live context; the search's call and result stay.
        assert_eq!(wrapup["summarised_until"], 4, "{wrapup:#}");
        run_claude(
            "second",
            &[
                "-p",
                "PHASE-2: what was the release codename?",
                "--resume",
                CLIENT_SESSION,
            ],
            SECOND_DONE,
        );
        Self {
            machine,
            repo,
            script,
            session,
            first_run_calls,
            relay,
            _sim: sim,
            _proxy: proxy,
        }
    }

    /// Every request the simulator got from the proxy, in order.
    fn upstream_bodies(&self) -> Vec<Value> {
        self.relay
            .log
            .bodies(RELAY_KEY)
            .iter()
            .map(|body| serde_json::from_slice(body).unwrap())
            .collect()
    }

    fn store_path(&self) -> PathBuf {
        self.machine.path("data/context.db")
    }

    /// The server's writes went to the proxy's session and project: the note is theirs, and
    /// the drop it queued was landed by the proxy's next busting pass, the first of run 2
    /// (after wrapup's flush).
    fn assert_server_wrote_for_the_proxys_session(&self) {
        let session = &self.session;
        assert!(session.project.is_some(), "{session:#?}");
        let (notes, drops) = Store::open(self.store_path())
            .unwrap()
            .read(|tx| {
                let owner = NoteOwner {
                    session: Some(&session.id),
                    project: session.project.as_ref(),
                };
                Ok((tx.notes(owner)?, tx.drops(&session.id)?))
            })
            .unwrap();
        assert_eq!(notes.len(), 1, "{notes:#?}");
        assert_eq!(notes[0].session.as_ref(), Some(&session.id));
        assert_eq!(notes[0].project, session.project);
        let asked: Vec<_> = drops
            .iter()
            .filter(|drop| drop.source == "ctx_reduce")
            .map(|drop| (drop.tag.0, drop.landed_pass))
            .collect();
        assert_eq!(
            asked,
            [(SEARCH_RESULT_TAG, Some(self.first_run_calls as u64))],
            "{drops:#?}"
        );
    }
}

/// What each tool answered, in order, as Claude Code sent it back.
fn assert_answers(results: &[ToolResult], lane: &SessionId) {
    let text = |index: usize| results[index].texts.concat();
    // Run 1: everything is live, so the search hides the message that holds the codename.
    assert_eq!(text(0), "saved note 1; read your notes with action read");
    assert_eq!(text(1), "no results outside what you already see");
    assert_eq!(text(2), "saved as memory 1 (CONSTRAINTS)");
    assert_eq!(
        text(3),
        format!("queued §{SEARCH_RESULT_TAG}§: dropped from your context on an upcoming turn\n")
    );
    // Run 2: summarised, the message is found in this session and expands to its words.
    let found = text(4);
    assert!(
        found.contains(&format!(
            "· session {lane}, message 2\n   {}",
            codename_line()
        )),
        "{found}"
    );
    let expanded = text(5);
    let note_call = json!({"action": "write", "content": NOTE});
    assert!(
        expanded.starts_with("Transcript of messages 0 to 3 ")
            && expanded.contains("PHASE-1: note what matters for the release.\n#1 ")
            && expanded.contains(&format!(
                "\n#2 assistant: {} → mcp__{SERVER_NAME}__ctx_note({note_call})\n",
                codename_line()
            ))
            && expanded.ends_with("\n#3 user: ← saved note 1; read your notes with action read\n"),
        "{expanded}"
    );
    // A new server process, the same session: run 1's note and memory read back.
    assert_eq!(text(6), format!("[1] {NOTE}\n"));
    assert_eq!(text(7), format!("[1] CONSTRAINTS (active): {MEMORY}\n"));
}

/// What the model was sent: every request offers our five tools and their guidance once,
/// under Claude Code's names for the MCP server's tools (the proxy adds none of its own
/// beside them), and each
/// request after a call carries that call's answer, as Claude Code recorded it, behind the
/// engine's tag.
fn assert_upstream(bodies: &[Value], results: &[ToolResult]) {
    let mut seen = std::collections::HashSet::new();
    let mut answered = Vec::new();
    let mut new_per_request = Vec::new();
    for body in bodies {
        let mut ours: Vec<&str> = body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap())
            .filter(|name| name.contains("ctx_"))
            .collect();
        ours.sort_unstable();
        assert_eq!(
            ours,
            [
                "ctx_expand",
                "ctx_memory",
                "ctx_note",
                "ctx_reduce",
                "ctx_search"
            ]
            .map(|tool| format!("mcp__{SERVER_NAME}__{tool}")),
        );
        // The guidance comes once too: the server's instructions, which Claude Code puts in
        // a system-role message of the conversation (the proxy pins it in the head once
        // summarised), not in the system prompt.
        let escaped = serde_json::to_string(TOOL_GUIDANCE.trim_end()).unwrap();
        let guidance = escaped.trim_matches('"');
        assert_eq!(body.to_string().matches(guidance).count(), 1, "{body:#}");
        assert!(!block_text(&body["system"]).contains(TOOL_GUIDANCE.trim_end()));
        let blocks = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|message| message["content"].as_array())
            .flatten()
            .filter(|block| block["type"] == "tool_result");
        let before = answered.len();
        for block in blocks {
            if seen.insert(block["tool_use_id"].as_str().unwrap().to_owned()) {
                answered.push(block_text(&block["content"]));
            }
        }
        new_per_request.push(answered.len() - before);
    }
    // Each run's first request answers nothing; every later one answers the call before it.
    assert_eq!(new_per_request, [0, 1, 1, 1, 1, 0, 1, 1, 1, 1]);
    assert_eq!(answered.len(), results.len(), "{answered:#?}");
    for (sent, result) in answered.iter().zip(results) {
        let untagged = sent
            .strip_prefix('§')
            .and_then(|rest| rest.split_once("§ "))
            .filter(|(tag, _)| tag.parse::<u64>().is_ok())
            .map(|(_, text)| text);
        assert_eq!(untagged, Some(result.texts.concat().as_str()), "{sent}");
    }
}

/// The search's result reaches the model whole until the pass that lands the model's drop
/// (run 2's first request), and as the placeholder from then on.
fn assert_drop_landed_upstream(bodies: &[Value], landing_request: usize) {
    let original = format!("§{SEARCH_RESULT_TAG}§ no results outside what you already see");
    // The placeholder names the call that went (`[dropped §6§: mcp__…ctx_search …, 1 line]`).
    let placeholder = format!("[dropped §{SEARCH_RESULT_TAG}§: mcp__{SERVER_NAME}__ctx_search ");
    let shown: Vec<(bool, bool)> = bodies
        .iter()
        .map(|body| {
            let text = body.to_string();
            (text.contains(&original), text.contains(&placeholder))
        })
        .collect();
    let expected: Vec<(bool, bool)> = (0..bodies.len())
        // The result exists from run 1's third request on.
        .map(|request| match request {
            0 | 1 => (false, false),
            request if request < landing_request => (true, false),
            _ => (false, true),
        })
        .collect();
    assert_eq!(shown, expected, "(original, placeholder) per request");
}

/// The text of a content field (a tool result's, the system prompt's): a string, or its
/// text blocks joined.
fn block_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        blocks => blocks
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|block| block["text"].as_str())
            .collect(),
    }
}

/// The tool answers in Claude Code's transcript so far, for a failure message.
fn answers_so_far(home: &Path) -> String {
    if !home.join(".claude/projects").is_dir() {
        return "(no transcript)".to_owned();
    }
    let results = transcript::tool_results(&transcript::session_file(home));
    let lines: Vec<String> = results
        .iter()
        .map(|result| format!("{:?}", result.texts.concat()))
        .collect();
    lines.join("\n")
}

/// The script: run 1's turns wait for `PHASE-1` in the prompt, run 2's for `PHASE-2`, and
/// each later turn for the marker its previous tool's answer must hold.
fn script() -> Value {
    let call = |tool: &str, input: Value| {
        let name = format!("mcp__{SERVER_NAME}__{tool}");
        json!({"type": "tool_use", "name": name, "input": input})
    };
    let after_result = |marker: &str, content: Value| json!({"when": {"last_tool_result_contains": marker}, "content": [content]});
    let say = |text: &str| json!({"type": "text", "text": text});
    let search = || call("ctx_search", json!({"query": CODENAME}));
    json!({
        "turns": [
            {
                "when": {"last_user_text_contains": "PHASE-1"},
                "content": [
                    say(&codename_line()),
                    call("ctx_note", json!({"action": "write", "content": NOTE})),
                ],
            },
            after_result("saved note", search()),
            after_result(
                "no results outside what you already see",
                call(
                    "ctx_memory",
                    json!({"action": "write", "category": "constraints", "content": MEMORY}),
                ),
            ),
            after_result(
                "saved as memory",
                call("ctx_reduce", json!({"drop": SEARCH_RESULT_TAG.to_string()})),
            ),
            after_result(&format!("queued §{SEARCH_RESULT_TAG}§"), say(FIRST_DONE)),
            {"when": {"last_user_text_contains": "PHASE-2"}, "content": [search()]},
            after_result(
                &format!("session cc-{CLIENT_SESSION}-"),
                call("ctx_expand", json!({"start": 0, "end": 3})),
            ),
            after_result(CODENAME, call("ctx_note", json!({"action": "read"}))),
            after_result(NOTE, call("ctx_memory", json!({"action": "list"}))),
            after_result(MEMORY, say(SECOND_DONE)),
        ],
        "final_text": FELL_THROUGH,
    })
}

/// What the model says in its first answer (message 2), the only place the codename is
/// said: not the prompt, which the head keeps verbatim once summarised.
fn codename_line() -> String {
    format!("The release codename is {CODENAME}; noting a check for later.")
}

/// The user's configuration, read by the proxy, `wrapup` and the MCP server alike: the
/// historian (`wrapup`'s) at the simulator, which answers its calls honestly, and only the
/// newest [`PROTECTED_TAGS`] tags protected, so the model's drop lands on the next bust.
fn write_user_config(machine: &Machine, base_url: &str) {
    let file = machine.user_file();
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let config = json!({"historian": {
        "endpoint": base_url,
        "wire": "anthropic",
        "model": "claude-haiku-4-5",
    }, "reduction": {"protected_tags": PROTECTED_TAGS}});
    std::fs::write(file, config.to_string()).unwrap();
}

/// Writes the wrapper that records each server's start (see [`ServerStart`]) and the
/// `--mcp-config` file registering it, with the proxy's store and the user's configuration
/// (Claude Code runs here with no XDG_CONFIG_HOME of its own); returns the config's path.
fn install_mcp_config(machine: &Machine, data: &Path) -> PathBuf {
    let records = machine.path("mcp-starts");
    std::fs::create_dir(&records).unwrap();
    let wrapper = machine.path("mcp-server.sh");
    // Names only, but for the two values checked: the environment holds the API key.
    let text = format!(
        "#!/bin/sh\n\
         record=\"{records}/$$\"\n\
         mkdir \"$record\"\n\
         env | sed -n 's/^\\([A-Za-z_][A-Za-z0-9_]*\\)=.*/\\1/p' | sort > \"$record/names\"\n\
         printf '%s' \"${{CLAUDE_CODE_SESSION_ID-}}\" > \"$record/session\"\n\
         printf '%s' \"${{CLAUDE_PROJECT_DIR-}}\" > \"$record/project_dir\"\n\
         pwd -P > \"$record/cwd\"\n\
         exec \"{binary}\" mcp\n",
        records = records.display(),
        binary = env!("CARGO_BIN_EXE_magic-context"),
    );
    std::fs::write(&wrapper, text).unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = json!({"mcpServers": {SERVER_NAME: {
        "type": "stdio",
        "command": wrapper,
        "args": [],
        "env": {"MAGIC_CONTEXT_DATA_DIR": data, "XDG_CONFIG_HOME": machine.path("xdg")},
    }}});
    let path = machine.path("mcp-config.json");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

/// What Claude Code gave one MCP server it started.
#[derive(Debug)]
struct ServerStart {
    /// The names of its environment variables.
    names: Vec<String>,
    /// CLAUDE_CODE_SESSION_ID, empty when unset.
    session: String,
    /// CLAUDE_PROJECT_DIR, empty when unset.
    project_dir: String,
    /// Its working directory, symlinks resolved.
    cwd: String,
}

/// Claude Code started one server per run, in the repository, with the session's id: what
/// binds the tools to the proxy's session for that conversation.
fn assert_claude_code_bound_the_servers(machine: &Machine, repo: &Path) {
    let starts: Vec<ServerStart> = std::fs::read_dir(machine.path("mcp-starts"))
        .unwrap()
        .map(|entry| {
            let dir = entry.unwrap().path();
            let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
            ServerStart {
                names: read("names").lines().map(str::to_owned).collect(),
                session: read("session"),
                project_dir: read("project_dir"),
                cwd: read("cwd").trim_end().to_owned(),
            }
        })
        .collect();
    eprintln!("MCP server starts: {starts:#?}");
    assert_eq!(starts.len(), 2, "one server per run: {starts:#?}");
    let repo = repo.to_str().unwrap();
    for start in &starts {
        assert_eq!(start.session, CLIENT_SESSION, "{start:#?}");
        assert_eq!(start.project_dir, repo, "{start:#?}");
        assert_eq!(start.cwd, repo, "{start:#?}");
        for name in ["CLAUDE_CODE_SESSION_ID", "MAGIC_CONTEXT_DATA_DIR", "HOME"] {
            assert!(start.names.iter().any(|n| n == name), "{name}: {start:#?}");
        }
        assert!(
            !start.names.iter().any(|n| n == "MAGIC_CONTEXT_SESSION"),
            "{start:#?}"
        );
    }
}

/// The store's only session: the main lane the proxy keyed on Claude Code's id.
fn the_one_session(data: &Path) -> SessionRecord {
    let mut sessions = Store::open(data.join("context.db"))
        .unwrap()
        .read(|tx| tx.list_sessions(usize::MAX))
        .unwrap();
    assert_eq!(sessions.len(), 1, "{sessions:#?}");
    let session = sessions.remove(0);
    assert!(
        session
            .id
            .as_str()
            .starts_with(&format!("cc-{CLIENT_SESSION}-")),
        "{session:#?}"
    );
    session
}
