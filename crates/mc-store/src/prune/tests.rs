use mc_core::{Host, Message, Part, ProjectId, Role, SessionId};
use rusqlite::Connection;

use super::*;
use crate::{MemoryStatus, NewSession};

/// Tables that hold no session's rows, and why they stay when one is pruned.
const KEPT_TABLES: &[(&str, &str)] = &[
    ("schema_migrations", "the schema's history"),
    (
        "sessions_being_pruned",
        "names a session only inside a prune's transaction",
    ),
    ("token_corrections", "per model"),
    ("memories", "project knowledge"),
    ("memory_log", "project knowledge"),
    ("memory_search", "indexes memories"),
    ("commits", "per project"),
    ("commit_search", "indexes commits"),
    (
        "search_watermarks",
        "global; lowered, never raised, by a prune",
    ),
    (
        "vector_watermarks",
        "global; lowered, never raised, by a prune",
    ),
    (
        "hidden_exchanges",
        "keyed by a conversation's anchor, aged out on their own",
    ),
    ("project_folders", "per project"),
    ("user_profile", "the user's, across projects"),
    ("dreamer_leases", "per project"),
    ("dreamer_runs", "per project"),
    (
        "key_files",
        "per project: replaced by each pin_key_files run",
    ),
    (
        "team_memories",
        "a cache of the team store's project knowledge",
    ),
    (
        "team_memory_log",
        "a cache of the team store's project knowledge",
    ),
    (
        "team_memory_search",
        "indexes the team store's cached memories",
    ),
    ("team_cursors", "per project"),
    (
        "team_outbox",
        "writes bound for the team store, per project",
    ),
    (
        "team_memory_use",
        "per project, keyed by the team's memory ids",
    ),
    (
        "team_use_outbox",
        "use bound for the team store, per project",
    ),
    (
        "team_note_outbox",
        "smart note changes bound for the team store, per project",
    ),
];

/// Indexes whose entries follow the rows they index through triggers: a session's entries
/// go when its rows go.
const INDEXES_BY_TRIGGER: &[(&str, &str)] = &[("note_search", "indexes notes")];

fn id(name: &str) -> SessionId {
    SessionId::new(name).unwrap()
}

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("context.db")).unwrap();
    (dir, store)
}

fn add_session(store: &Store, session: &SessionId, word: &str, seen_ms: i64) {
    store
        .write(|tx| {
            tx.upsert_session(
                &NewSession {
                    id: session.clone(),
                    host: Host::ClaudeCode,
                    project: None,
                },
                seen_ms,
            )?;
            let messages = [
                Message::new(Role::User, vec![Part::text(format!("look at the {word}"))]),
                Message::new(
                    Role::Assistant,
                    vec![Part::text(format!("the {word} is fine"))],
                ),
            ];
            tx.append_messages(session, 0, &messages, seen_ms)
        })
        .unwrap();
}

/// One row of `session` in every session-scoped table the raw log does not fill itself.
fn fill_session_rows(store: &Store, session: &SessionId) {
    let s = session.as_str();
    let scope = format!("session:{s}");
    store
        .write(|tx| {
            let conn = tx.conn();
            conn.execute_batch(&format!(
                "INSERT INTO tags (session_id, tag, ordinal, part) VALUES ('{s}', 1, 0, 0);
                 INSERT INTO drops (session_id, tag, source, queued_ms) VALUES ('{s}', 1, 'agent', 1);
                 INSERT INTO engine_state (session_id, state) VALUES ('{s}', '{{}}');
                 INSERT INTO passes (session_id, seq, at_ms, kind) VALUES ('{s}', 0, 1, 'cache_hit');
                 INSERT INTO calls (session_id, started_ms, route, model, status, total_ms,
                                    overflow_retry)
                     VALUES ('{s}', 1, '/v1/messages', 'm', 200, 5, 0);
                 INSERT INTO compartments (session_id, start_ordinal, end_ordinal, start_ms,
                     end_ms, title, importance, episode, tier_full, tier_condensed,
                     tier_paragraph, tier_line, created_ms)
                     VALUES ('{s}', 0, 1, 1, 2, 't', 50, 'e', 'full', 'c', 'p', 'l', 1);
                 INSERT INTO staged_compartments (session_id, start_ordinal, end_ordinal,
                     start_ms, end_ms, title, importance, episode, tier_full, tier_condensed,
                     tier_paragraph, tier_line, quotes, created_ms)
                     VALUES ('{s}', 0, 1, 1, 2, 't', 50, 'e', 'f', 'c', 'p', 'l', '[]', 1);
                 INSERT INTO provisional_compartments (session_id, start_ordinal)
                     VALUES ('{s}', 0);
                 INSERT INTO earlier_conversations (session_id, earlier_session, text,
                     created_ms)
                     VALUES ('{s}', 'an-earlier-one', '<earlier-conversation/>', 1);
                 INSERT INTO historian_runs (session_id, started_ms, finished_ms, chunk_start,
                     chunk_end, outcome, calls, input_tokens, output_tokens, compartments)
                     VALUES ('{s}', 1, 2, 0, 1, 'published', 1, 10, 5, 1);
                 INSERT INTO historian_facts (scope, fact_key, category, content, seen_count,
                     first_session, first_ms, last_ms)
                     VALUES ('{scope}', 'k', 'NAMING', 'x', 1, '{s}', 1, 1);
                 INSERT INTO user_observations (scope, observation_key, text, seen_count,
                     first_ms, last_ms)
                     VALUES ('{scope}', 'k', 'terse', 1, 1, 1);
                 INSERT INTO notes (session_id, content, status, created_ms, updated_ms)
                     VALUES ('{s}', 'note of {s}', 'active', 1, 1);
                 INSERT INTO notes (project_id, session_id, content, surface_condition,
                     status, created_ms, updated_ms)
                     VALUES ('p', '{s}', 'smart note from {s}', 'when tests fail', 'pending',
                             1, 1);
                 INSERT INTO vectors (source, item, model, text_key, vector, session_id, at_ms)
                     SELECT 'message', rowid, 'm', 'k', x'00', session_id, 1 FROM messages
                     WHERE session_id = '{s}';
                 INSERT INTO vectors (source, item, model, text_key, vector, session_id, at_ms)
                     VALUES ('compartment', '{s}:0', 'm', 'k', x'00', '{s}', 1);"
            ))
            .map_err(StoreError::sqlite("filling a session"))
        })
        .unwrap();
}

