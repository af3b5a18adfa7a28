//! Each tool against a real store in a tempdir, driven by one engine pass so tags exist as
//! the proxy would have assigned them.

use mc_core::breakpoints::CacheTtlChoice;
use mc_core::config::Config;
use mc_core::{Host, Message, Part, ProjectId, Role, SessionId};
use mc_store::Store;
use serde_json::{Value, json};

use super::*;
use crate::{EngineState, PassOutcome, PassRequest};

const NOW: i64 = 1_795_952_640_000;

struct Fixture {
    engine: Engine,
    session: SessionId,
    project: ProjectId,
    _dir: tempfile::TempDir,
}

impl Fixture {
    /// A session of `turns` user/assistant exchanges with tool calls, after one pass.
    fn new(turns: usize) -> Self {
        Self::with_config(turns, |_| {})
    }

    /// [`Self::new`] with the configuration `adjust` made.
    fn with_config(turns: usize, adjust: impl FnOnce(&mut Config)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        let mut config = Config::default();
        config.reduction.protected_tags = 2;
        adjust(&mut config);
        let engine = Engine::new(store, config);
        let session = SessionId::new("cc-tools-test").unwrap();
        let project = ProjectId::new("project-a").unwrap();
        let fixture = Self {
            engine,
            session,
            project,
            _dir: dir,
        };
        fixture.pass(&conversation(turns));
        fixture
    }

