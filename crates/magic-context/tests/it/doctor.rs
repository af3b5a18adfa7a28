//! `doctor` on a fresh machine creates the store with private permissions; a broken or
//! newer store is reported with what to do, and the exit code says it is unusable.

use std::os::unix::fs::PermissionsExt;

use crate::support::Machine;

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn first_use_creates_a_private_store() {
    let machine = Machine::fresh();
    let run = machine.run(&["doctor", "--json"], &[]).success();
    let report = run.json();
    let dir = machine.path("home/.local/share/magic-context");
    assert_eq!(report["ok"], true);
    assert_eq!(
        report["store"]["path"],
        "[TMP]/home/.local/share/magic-context/context.db"
    );
    assert_eq!(report["store"]["schema_version"], mc_store::SCHEMA_VERSION);
    assert_eq!(report["store"]["journal_mode"], "wal");
    assert_eq!(report["store"]["sessions"], 0);
    assert_eq!(
        (
            report["store"]["dir_mode"].as_str(),
            report["store"]["file_mode"].as_str()
        ),
        (Some("0700"), Some("0600"))
    );
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join("context.db")), 0o600);
    assert_eq!(report["config"]["problems"], serde_json::json!([]));

    // A second run opens the same store without migrating or loosening anything.
    let again = machine.run(&["doctor"], &[]).success();
    assert!(
        again.stdout.starts_with(&format!(
            "store   ok    [TMP]/home/.local/share/magic-context/context.db (schema v{}",
            mc_store::SCHEMA_VERSION
        )),
        "{}",
        again.stdout
    );
    assert_eq!(mode(&dir.join("context.db")), 0o600);
}

#[test]
fn the_data_dir_variable_moves_the_store() {
    let machine = Machine::fresh();
    let data = machine.path("data");
    let run = machine
        .run(
            &["doctor", "--json"],
            &[("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())],
        )
        .success();
    assert_eq!(run.json()["store"]["path"], "[TMP]/data/context.db");
    assert!(data.join("context.db").is_file());
}

/// A data directory the user chose keeps its mode, but one other users can read is said,
/// with the command that closes it; a private one draws no warning.
#[test]
fn a_data_directory_open_to_others_is_warned_about() {
    let machine = Machine::fresh();
    let data = machine.path("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    let env = [("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())];
    let report = machine.run(&["doctor", "--json"], &env).success().json();
    let warnings = report["store"]["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let warning = warnings[0].as_str().unwrap();
    assert!(
        warning.contains("mode 0755") && warning.contains("`chmod 700 [TMP]/data`"),
        "{warning}"
    );
    assert_eq!(mode(&data), 0o755, "the user's directory is left as it is");
    let text = machine.run(&["doctor"], &env).success().stdout;
    assert!(
        text.contains("store   WARN  the data directory [TMP]/data is open"),
        "{text}"
    );

    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
    let report = machine.run(&["doctor", "--json"], &env).success().json();
    assert_eq!(report["store"]["warnings"], serde_json::json!([]));
}

#[test]
fn a_corrupt_store_fails_with_what_to_do() {
    let machine = Machine::fresh();
    let data = machine.path("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(
        data.join("context.db"),
        "these are notes, not a database\n".repeat(200),
    )
    .unwrap();
    let run = machine.run(&["doctor"], &[("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stdout
            .contains("store   FAIL  the store [TMP]/data/context.db is not a readable database"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("move the file aside"), "{}", run.stdout);
    let kept = std::fs::read_to_string(data.join("context.db")).unwrap();
    assert!(
        kept.starts_with("these are notes"),
        "the file was left untouched"
    );
}

#[test]
fn config_problems_are_reported_but_do_not_fail() {
    let machine = Machine::fresh();
    std::fs::create_dir_all(machine.user_file().parent().unwrap()).unwrap();
    std::fs::write(
        machine.user_file(),
        r#"{ "pass": { "execute_threshold_percent": 99 } }"#,
    )
    .unwrap();
    let run = machine.run(&["doctor"], &[]).success();
    assert!(run.stdout.contains("config  WARN  "), "{}", run.stdout);
    assert!(
        run.stdout.contains("pass.execute_threshold_percent"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_broken_hash_chain_fails_naming_the_session_and_ordinal() {
    use mc_core::{Host, Message, Part, Role, SessionId};
    use mc_store::{NewSession, Store};

    let machine = Machine::fresh();
    let data = machine.path("data");
    let store = Store::open(data.join("context.db")).unwrap();
    store
        .write(|tx| {
            for name in ["kept", "damaged"] {
                let id = SessionId::new(name).unwrap();
                let session = NewSession {
                    id: id.clone(),
                    host: Host::ClaudeCode,
                    project: None,
                };
                tx.upsert_session(&session, 1)?;
                let turns: Vec<Message> = (0..4)
                    .map(|n| Message::new(Role::User, vec![Part::text(format!("turn {n}"))]))
                    .collect();
                tx.append_messages(&id, 0, &turns, 1)?;
            }
            Ok(())
        })
        .unwrap();
    drop(store);
    let env = [("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())];

    let healthy = machine.run(&["doctor", "--json"], &env).success().json();
    assert_eq!(
        healthy["chains"],
        serde_json::json!({"ok": true, "sessions_checked": 2, "messages_checked": 8, "broken": []})
    );

    // An outside edit: the append-only trigger lifted, one stored link replaced.
    let conn = rusqlite::Connection::open(data.join("context.db")).unwrap();
    conn.execute_batch(
        "DROP TRIGGER messages_are_append_only_update;
         UPDATE messages SET chain = zeroblob(32) WHERE session_id = 'damaged' AND ordinal = 2;",
    )
    .unwrap();
    drop(conn);

    let run = machine.run(&["doctor", "--json"], &env);
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    let report = run.json();
    assert_eq!(report["ok"], false);
    assert_eq!(report["store"]["ok"], true);
    assert_eq!(
        report["chains"],
        serde_json::json!({
            "ok": false,
            "sessions_checked": 2,
            "messages_checked": 6,
            "broken": [{
                "session": "damaged",
                "ordinal": 2,
                "problem": "chain link does not follow from the message hash and the previous link",
            }],
        })
    );
    let text = machine.run(&["doctor"], &env);
    assert_eq!(text.code, Some(1));
    assert!(
        text.stdout.contains(
            "chains  FAIL  session `damaged` breaks at message 2: chain link does not follow"
        ),
        "{}",
        text.stdout
    );
}