/// Rows in every project-scoped and global table.
fn fill_project_rows(store: &Store) {
    store
        .write(|tx| {
            tx.conn()
                .execute_batch(
                    "INSERT INTO memories (id, project_id, category, content, content_key,
                         status, seen_count, source, created_ms, updated_ms)
                         VALUES (1, 'p', 'NAMING', 'cards are parsed by parse_card', 'k',
                                 'active', 1, 'agent', 1, 1);
                     INSERT INTO memory_log (project_id, memory_id, action, at_ms)
                         VALUES ('p', 1, 'added', 1);
                     INSERT INTO historian_facts (scope, fact_key, category, content,
                         seen_count, first_session, first_ms, last_ms)
                         VALUES ('project:p', 'k', 'NAMING', 'x', 1, 'old', 1, 1);
                     INSERT INTO token_corrections (model, permille, samples, updated_ms)
                         VALUES ('m', 1000, 1, 1);
                     INSERT INTO commits (project_id, sha, author, committed_ms, subject, body)
                         VALUES ('p', 'abc', 'a', 1, 's', 'b');
                     INSERT INTO vector_watermarks (model, messages_through) VALUES ('m', 0);
                     INSERT INTO hidden_exchanges (anchor, splice, created_ms, last_used_ms)
                         VALUES ('a', '[]', 1, 1);
                     INSERT INTO project_folders (project, folder, seen_ms) VALUES ('p', '/p', 1);
                     INSERT INTO user_profile (text, status, created_ms, updated_ms)
                         VALUES ('terse', 'active', 1, 1);
                     INSERT INTO dreamer_leases (domain, owner, acquired_ms, expires_ms)
                         VALUES ('p', 'me', 1, 2);
                     INSERT INTO dreamer_runs (task, project_id, started_ms, finished_ms,
                         outcome, model_calls, input_tokens, output_tokens, cost_usd, changes)
                         VALUES ('t', 'p', 1, 2, 'done', 0, 0, 0, 0, 0);",
                )
                .map_err(StoreError::sqlite("filling projects"))
        })
        .unwrap();
}

fn count(conn: &Connection, sql: &str, key: &str) -> u64 {
    conn.query_row(sql, [key], |row| row.get(0)).unwrap()
}

/// Rows of `session` in each session-scoped table. The message index is contentless, so
/// it is counted by a word only that session's messages hold.
fn session_rows(store: &Store, session: &SessionId, word: &str) -> Vec<(&'static str, u64)> {
    store
        .read(|tx| {
            let conn = tx.conn();
            Ok(SESSION_TABLES
                .iter()
                .map(|(table, delete)| {
                    let rows = match (*table, row_key(table)) {
                        ("message_search", _) => count(
                            conn,
                            "SELECT count(*) FROM message_search WHERE message_search MATCH ?1",
                            word,
                        ),
                        (_, RowKey::Session) => count(
                            conn,
                            &delete.replacen("DELETE FROM", "SELECT count(*) FROM", 1),
                            session.as_str(),
                        ),
                        (_, RowKey::SessionScope) => count(
                            conn,
                            &delete.replacen("DELETE FROM", "SELECT count(*) FROM", 1),
                            &history_scope_session(session),
                        ),
                    };
                    (*table, rows)
                })
                .collect())
        })
        .unwrap()
}