    fn pass(&self, messages: &[Message]) -> PassOutcome {
        let count = |text: &str| text.len() as u64 / 4;
        self.engine
            .pass(&PassRequest {
                session: &self.session,
                host: Host::ClaudeCode,
                mode: mc_core::SessionMode::Primary,
                spawned_by: None,
                continues: None,
                project: Some(&self.project),
                model: "claude-sonnet-4-5",
                prefix_identity: "system-v1",
                system_blocks: 1,
                messages,
                chain: None,
                now_ms: NOW as u64,
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
            .unwrap()
    }

    fn ctx(&self) -> ToolContext<'_> {
        ToolContext {
            engine: &self.engine,
            project: Some(self.project.clone()),
            session: Some(self.session.clone()),
            semantic: None,
            now_ms: NOW,
        }
    }

    fn call(&self, tool: &str, args: Value) -> ToolAnswer {
        call_tool(&self.ctx(), tool, args)
    }

    /// Pretends the head now covers messages before `boundary`.
    fn set_boundary(&self, boundary: u64) {
        let state = EngineState {
            boundary,
            ..EngineState::default()
        };
        let json = serde_json::to_string(&state).unwrap();
        self.engine
            .store()
            .write(|tx| tx.put_engine_state(&self.session, &json))
            .unwrap();
    }
}

fn conversation(turns: usize) -> Vec<Message> {
    let mut messages = Vec::new();
    for turn in 0..turns {
        messages.push(Message::new(
            Role::User,
            vec![Part::text(format!(
                "please check the flaky parser number {turn}"
            ))],
        ));
        messages.push(Message::new(
            Role::Assistant,
            vec![Part::ToolCall {
                id: format!("call-{turn}"),
                name: "bash".to_owned(),
                input: json!({"command": format!("cargo test parser_{turn}")}),
            }],
        ));
        messages.push(Message::new(
            Role::User,
            vec![Part::ToolResult {
                call_id: format!("call-{turn}"),
                content: vec![Part::text(format!(
                    "test parser_{turn} ... ok {}",
                    "x".repeat(400)
                ))],
                is_error: false,
            }],
        ));
    }
    messages.push(Message::new(Role::Assistant, vec![Part::text("all green")]));
    messages
}

#[test]
fn specs_list_five_tools_with_object_schemas() {
    let specs = tool_specs();
    let names: Vec<_> = specs.iter().map(|spec| spec.name).collect();
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
    for spec in &specs {
        assert_eq!(spec.input_schema["type"], "object", "{}", spec.name);
        assert!(
            spec.input_schema.contains_key("properties"),
            "{}",
            spec.name
        );
    }
    assert_eq!(specs[0].input_schema["required"], json!(["drop"]));
}

#[test]
fn unknown_tool_and_bad_arguments_are_error_answers() {
    let fixture = Fixture::new(2);
    assert!(fixture.call("ctx_nope", json!({})).is_error);
    let answer = fixture.call("ctx_reduce", json!({"drop": 3}));
    assert!(answer.is_error);
    assert!(
        answer.text.starts_with("invalid arguments"),
        "{}",
        answer.text
    );
    let answer = fixture.call("ctx_note", json!({"action": "shout"}));
    assert!(answer.is_error);
    assert!(answer.text.contains("write"), "{}", answer.text);
}

#[test]
fn reduce_queues_defers_and_skips() {
    let fixture = Fixture::new(4);
    let answer = fixture.call("ctx_reduce", json!({"drop": "1-2,999"}));
    assert!(!answer.is_error, "{}", answer.text);
    assert!(answer.text.contains("queued §1§ §2§"), "{}", answer.text);
    assert!(answer.text.contains("skipped §999§"), "{}", answer.text);
    let newest = fixture
        .engine
        .store()
        .read(|tx| tx.newest_tag(&fixture.session))
        .unwrap()
        .unwrap();
    let answer = fixture.call("ctx_reduce", json!({"drop": newest.0.to_string()}));
    assert!(answer.text.starts_with("deferred"), "{}", answer.text);
}

#[test]
fn reduce_names_the_bad_token() {
    let fixture = Fixture::new(1);
    let answer = fixture.call("ctx_reduce", json!({"drop": "9-3,x"}));
    assert!(answer.is_error);
    assert!(answer.text.contains("9-3"), "{}", answer.text);
}

#[test]
fn tools_needing_a_session_say_so() {
    let fixture = Fixture::new(1);
    let ctx = ToolContext {
        session: None,
        ..fixture.ctx()
    };
    for (tool, args) in [
        ("ctx_reduce", json!({"drop": "1"})),
        ("ctx_expand", json!({"message": 0})),
        ("ctx_note", json!({"action": "read"})),
    ] {
        let answer = call_tool(&ctx, tool, args);
        assert!(answer.is_error, "{tool}");
        assert!(
            answer.text.contains("MAGIC_CONTEXT_SESSION"),
            "{}",
            answer.text
        );
    }
    let answer = call_tool(&ctx, "ctx_memory", json!({"action": "list"}));
    assert!(!answer.is_error, "{}", answer.text);
}

#[test]
fn another_projects_session_is_refused() {
    let fixture = Fixture::new(1);
    let ctx = ToolContext {
        project: Some(ProjectId::new("project-b").unwrap()),
        ..fixture.ctx()
    };
    let answer = call_tool(&ctx, "ctx_expand", json!({"message": 0}));
    assert!(answer.is_error);
    assert!(answer.text.contains("another project"), "{}", answer.text);
}

#[test]
fn expand_shows_old_ranges_and_not_the_live_context() {
    let fixture = Fixture::new(3);
    let answer = fixture.call("ctx_expand", json!({"start": 0, "end": 3}));
    assert!(
        answer.text.contains("still in your live context"),
        "{}",
        answer.text
    );

    fixture.set_boundary(6);
    let answer = fixture.call("ctx_expand", json!({"start": 0, "end": 8}));
    assert!(!answer.is_error, "{}", answer.text);
    assert!(
        answer
            .text
            .contains("#0 user: please check the flaky parser number 0")
    );
    assert!(
        answer.text.contains("#1 assistant: → bash("),
        "{}",
        answer.text
    );
    assert!(!answer.text.contains("#6 "), "{}", answer.text);
    assert!(
        answer
            .text
            .contains("[messages 6 to 8 are still in your live context")
    );

    let answer = fixture.call("ctx_expand", json!({"message": 2}));
    assert!(answer.text.contains(&"x".repeat(400)), "{}", answer.text);
    let answer = fixture.call("ctx_expand", json!({"message": 7}));
    assert!(
        answer.text.contains("still in your live context"),
        "{}",
        answer.text
    );
}

#[test]
fn expand_cuts_long_ranges_and_says_where_to_continue() {
    let fixture = Fixture::new(200);
    fixture.set_boundary(600);
    let answer = fixture.call("ctx_expand", json!({"start": 0, "end": 599}));
    assert!(answer.text.len() <= EXPAND_BUDGET_TOKENS * 4 + 500);
    assert!(
        answer.text.contains("continue with start="),
        "{}",
        answer.text
    );
}

#[test]
fn expand_keeps_within_the_configured_cap() {
    let fixture = Fixture::with_config(200, |config| {
        config.expand.cap_tokens = mc_core::config::Tokens(1_000);
    });
    fixture.set_boundary(600);
    let answer = fixture.call("ctx_expand", json!({"start": 0, "end": 599}));
    assert!(
        answer.text.len() <= 1_000 * 4 + 500,
        "{}",
        answer.text.len()
    );
    assert!(
        answer.text.contains("[cut at about 1,000 tokens"),
        "{}",
        answer.text
    );
}

#[test]
fn expand_validates_its_arguments() {
    let fixture = Fixture::new(1);
    for args in [
        json!({}),
        json!({"start": 3, "end": 1}),
        json!({"message": 1, "start": 0}),
        json!({"message": 99}),
    ] {
        let answer = fixture.call("ctx_expand", args.clone());
        assert!(answer.is_error, "{args}: {}", answer.text);
    }
}

#[test]
fn memory_write_duplicate_update_merge_archive() {
    let fixture = Fixture::new(1);
    let write = |content: &str| {
        fixture.call(
            "ctx_memory",
            json!({"action": "write", "category": "constraints", "content": content}),
        )
    };
    assert_eq!(
        write("Never call the network in tests.").text,
        "saved as memory 1 (CONSTRAINTS)"
    );
    let again = write("Never call the network in tests.");
    assert!(!again.is_error);
    assert!(again.text.contains("already says this"), "{}", again.text);
    write("Tests use a temp store.");
    let answer = fixture.call(
        "ctx_memory",
        json!({"action": "update", "ids": [2], "category": "ARCHITECTURE"}),
    );
    assert!(answer.text.contains("ARCHITECTURE"), "{}", answer.text);
    let answer = fixture.call(
        "ctx_memory",
        json!({"action": "merge", "ids": [1, 2], "content": "Tests are offline and use a temp store."}),
    );
    assert!(
        answer.text.starts_with("merged into [3]"),
        "{}",
        answer.text
    );
    let list = fixture.call("ctx_memory", json!({"action": "list"}));
    assert_eq!(
        list.text,
        "[3] CONSTRAINTS (active): Tests are offline and use a temp store.\n"
    );
    let answer = fixture.call("ctx_memory", json!({"action": "archive", "ids": [3]}));
    assert!(!answer.is_error, "{}", answer.text);
    assert_eq!(
        fixture.call("ctx_memory", json!({"action": "list"})).text,
        "no memories yet"
    );
}

#[test]
fn memory_is_per_project_and_validates() {
    let fixture = Fixture::new(1);
    fixture.call(
        "ctx_memory",
        json!({"action": "write", "category": "NAMING", "content": "Crates start with mc-."}),
    );
    let other = ToolContext {
        project: Some(ProjectId::new("project-b").unwrap()),
        ..fixture.ctx()
    };
    let answer = call_tool(&other, "ctx_memory", json!({"action": "get", "ids": [1]}));
    assert!(answer.is_error);
    assert!(answer.text.contains("not found"), "{}", answer.text);
    for args in [
        json!({"action": "write", "category": "colours", "content": "x"}),
        json!({"action": "write", "category": "NAMING"}),
        json!({"action": "update", "ids": [1, 2], "content": "y"}),
        json!({"action": "merge", "ids": [1]}),
    ] {
        let answer = fixture.call("ctx_memory", args.clone());
        assert!(answer.is_error, "{args}: {}", answer.text);
    }
}

/// An open note comes back in `m[1]` at the next pass that may change bytes, without the
/// agent asking; a dismissed one goes at the next.
#[test]
fn open_notes_come_back_in_m1() {
    let fixture = Fixture::new(3);
    fixture.call(
        "ctx_note",
        json!({"action": "write", "content": "rerun the bench after the refactor"}),
    );
    let messages = conversation(3);
    fixture.engine.request_flush(&fixture.session).unwrap();
    let outcome = fixture.pass(&messages);
    let m1 = mc_core::joined_texts(&outcome.messages[1].parts);
    assert!(
        m1.contains("<open-notes>\n- #1 rerun the bench after the refactor\n</open-notes>"),
        "{m1}"
    );
    fixture.call("ctx_note", json!({"action": "dismiss", "note_id": 1}));
    fixture.engine.request_flush(&fixture.session).unwrap();
    let outcome = fixture.pass(&messages);
    let m1 = mc_core::joined_texts(&outcome.messages[1].parts);
    assert!(!m1.contains("open-notes"), "{m1}");
}

/// Observations the historian saw often enough become the user's profile: in `m[0]` at a
/// fold, and a line added later in `m[1]` until the next.
#[test]
fn the_users_profile_is_in_the_head() {
    let fixture = Fixture::new(3);
    let observe = |text: &str| {
        let text = text.to_owned();
        fixture
            .engine
            .store()
            .write(|tx| {
                for at in 0..3 {
                    tx.store_observations("project:project-a", std::slice::from_ref(&text), at)?;
                }
                Ok(())
            })
            .unwrap();
    };
    observe("Prefers short answers.");
    let messages = conversation(3);
    fixture
        .engine
        .request_head_rebuild(&fixture.session)
        .unwrap();
    let folded = fixture.pass(&messages);
    let m0 = mc_core::joined_texts(&folded.messages[0].parts);
    assert!(
        m0.contains("<user-profile>\n- Prefers short answers.\n</user-profile>"),
        "{m0}"
    );
    observe("Wants a failing test before a fix.");
    fixture.engine.request_flush(&fixture.session).unwrap();
    let later = fixture.pass(&messages);
    assert_eq!(
        later.messages[0], folded.messages[0],
        "m[0] waits for the next fold"
    );
    let m1 = mc_core::joined_texts(&later.messages[1].parts);
    assert!(
        m1.contains(
            "<new-user-profile>\n- Wants a failing test before a fix.\n</new-user-profile>"
        ),
        "{m1}"
    );
}

#[test]
fn notes_session_and_smart() {
    let fixture = Fixture::new(1);
    let answer = fixture.call(
        "ctx_note",
        json!({"action": "write", "content": "rerun bench"}),
    );
    assert_eq!(
        answer.text,
        "saved note 1; read your notes with action read"
    );
    let answer = fixture.call(
        "ctx_note",
        json!({"action": "write", "content": "recheck limits", "surface_condition": "when CI config changes"}),
    );
    assert!(answer.text.contains("pending"), "{}", answer.text);
    let answer = fixture.call(
        "ctx_note",
        json!({"action": "update", "note_id": 1, "content": "rerun the bench"}),
    );
    assert_eq!(answer.text, "updated note 1");
    let read = fixture.call("ctx_note", json!({"action": "read"}));
    assert_eq!(
        read.text,
        "[1] rerun the bench\n[2] smart, pending evaluation (when: when CI config changes): recheck limits\n"
    );
    assert_eq!(
        fixture
            .call("ctx_note", json!({"action": "dismiss", "note_id": 1}))
            .text,
        "dismissed note 1"
    );
    assert!(
        fixture
            .call("ctx_note", json!({"action": "dismiss", "note_id": 99}))
            .is_error
    );
    assert!(
        fixture
            .call("ctx_note", json!({"action": "write"}))
            .is_error
    );
    assert!(
        fixture
            .call("ctx_note", json!({"action": "update", "note_id": 2}))
            .is_error
    );
}

#[test]
fn search_finds_old_messages_and_hides_the_live_ones() {
    let fixture = Fixture::new(3);
    fixture.call(
        "ctx_memory",
        json!({"action": "write", "category": "CONFIG_VALUES", "content": "The parser timeout is 30 seconds."}),
    );
    let answer = fixture.call("ctx_search", json!({"query": "flaky parser"}));
    assert!(!answer.text.contains("message 0"), "{}", answer.text);
    fixture.set_boundary(6);
    let answer = fixture.call("ctx_search", json!({"query": "flaky parser"}));
    assert!(answer.text.contains("message 3"), "{}", answer.text);
    assert!(!answer.text.contains("message 6"), "{}", answer.text);
    // The task (message 0) is behind the boundary but pinned verbatim in m[0]: seen.
    assert!(!answer.text.contains("message 0"), "{}", answer.text);
    let answer = fixture.call("ctx_search", json!({"query": "parser timeout"}));
    assert!(
        answer.text.contains("memory 1 (CONFIG_VALUES)"),
        "{}",
        answer.text
    );
    for args in [
        json!({"query": "x", "limit": 0}),
        json!({"query": "x", "since": "yesterday"}),
        json!({"query": "  "}),
    ] {
        assert!(fixture.call("ctx_search", args.clone()).is_error, "{args}");
    }
}

#[test]
fn guidance_explains_tags_and_names_every_tool() {
    assert!(TOOL_GUIDANCE.contains("§N§"));
    for spec in tool_specs() {
        assert!(TOOL_GUIDANCE.contains(spec.name), "{}", spec.name);
    }
}

#[test]
fn expand_reads_another_session_of_the_project_only() {
    let fixture = Fixture::new(2);
    let other = ToolContext {
        session: Some(SessionId::new("cc-someone-else").unwrap()),
        ..fixture.ctx()
    };
    // The fixture's session is another session to this caller: none of it is live for it.
    let answer = call_tool(
        &other,
        "ctx_expand",
        json!({"session": "cc-tools-test", "start": 0, "end": 1}),
    );
    assert!(!answer.is_error, "{}", answer.text);
    assert!(
        answer.text.contains("#0 user: please check"),
        "{}",
        answer.text
    );

    let stranger = ToolContext {
        project: Some(ProjectId::new("project-b").unwrap()),
        ..other
    };
    let answer = call_tool(
        &stranger,
        "ctx_expand",
        json!({"session": "cc-tools-test", "message": 0}),
    );
    assert!(answer.is_error);
    assert!(answer.text.contains("no session"), "{}", answer.text);
}

#[test]
fn expand_reads_the_conversation_a_session_carries_whatever_the_project() {
    let fixture = Fixture::new(2);
    let continuing = SessionId::new("cc-continuing").unwrap();
    fixture
        .engine
        .store()
        .write(|tx| {
            tx.upsert_session(
                &mc_store::NewSession {
                    id: continuing.clone(),
                    host: mc_core::Host::ClaudeCode,
                    project: None,
                },
                1,
            )?;
            tx.carry_earlier_conversation(
                &continuing,
                &fixture.session,
                "<earlier-conversation session=\"cc-tools-test\">",
                1,
            )
        })
        .unwrap();
    let carrying = ToolContext {
        session: Some(continuing),
        project: None,
        ..fixture.ctx()
    };
    let asked = json!({"session": "cc-tools-test", "start": 0, "end": 1});
    let answer = call_tool(&carrying, "ctx_expand", asked.clone());
    assert!(!answer.is_error, "{}", answer.text);
    assert!(
        answer.text.contains("#0 user: please check"),
        "{}",
        answer.text
    );
    let unrelated = ToolContext {
        session: Some(SessionId::new("cc-unrelated").unwrap()),
        project: None,
        ..fixture.ctx()
    };
    assert!(call_tool(&unrelated, "ctx_expand", asked).is_error);
}

#[test]
fn search_finds_notes_of_the_project_until_dismissed() {
    let fixture = Fixture::new(1);
    fixture.call(
        "ctx_note",
        json!({"action": "write", "content": "benchmark the tokenizer cache"}),
    );
    let answer = fixture.call("ctx_search", json!({"query": "tokenizer cache"}));
    assert!(answer.text.contains("note 1 (ctx_note)"), "{}", answer.text);
    let elsewhere = ToolContext {
        project: Some(ProjectId::new("project-b").unwrap()),
        ..fixture.ctx()
    };
    let answer = call_tool(
        &elsewhere,
        "ctx_search",
        json!({"query": "tokenizer cache"}),
    );
    assert!(!answer.text.contains("note 1"), "{}", answer.text);
    fixture.call("ctx_note", json!({"action": "dismiss", "note_id": 1}));
    let answer = fixture.call("ctx_search", json!({"query": "tokenizer cache"}));
    assert!(!answer.text.contains("note 1"), "{}", answer.text);
}

#[test]
fn a_smart_note_needs_only_the_project() {
    let fixture = Fixture::new(1);
    let unbound = ToolContext {
        session: None,
        ..fixture.ctx()
    };
    let answer = call_tool(
        &unbound,
        "ctx_note",
        json!({"action": "write", "content": "revisit", "surface_condition": "when tests slow down"}),
    );
    assert!(!answer.is_error, "{}", answer.text);
    assert!(answer.text.contains("pending"), "{}", answer.text);
    // The session of the same project sees it.
    let read = fixture.call("ctx_note", json!({"action": "read"}));
    assert!(read.text.contains("revisit"), "{}", read.text);
}

#[test]
fn a_memory_search_returns_is_recorded_as_used_and_one_it_misses_is_not() {
    let fixture = Fixture::new(1);
    for content in ["The tokenizer cache lives in memory.", "Ports are even."] {
        fixture.call(
            "ctx_memory",
            json!({"action": "write", "category": "architecture", "content": content}),
        );
    }
    let answer = fixture.call("ctx_search", json!({"query": "tokenizer cache"}));
    assert!(answer.text.contains("memory 1"), "{}", answer.text);
    let used = |id| {
        fixture
            .engine
            .store()
            .read(|tx| tx.memory_with_use(&fixture.project, id))
            .unwrap()
            .unwrap()
            .used
    };
    assert_eq!(
        (used(1).retrievals, used(1).last_retrieved_ms),
        (1, Some(NOW))
    );
    assert_eq!(used(2), mc_store::MemoryUse::default());
}
