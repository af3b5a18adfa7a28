//! `prune`, `backup` and `restore` through the built binary, against a store seeded with
//! mc-store's API: what a dry run reports and leaves, which sessions an age or an id takes,
//! a backup restored with the same sessions and memories, and the errors a user meets.

use std::ffi::OsStr;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use mc_core::{Host, Message, Part, Role, SessionId};
use mc_store::{NewSession, Store};
use serde_json::Value;

use crate::support::{Machine, Run};

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

fn now_ms() -> i64 {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    i64::try_from(now.as_millis()).unwrap()
}

/// Two sessions of two messages each: `old`, last seen 200 days ago, and `recent`, a day ago.
fn seeded() -> Machine {
    let machine = Machine::fresh();
    let store = Store::open(machine.path("data/context.db")).unwrap();
    for (name, age_days) in [("old", 200), ("recent", 1)] {
        let id = SessionId::new(name).unwrap();
        let seen_ms = now_ms() - age_days * DAY_MS;
        store
            .write(|tx| {
                tx.upsert_session(
                    &NewSession {
                        id: id.clone(),
                        host: Host::ClaudeCode,
                        project: None,
                    },
                    seen_ms,
                )?;
                let messages = [
                    Message::new(Role::User, vec![Part::text(format!("hello from {name}"))]),
                    Message::new(Role::Assistant, vec![Part::text("hello")]),
                ];
                tx.append_messages(&id, 0, &messages, seen_ms)
            })
            .unwrap();
    }
    machine
}