/// Every table of the file, virtual tables' own storage left out (it goes with them).
fn all_tables(conn: &Connection) -> Vec<String> {
    let mut statement = conn
        .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap();
    let tables: Vec<(String, Option<String>)> = statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    let virtual_tables: Vec<&str> = tables
        .iter()
        .filter(|(_, sql)| {
            sql.as_deref()
                .is_some_and(|sql| sql.starts_with("CREATE VIRTUAL TABLE"))
        })
        .map(|(name, _)| name.as_str())
        .collect();
    tables
        .iter()
        .map(|(name, _)| name.clone())
        .filter(|name| {
            !virtual_tables
                .iter()
                .any(|owner| name.starts_with(&format!("{owner}_")))
        })
        .collect()
}

fn table_counts(store: &Store) -> Vec<(String, u64)> {
    store
        .read(|tx| {
            let conn = tx.conn();
            Ok(KEPT_TABLES
                .iter()
                .map(|(table, _)| {
                    let rows = conn
                        .query_row(&format!("SELECT count(*) FROM {table}"), [], |row| {
                            row.get(0)
                        })
                        .unwrap();
                    ((*table).to_owned(), rows)
                })
                .collect())
        })
        .unwrap()
}

#[test]
fn every_table_is_either_session_scoped_or_kept_on_purpose() {
    let (_dir, store) = store();
    let tables = store.read(|tx| Ok(all_tables(tx.conn()))).unwrap();
    for table in &tables {
        let lists = [SESSION_TABLES, KEPT_TABLES, INDEXES_BY_TRIGGER];
        let listed = lists
            .iter()
            .filter(|list| list.iter().any(|(name, _)| name == table))
            .count();
        assert_eq!(
            listed, 1,
            "table `{table}` must be listed once: in SESSION_TABLES if it holds a session's \
             rows (prune deletes them), in INDEXES_BY_TRIGGER if triggers keep it in step with \
             one that does, else in KEPT_TABLES with why it stays"
        );
    }
    for (listed, _) in SESSION_TABLES
        .iter()
        .chain(KEPT_TABLES)
        .chain(INDEXES_BY_TRIGGER)
    {
        assert!(
            tables.iter().any(|table| table == listed),
            "no table `{listed}`"
        );
    }
}

#[test]
fn a_pruned_session_leaves_no_row_and_the_rest_is_untouched() {
    let (_dir, store) = store();
    let (gone, kept) = (id("old"), id("recent"));
    add_session(&store, &gone, "zebracorn", 10);
    add_session(&store, &kept, "quokka", 20);
    fill_session_rows(&store, &gone);
    fill_session_rows(&store, &kept);
    fill_project_rows(&store);
    store.index_pending_messages().unwrap();

    let before = session_rows(&store, &gone, "zebracorn");
    for (table, rows) in &before {
        assert!(*rows > 0, "the test fills `{table}` for the pruned session");
    }
    let kept_before = session_rows(&store, &kept, "quokka");
    let project_before = table_counts(&store);
    let memories_before = store
        .read(|tx| tx.memories(&ProjectId::new("p").unwrap(), &[MemoryStatus::Active]))
        .unwrap();

    let rehearsed = store.prune_session(&gone, true).unwrap();
    assert_eq!(session_rows(&store, &gone, "zebracorn"), before);

    let pruned = store.prune_session(&gone, false).unwrap();
    assert_eq!(pruned, rehearsed, "a rehearsal reports what the prune does");
    let reported: Vec<(&str, u64)> = pruned
        .rows
        .iter()
        .map(|pruned| (pruned.table, pruned.rows))
        .collect();
    assert_eq!(reported, before);
    assert!(
        session_rows(&store, &gone, "zebracorn")
            .iter()
            .all(|(_, rows)| *rows == 0)
    );
    assert_eq!(session_rows(&store, &kept, "quokka"), kept_before);
    assert_eq!(table_counts(&store), project_before);
    assert_eq!(
        store
            .read(|tx| tx.memories(&ProjectId::new("p").unwrap(), &[MemoryStatus::Active]))
            .unwrap(),
        memories_before
    );

    store
        .read(|tx| {
            let conn = tx.conn();
            let smart_note_session: Option<String> = conn
                .query_row(
                    "SELECT session_id FROM notes WHERE content = 'smart note from old'",
                    [],
                    |row| row.get(0),
                )
                .unwrap();
            assert_eq!(
                smart_note_session, None,
                "the smart note stays with its project"
            );
            let note_hits: u64 = conn
                .query_row(
                    "SELECT count(*) FROM note_search WHERE note_search MATCH '\"note of old\"'",
                    [],
                    |row| row.get(0),
                )
                .unwrap();
            assert_eq!(note_hits, 0);
            let integrity: String = conn
                .query_row("PRAGMA integrity_check", [], |row| row.get(0))
                .unwrap();
            assert_eq!(integrity, "ok");
            let dangling: u64 = conn
                .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |row| {
                    row.get(0)
                })
                .unwrap();
            assert_eq!(dangling, 0);
            Ok(())
        })
        .unwrap();
}

