//! `pin_key_files` over a session's raw log shaped like a recorded one: the agent's tool
//! calls read the project's files (Claude Code's `Read` with absolute paths, OpenCode's
//! `read`, shell `cat` and `sed -n`), and the file it keeps re-reading is pinned, as it is
//! now, while one read once is not. A pinned file deleted from the project is gone from the
//! pins on the next run; a large file is pinned as its first lines within the budget; a
//! link out of the project, an ignored file and a file outside the folder never are.

use std::path::Path;

use mc_core::{Host, Message, Part, ProjectId, Role, SessionId};
use mc_dreamer::{CHARS_PER_TOKEN, InFlightCalls, Limits, Runner, Task, TaskSettings};
use mc_store::{DreamerRun, NewSession, PinnedFile, RunOutcome, Store};
use serde_json::{Value, json};

use crate::fixture::{EVENING_MS, project};
use crate::scheduler::NoModel;

const HOUR_MS: i64 = 60 * 60 * 1000;

/// The parser the agent keeps reading.
const PARSER: &str = "pub fn parse(input: &str) -> Vec<Token> {\n    lex(input)\n}\n";

/// One assistant message calling `name` with `input`.
fn call(id: usize, name: &str, input: Value) -> Message {
    Message::new(
        Role::Assistant,
        vec![Part::ToolCall {
            id: format!("toolu_{id:02}"),
            name: name.into(),
            input,
        }],
    )
}

/// A tool result answering `call`.
fn result(id: usize) -> Message {
    Message::new(
        Role::User,
        vec![Part::ToolResult {
            call_id: format!("toolu_{id:02}"),
            content: vec![Part::text("…")],
            is_error: false,
        }],
    )
}

/// Writes a session of `project()` whose agent made `calls`, an hour apart, ending at
/// `end_ms`.
fn record_session(store: &Store, id: &str, calls: &[(&str, Value)], end_ms: i64) {
    let session = SessionId::new(id).unwrap();
    store
        .write(|tx| {
            tx.upsert_session(
                &NewSession {
                    id: session.clone(),
                    host: Host::ClaudeCode,
                    project: Some(project()),
                },
                end_ms,
            )?;
            let task = Message::new(Role::User, vec![Part::text("Fix the parser.")]);
            tx.append_messages(&session, 0, &[task], end_ms)?;
            let mut ordinal = 1;
            let count = i64::try_from(calls.len()).unwrap();
            for (index, (name, input)) in calls.iter().enumerate() {
                let at_ms = end_ms - (count - i64::try_from(index).unwrap()) * HOUR_MS;
                let pair = [call(index, name, input.clone()), result(index)];
                tx.append_messages(&session, ordinal, &pair, at_ms)?;
                ordinal += 2;
            }
            Ok(())
        })
        .unwrap();
}

/// The project: a parser, its config, a README, a large generated table, a link out of
/// the folder and an ignored `.env`.
fn write_project(root: &Path, outside: &Path) {
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/parser.rs"), PARSER).unwrap();
    std::fs::write(root.join("src/config.rs"), "pub const PORT: u16 = 4141;\n").unwrap();
    std::fs::write(root.join("README.md"), "# shop\n").unwrap();
    let table: String = (0..2_000)
        .map(|row| format!("    ({row}, \"token number {row}\"),\n"))
        .collect();
    std::fs::write(root.join("src/table.rs"), table).unwrap();
    std::fs::write(outside.join("secret.txt"), "sk-not-for-the-prompt\n").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), root.join("src/secret.rs")).unwrap();
    std::fs::write(root.join(".env"), "TOKEN=sk-not-for-the-prompt\n").unwrap();
}

fn run(store: &Store, root: &Path, now_ms: i64, settings: TaskSettings) -> DreamerRun {
    let calls = InFlightCalls::default();
    let clock = || now_ms;
    let runner = Runner {
        store,
        model: &NoModel,
        calls: &calls,
        owner: "proxy",
        clock: &clock,
        limits: Limits::default(),
        settings,
        team: None,
    };
    runner
        .run(Task::PinKeyFiles, &project(), Some(root))
        .unwrap()
}

fn pins(store: &Store, project: &ProjectId) -> Vec<PinnedFile> {
    store.read(|tx| tx.key_files(project)).unwrap()
}

fn paths(pins: &[PinnedFile]) -> Vec<&str> {
    pins.iter().map(|pin| pin.file.path.as_str()).collect()
}