fn run(machine: &Machine, args: &[&str]) -> Run {
    let data = machine.path("data");
    let env: [(&str, &OsStr); 1] = [("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())];
    machine.run(args, &env)
}

fn failure(run: Run) -> String {
    assert_eq!(
        run.code,
        Some(1),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    run.stderr
}

/// The stored sessions' ids, as `status --json` lists them.
fn sessions(machine: &Machine) -> Vec<String> {
    let mut ids: Vec<String> = run(machine, &["status", "--json"]).success().json()["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|session| session["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

fn pruned_ids(report: &Value) -> Vec<&str> {
    report["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|session| session["id"].as_str().unwrap())
        .collect()
}

#[test]
fn a_dry_run_reports_the_figures_and_removes_nothing() {
    let machine = seeded();
    let report = run(&machine, &["prune", "--dry-run", "--json"])
        .success()
        .json();
    assert_eq!(report["dry_run"], true);
    assert_eq!(pruned_ids(&report), ["old"]);
    assert_eq!(report["rows"]["messages"], 2);
    assert_eq!(report["rows"]["message_search"], 2);
    assert_eq!(report["rows"]["sessions"], 1);
    assert_eq!(report["reclaimed"], Value::Null);
    assert!(report["store"]["total_bytes"].as_u64().unwrap() > 0);

    let text = run(&machine, &["prune", "--dry-run"]).success().stdout;
    assert!(
        text.starts_with(
            "would remove 1 session (sessions last active more than 90 days ago \
             (retention.session_days)):\n  old  last active 200d ago, "
        ),
        "{text}"
    );
    assert!(text.contains("rows would remove: "), "{text}");
    assert!(text.contains("messages 2"), "{text}");
    assert!(text.contains("nothing was removed (--dry-run)\n"), "{text}");
    assert_eq!(sessions(&machine), ["old", "recent"]);
}

#[test]
fn the_configured_days_or_the_flag_choose_what_goes() {
    let machine = seeded();
    let user_file = machine.user_file();
    std::fs::create_dir_all(user_file.parent().unwrap()).unwrap();
    std::fs::write(&user_file, r#"{"retention": {"session_days": 300}}"#).unwrap();
    let text = run(&machine, &["prune"]).success().stdout;
    assert!(
        text.starts_with(
            "nothing to prune: no sessions last active more than 300 days ago \
             (retention.session_days)\n"
        ),
        "{text}"
    );
    assert_eq!(sessions(&machine), ["old", "recent"]);

    let report = run(&machine, &["prune", "--older-than", "100", "--json"])
        .success()
        .json();
    assert_eq!(report["dry_run"], false);
    assert_eq!(pruned_ids(&report), ["old"]);
    assert_eq!(report["reclaimed"]["auto_vacuum"], "incremental");
    assert_eq!(sessions(&machine), ["recent"]);
}

#[test]
fn a_named_session_goes_whatever_its_age() {
    let machine = seeded();
    let text = run(&machine, &["prune", "--session", "recent"])
        .success()
        .stdout;
    assert!(
        text.starts_with("removed 1 session (session `recent` and its forks):\n"),
        "{text}"
    );
    assert!(text.contains("incremental vacuum: "), "{text}");
    assert_eq!(sessions(&machine), ["old"]);
    // What is left verifies: every chain whole, the store healthy.
    run(&machine, &["doctor"]).success();
}

#[test]
fn bad_input_is_refused_with_what_to_do() {
    let machine = seeded();
    let unknown = failure(run(&machine, &["prune", "--session", "nobody"]));
    assert_eq!(
        unknown,
        "error: no session `nobody` in the store [TMP]/data/context.db; `magic-context status` \
         lists the stored sessions\n"
    );
    let words = run(&machine, &["prune", "--older-than", "soon"]);
    assert_eq!(words.code, Some(2));
    assert!(
        words
            .stderr
            .contains("`soon` is not a whole number of days (e.g. --older-than 30)"),
        "{}",
        words.stderr
    );
    let zero = run(&machine, &["prune", "--older-than", "0"]);
    assert!(
        zero.stderr
            .contains("must be between 1 and 36500 days, got 0"),
        "{}",
        zero.stderr
    );
    assert_eq!(sessions(&machine), ["old", "recent"]);
}

#[test]
fn a_backup_restores_the_same_sessions_and_memories() {
    let machine = seeded();
    run(
        &machine,
        &[
            "memory",
            "add",
            "--category",
            "naming",
            "Tests end in _test.",
        ],
    )
    .success();
    let memories = |machine: &Machine| {
        run(machine, &["memory", "list", "--json"]).success().json()["memories"].clone()
    };
    let remembered = memories(&machine);
    assert_eq!(remembered.as_array().unwrap().len(), 1);

    let backup = machine.path("backup.db");
    let backup_arg = backup.to_str().unwrap();
    let made = run(&machine, &["backup", "--out", backup_arg])
        .success()
        .stdout;
    assert!(
        made.starts_with("backed up [TMP]/data/context.db to [TMP]/backup.db ("),
        "{made}"
    );
    let refused = failure(run(&machine, &["backup", "--out", backup_arg]));
    assert!(
        refused.ends_with(
            "[TMP]/backup.db already exists; choose another file, or pass --force to replace \
             it\n"
        ),
        "{refused}"
    );
    run(&machine, &["backup", "--out", backup_arg, "--force"]).success();

    run(&machine, &["prune", "--session", "old"]).success();
    run(&machine, &["memory", "archive", "1"]).success();
    assert_eq!(sessions(&machine), ["recent"]);

    let restored = run(&machine, &["restore", backup_arg]).success().stdout;
    assert!(
        restored.ends_with(
            "as the store [TMP]/data/context.db; the previous store is kept as \
             [TMP]/data/context.db.before-restore\n"
        ),
        "{restored}"
    );
    assert_eq!(sessions(&machine), ["old", "recent"]);
    assert_eq!(memories(&machine), remembered);
    assert!(Path::new(&machine.path("data/context.db.before-restore")).is_file());

    let again = failure(run(&machine, &["restore", backup_arg]));
    assert!(again.contains("is kept from an earlier restore"), "{again}");
    let not_a_store = machine.path("notes.txt");
    std::fs::write(&not_a_store, "just words").unwrap();
    let refused = failure(run(&machine, &["restore", not_a_store.to_str().unwrap()]));
    assert!(
        refused.contains("is not a magic-context store"),
        "{refused}"
    );
}