#[test]
fn the_raw_log_stays_append_only_outside_a_prune() {
    let (_dir, store) = store();
    add_session(&store, &id("s"), "log", 1);
    let refused = store.write(|tx| {
        tx.conn()
            .execute("DELETE FROM messages WHERE session_id = 's'", [])
            .map_err(StoreError::sqlite("deleting"))
    });
    assert!(refused.is_err());
    assert_eq!(store.read(|tx| tx.message_count(&id("s"))).unwrap(), 2);
}

#[test]
fn a_parent_waits_for_its_forks_and_goes_after_them() {
    let (_dir, store) = store();
    add_session(&store, &id("base"), "base", 10);
    store
        .write(|tx| tx.fork_session(&id("base"), &id("base~1"), 1, 50))
        .unwrap();
    // The fork was active at 50: its parent is not due at 40, though last seen at 10.
    assert_eq!(
        store.sessions_due_for_prune(40).unwrap(),
        Vec::<SessionId>::new()
    );
    assert_eq!(
        store.sessions_due_for_prune(60).unwrap(),
        [id("base~1"), id("base")]
    );
    let family = store.session_and_forks(&id("base")).unwrap();
    assert_eq!(family, [id("base~1"), id("base")]);
    assert!(
        store.prune_session(&id("base"), false).is_err(),
        "its fork still names it"
    );
    for session in &family {
        store.prune_session(session, false).unwrap();
    }
    assert_eq!(store.read(|tx| tx.health()).unwrap().sessions, 0);
    assert!(matches!(
        store.session_and_forks(&id("base")),
        Err(StoreError::UnknownSession { .. })
    ));
}

#[test]
fn messages_stored_after_a_prune_are_indexed() {
    let (_dir, store) = store();
    add_session(&store, &id("a"), "first", 1);
    store.prune_session(&id("a"), false).unwrap();
    add_session(&store, &id("b"), "second", 2);
    store.index_pending_messages().unwrap();
    let hits: u64 = store
        .read(|tx| {
            Ok(count(
                tx.conn(),
                "SELECT count(*) FROM message_search WHERE message_search MATCH ?1",
                "second",
            ))
        })
        .unwrap();
    assert_eq!(hits, 2);
}

#[test]
fn a_new_store_gives_freed_pages_back() {
    let (_dir, store) = store();
    let big = "word ".repeat(20_000);
    add_session(&store, &id("big"), &big, 1);
    let pruned = store.prune_session(&id("big"), false).unwrap();
    assert!(pruned.freed_bytes > 100_000, "{pruned:?}");
    let reclaimed = store.reclaim_free_pages().unwrap();
    assert_eq!(reclaimed.mode, AutoVacuum::Incremental);
    assert!(reclaimed.pages_returned * reclaimed.page_size >= pruned.freed_bytes);
    assert_eq!(store.reclaim_free_pages().unwrap().free_pages_before, 0);
}

#[test]
fn a_session_used_after_it_was_listed_stays() {
    let (_dir, store) = store();
    add_session(&store, &id("idle"), "idle", 10);
    add_session(&store, &id("back"), "back", 10);
    let due = store.sessions_due_for_prune(20).unwrap();
    assert_eq!(due, [id("back"), id("idle")]);
    add_session_seen(&store, &id("back"), 30);
    let run = store.prune_sessions(&due, Some(20), false).unwrap();
    let pruned: Vec<&SessionId> = run.sessions.iter().map(|s| &s.session).collect();
    assert_eq!(pruned, [&id("idle")]);
    assert!(
        store
            .read(|tx| tx.get_session(&id("back")))
            .unwrap()
            .is_some()
    );
}

fn add_session_seen(store: &Store, session: &SessionId, seen_ms: i64) {
    store
        .write(|tx| {
            tx.upsert_session(
                &NewSession {
                    id: session.clone(),
                    host: Host::ClaudeCode,
                    project: None,
                },
                seen_ms,
            )
        })
        .unwrap();
}