#[test]
fn the_file_read_five_times_is_pinned_and_the_one_read_once_is_not_and_a_deleted_one_goes() {
    let (code, outside, data) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    write_project(code.path(), outside.path());
    let root = code.path().canonicalize().unwrap();
    let parser = root.join("src/parser.rs").to_string_lossy().into_owned();
    let store = Store::open(data.path().join("context.db")).unwrap();
    let calls = [
        ("Read", json!({"file_path": parser})),
        (
            "Bash",
            json!({"command": "cat src/config.rs", "description": "Show the config"}),
        ),
        (
            "Read",
            json!({"file_path": parser, "offset": 1, "limit": 40}),
        ),
        (
            "Edit",
            json!({"file_path": parser, "old_string": "lex", "new_string": "scan"}),
        ),
        ("read", json!({"filePath": parser})),
        ("Bash", json!({"command": "sed -n '1,20p' ./src/parser.rs"})),
        ("Read", json!({"file_path": parser})),
        ("Read", json!({"file_path": "/etc/hostname"})),
        ("Read", json!({"file_path": "src/secret.rs"})),
        ("Read", json!({"file_path": "src/secret.rs"})),
        ("Read", json!({"file_path": "src/secret.rs"})),
        ("Read", json!({"file_path": ".env"})),
        ("Read", json!({"file_path": ".env"})),
        ("Read", json!({"file_path": ".env"})),
    ];
    record_session(&store, "s-1", &calls, EVENING_MS);

    let first = run(&store, &root, EVENING_MS, TaskSettings::default());
    assert_eq!(
        (first.outcome, first.changes, first.model_calls),
        (RunOutcome::Done, 1, 0)
    );
    let pinned = pins(&store, &project());
    assert_eq!(paths(&pinned), ["src/parser.rs"], "{first:?}");
    assert_eq!(
        (
            pinned[0].file.text.as_str(),
            pinned[0].file.cut_lines,
            pinned[0].reads
        ),
        (PARSER.trim_end(), 0, 5)
    );
    assert_eq!(
        pinned[0].content_hash.as_bytes(),
        blake3::hash(PARSER.as_bytes()).as_bytes()
    );
    let detail = first.detail.clone().unwrap_or_default();
    assert!(
        detail.contains("pinned src/parser.rs (5 reads)"),
        "{detail}"
    );
    assert!(
        detail.contains("src/secret.rs ("),
        "refused and said so: {detail}"
    );
    assert!(!detail.contains("config.rs"), "read once: {detail}");
    let stored = format!("{pinned:?}");
    assert!(!stored.contains("sk-not-for-the-prompt"), "{stored}");

    let again = run(&store, &root, EVENING_MS + HOUR_MS, TaskSettings::default());
    assert_eq!(
        (again.outcome, again.changes),
        (RunOutcome::Done, 0),
        "nothing new"
    );

    std::fs::remove_file(root.join("src/parser.rs")).unwrap();
    let after = run(
        &store,
        &root,
        EVENING_MS + 2 * HOUR_MS,
        TaskSettings::default(),
    );
    assert_eq!((after.outcome, after.changes), (RunOutcome::Done, 1));
    assert_eq!(
        pins(&store, &project()),
        [],
        "the deleted file is not pinned any more"
    );
    let detail = after.detail.unwrap_or_default();
    assert!(
        detail.contains("pinned none; left out src/parser.rs ("),
        "{detail}"
    );
}

#[test]
fn a_large_file_is_pinned_as_its_first_lines_within_the_budget() {
    let (code, outside, data) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    write_project(code.path(), outside.path());
    let root = code.path().canonicalize().unwrap();
    let store = Store::open(data.path().join("context.db")).unwrap();
    let calls: Vec<(&str, Value)> = [
        "src/table.rs",
        "src/parser.rs",
        "src/table.rs",
        "src/parser.rs",
        "src/table.rs",
        "src/parser.rs",
        "src/table.rs",
    ]
    .into_iter()
    .map(|path| ("Read", json!({"file_path": path})))
    .collect();
    record_session(&store, "s-1", &calls, EVENING_MS);
    let budget = 800;
    let settings = TaskSettings {
        pin_key_files_budget_tokens: budget,
        ..TaskSettings::default()
    };

    let run = run(&store, &root, EVENING_MS, settings);
    assert_eq!(run.outcome, RunOutcome::Done, "{run:?}");
    let pinned = pins(&store, &project());
    assert_eq!(
        paths(&pinned),
        ["src/table.rs", "src/parser.rs"],
        "by reads"
    );
    let table = &pinned[0].file;
    assert!(table.cut_lines > 1_000, "{}", table.cut_lines);
    assert!(table.text.starts_with("    (0, \"token number 0\"),\n"));
    assert_eq!(table.text.lines().count() + table.cut_lines as usize, 2_000);
    let shown: usize = pinned.iter().map(|pin| pin.file.text.len()).sum();
    assert!(shown <= budget as usize * CHARS_PER_TOKEN, "{shown}");
    let detail = run.detail.unwrap_or_default();
    assert!(
        detail.contains(&format!(
            "src/table.rs (4 reads, first {} of 2000 lines)",
            table.text.lines().count()
        )),
        "{detail}"
    );
}
