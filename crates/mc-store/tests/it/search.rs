//! Full-text search: the raw log (tool output included), compartments and memories are
//! searchable as soon as their transaction commits, scoped to a project, a session and a time
//! window; query syntax in user text is searched as text; a store from before the index had
//! its log indexed when opened.

use mc_core::head::{Compartment, MemoryCategory};
use mc_core::search::{FtsQuery, fts_query};
use mc_core::{Host, Message, Part, ProjectId, Role};
use mc_store::{MemoryEdit, MemorySource, NewMemory, NewSession, SearchScope, Store};
use serde_json::json;

use crate::support::{NOW_MS, TempStore, seed, sid, text};

fn q(text: &str) -> FtsQuery {
    fts_query(text).unwrap()
}

fn project(id: &str) -> ProjectId {
    ProjectId::new(id).unwrap()
}

fn in_project(id: &str) -> SearchScope {
    SearchScope {
        project: Some(project(id)),
        ..SearchScope::default()
    }
}

/// The store with every stored message indexed, as a search first makes it.
fn caught_up(store: &Store) -> &Store {
    store.index_pending_messages().unwrap();
    store
}

fn ordinals(store: &Store, query: &str, scope: &SearchScope) -> Vec<(String, u64)> {
    caught_up(store)
        .read(|tx| tx.search_messages(&q(query), scope, 10))
        .unwrap()
        .into_iter()
        .map(|hit| (hit.session.as_str().to_owned(), hit.ordinal))
        .collect()
}

/// The best hit only: a message's successor also matches its words, through its context.
fn best(store: &Store, query: &str, scope: &SearchScope) -> Vec<(String, u64)> {
    ordinals(store, query, scope).into_iter().take(1).collect()
}

fn tool_exchange() -> Vec<Message> {
    vec![
        text(Role::User, "the build is failing on CI, please look"),
        Message::new(
            Role::Assistant,
            vec![Part::ToolCall {
                id: "c1".into(),
                name: "Bash".into(),
                input: json!({"command": "cargo test --workspace"}),
            }],
        ),
        Message::new(
            Role::User,
            vec![Part::ToolResult {
                call_id: "c1".into(),
                content: vec![Part::text(
                    "error[E0432]: unresolved import `tokio::fs::Permissions`",
                )],
                is_error: true,
            }],
        ),
        text(
            Role::Assistant,
            "The import path moved; I will fix the use statement.",
        ),
    ]
}

/// Storing messages leaves their indexing to a later transaction: the index reads nothing
/// of them until it is caught up, after which every one is found, and a second catch-up has
/// nothing left to do.
#[test]
fn messages_are_indexed_after_their_commit_and_found_once_caught_up() {
    let temp = TempStore::new();
    seed(&temp.store, "s1", &tool_exchange(), NOW_MS);
    let scope = in_project("proj");
    let before = temp
        .store
        .read(|tx| tx.search_messages(&q("unresolved"), &scope, 10))
        .unwrap();
    assert!(before.is_empty(), "indexed inside the storing transaction");
    assert_eq!(temp.store.index_pending_messages().unwrap(), 4);
    assert_eq!(ordinals(&temp.store, "unresolved", &scope).len(), 3);
    assert_eq!(temp.store.index_pending_messages().unwrap(), 0);
}

#[test]
fn tool_results_and_call_arguments_are_found_as_soon_as_they_are_stored() {
    let temp = TempStore::new();
    seed(&temp.store, "s1", &tool_exchange(), NOW_MS);
    let scope = in_project("proj");
    // The message with every word ranks first; the reply after it follows (by its own
    // "import" and the result before it), then the call that produced it (by its result).
    assert_eq!(
        ordinals(&temp.store, "unresolved import Permissions", &scope),
        [("s1".into(), 2), ("s1".into(), 3), ("s1".into(), 1)]
    );
    // The call ranks first; the request that led to it and its result follow, found by
    // the command after or before them.
    assert_eq!(
        ordinals(&temp.store, "cargo workspace", &scope),
        [("s1".into(), 1), ("s1".into(), 0), ("s1".into(), 2)]
    );
    // Porter stemming: "failed" finds "failing".
    assert_eq!(
        best(&temp.store, "failed build", &scope),
        [("s1".into(), 0)]
    );
}

#[test]
fn query_syntax_in_user_text_is_searched_as_text() {
    let temp = TempStore::new();
    seed(&temp.store, "s1", &tool_exchange(), NOW_MS);
    let scope = in_project("proj");
    for query in [
        r#"error[E0432]: "unresolved"*"#,
        "NEAR(import statement)",
        "-tokio col:fs",
        "import AND OR NOT",
        "^fix'); DROP TABLE messages; --",
    ] {
        let hits = caught_up(&temp.store).read(|tx| tx.search_messages(&q(query), &scope, 10));
        assert!(hits.is_ok(), "{query}: {hits:?}");
    }
    assert!(!ordinals(&temp.store, "-tokio col:fs", &scope).is_empty());
}

#[test]
fn another_project_a_session_filter_and_time_bounds_narrow_the_hits() {
    let temp = TempStore::new();
    seed(&temp.store, "s1", &tool_exchange(), NOW_MS);
    temp.store
        .write(|tx| {
            tx.upsert_session(
                &NewSession {
                    id: sid("other"),
                    host: Host::ClaudeCode,
                    project: Some(project("elsewhere")),
                },
                NOW_MS,
            )?;
            tx.append_messages(
                &sid("other"),
                0,
                &[text(Role::User, "unresolved import here too")],
                NOW_MS + 5_000,
            )
        })
        .unwrap();
    assert_eq!(
        best(&temp.store, "unresolved", &in_project("proj")),
        [("s1".into(), 2)]
    );
    assert_eq!(
        ordinals(&temp.store, "unresolved", &in_project("elsewhere")),
        [("other".into(), 0)]
    );
    assert_eq!(
        ordinals(&temp.store, "unresolved", &SearchScope::default()).len(),
        4,
        "both messages saying it, and the ones after and before the first (by their context)"
    );
    let later = SearchScope {
        since_ms: Some(NOW_MS + 1),
        ..SearchScope::default()
    };
    assert_eq!(
        ordinals(&temp.store, "unresolved", &later),
        [("other".into(), 0)]
    );
    let earlier = SearchScope {
        until_ms: Some(NOW_MS + 1),
        ..SearchScope::default()
    };
    assert_eq!(
        best(&temp.store, "unresolved", &earlier),
        [("s1".into(), 2)]
    );
    let one_session = SearchScope {
        session: Some(sid("other")),
        ..SearchScope::default()
    };
    assert_eq!(
        ordinals(&temp.store, "unresolved", &one_session),
        [("other".into(), 0)]
    );
}

#[test]
fn a_fork_finds_the_messages_it_copied() {
    let temp = TempStore::new();
    seed(&temp.store, "s1", &tool_exchange(), NOW_MS);
    temp.store
        .write(|tx| tx.fork_session(&sid("s1"), &sid("s1-fork"), 3, NOW_MS))
        .unwrap();
    let fork = SearchScope {
        session: Some(sid("s1-fork")),
        ..SearchScope::default()
    };
    assert_eq!(
        ordinals(&temp.store, "unresolved", &fork),
        [("s1-fork".into(), 2), ("s1-fork".into(), 1)]
    );
    let hits = caught_up(&temp.store)
        .read(|tx| tx.search_messages(&q("unresolved"), &in_project("proj"), 10))
        .unwrap();
    // Ordinal 2 of both sessions, then ordinal 3 of the parent (by its context) and ordinal 1
    // of both (by their successor).
    assert_eq!(hits.len(), 5);
    assert_eq!(
        hits[0].hash, hits[1].hash,
        "a fork's copy carries the same content hash"
    );
}

#[test]
fn a_store_from_before_the_index_is_indexed_when_opened() {
    let temp = TempStore::new();
    seed(&temp.store, "s1", &tool_exchange(), NOW_MS);
    let path = temp.path();
    drop(temp.store);
    {
        // What a store written before the index existed looks like: no postings, watermark 0.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "INSERT INTO message_search (message_search) VALUES ('delete-all');
             UPDATE search_watermarks SET indexed_through = 0;",
        )
        .unwrap();
    }
    {
        let store = Store::open(&path).unwrap();
        assert_eq!(
            ordinals(&store, "unresolved", &in_project("proj")),
            [("s1".into(), 2), ("s1".into(), 3), ("s1".into(), 1)]
        );
    }
}

#[test]
fn a_message_is_found_by_the_reply_that_came_later() {
    let temp = TempStore::new();
    seed(
        &temp.store,
        "s1",
        &[text(Role::User, "how do we configure the proxy?")],
        NOW_MS,
    );
    let scope = in_project("proj");
    assert_eq!(
        ordinals(&temp.store, "backoff_max", &scope),
        Vec::<(String, u64)>::new()
    );
    // The reply arrives in a later transaction: the question's row is rewritten with it.
    temp.store
        .write(|tx| {
            tx.append_messages(
                &sid("s1"),
                1,
                &[text(Role::Assistant, "set backoff_max under [retries]")],
                NOW_MS,
            )
        })
        .unwrap();
    assert_eq!(
        ordinals(&temp.store, "backoff_max", &scope),
        [("s1".into(), 1), ("s1".into(), 0)],
        "the reply first, then the question it answers"
    );
    // The question keeps its own words and its row is not doubled.
    assert_eq!(
        ordinals(&temp.store, "configure proxy", &scope),
        [("s1".into(), 0), ("s1".into(), 1)]
    );
}

#[test]
fn a_store_indexed_without_successors_is_reindexed_with_them_and_keeps_its_log() {
    let temp = TempStore::new();
    seed(&temp.store, "s1", &tool_exchange(), NOW_MS);
    let path = temp.path();
    drop(temp.store);
    {
        // What a version 12 store looks like: an index of each message and its predecessor
        // (hidden exchanges without their last use, v14, no provisional compartments, v15,
        // sessions not gated, v16, compartments without an index, v17, no project folders,
        // v18, no user profile, v19, no dreamer tables, v20, a raw log no prune can delete
        // from, v21, sessions without modes, v22, no carried conversations, v23, calls
        // without the client's prompt, v24, memories without their use, v25).
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "DROP TABLE message_search;
             CREATE VIRTUAL TABLE message_search USING fts5(body, context, content = '',
                 tokenize = 'porter unicode61 remove_diacritics 2');
             INSERT INTO message_search (rowid, body, context)
                 SELECT rowid, 'old words', '' FROM messages;
             DROP INDEX hidden_exchanges_by_last_use;
             ALTER TABLE hidden_exchanges DROP COLUMN last_used_ms;
             DROP TABLE provisional_compartments;
             ALTER TABLE sessions DROP COLUMN accepted_messages;
             DROP TRIGGER compartment_search_insert;
             CREATE TRIGGER compartment_search_insert AFTER INSERT ON compartments
             BEGIN
                 INSERT INTO compartment_search (title, body, session_id, start_ordinal)
                 VALUES (new.title, new.tier_full, new.session_id, new.start_ordinal);
             END;
             ALTER TABLE compartments DROP COLUMN range_index;
             ALTER TABLE staged_compartments DROP COLUMN range_index;
             DROP TABLE project_folders;
             DROP TABLE user_profile;
             DROP TABLE team_memory_use;
             DROP TABLE team_use_outbox;
             DROP TABLE team_note_outbox;
             DROP INDEX notes_by_team_origin;
             ALTER TABLE notes DROP COLUMN team_origin;
             DROP TABLE team_memory_search;
             DROP TABLE team_memories;
             DROP TABLE team_memory_log;
             DROP TABLE team_cursors;
             DROP TABLE team_outbox;
             DROP TABLE dreamer_leases;
             DROP TABLE dreamer_runs;
             DROP TABLE earlier_conversations;
             DROP TRIGGER messages_are_append_only_delete;
             DROP TABLE sessions_being_pruned;
             DROP TABLE key_files;
             DROP INDEX commits_team_unsent;
             ALTER TABLE commits DROP COLUMN team_sent;
             ALTER TABLE sessions DROP COLUMN mode;
             ALTER TABLE sessions DROP COLUMN spawned_by;
             ALTER TABLE calls DROP COLUMN client_prompt_tokens;
             ALTER TABLE calls DROP COLUMN client_fixed_tokens;
             ALTER TABLE calls DROP COLUMN window_tokens;
             ALTER TABLE memories DROP COLUMN retrievals;
             ALTER TABLE memories DROP COLUMN last_retrieved_ms;
             ALTER TABLE memories DROP COLUMN last_restated_ms;
             ALTER TABLE memories DROP COLUMN use_recorded_from_ms;
             CREATE TRIGGER messages_are_append_only_delete BEFORE DELETE ON messages
             BEGIN
                 SELECT RAISE(ABORT, 'the raw message log is append-only');
             END;
             DELETE FROM schema_migrations WHERE version >= 13;
             PRAGMA user_version = 12;",
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    let log = store
        .read(|tx| tx.messages(&sid("s1"), 0..u64::MAX))
        .unwrap();
    assert_eq!(log.len(), tool_exchange().len(), "the log is kept");
    assert_eq!(
        ordinals(&store, "old words", &in_project("proj")),
        Vec::<(String, u64)>::new()
    );
    // The result is found by its own words, the reply by its predecessor's, the call by its
    // successor's.
    assert_eq!(
        ordinals(&store, "unresolved", &in_project("proj")),
        [("s1".into(), 2), ("s1".into(), 3), ("s1".into(), 1)]
    );
}

#[test]
fn memories_are_searchable_through_edits_and_gone_once_archived() {
    let temp = TempStore::new();
    let p = project("proj");
    let id = temp
        .store
        .write(|tx| {
            tx.add_memory(
                &p,
                &NewMemory {
                    category: MemoryCategory::ConfigValues,
                    content: "The proxy listens on port 4141 by default",
                    source: MemorySource::Operator,
                    permanent: false,
                },
                NOW_MS,
            )
        })
        .unwrap()
        .id();
    let found = |query: &str, project: &ProjectId| -> Vec<u64> {
        temp.store
            .read(|tx| tx.search_memories(&q(query), project, &SearchScope::default(), 10))
            .unwrap()
            .into_iter()
            .map(|hit| hit.id)
            .collect()
    };
    assert_eq!(found("which port does it listen on", &p), [id]);
    assert!(found("port", &project("elsewhere")).is_empty());
    temp.store
        .write(|tx| {
            tx.edit_memory(
                &p,
                id,
                MemoryEdit {
                    category: None,
                    content: Some("The proxy binds 127.0.0.1:4242"),
                },
                MemorySource::Operator,
                NOW_MS + 1,
            )
        })
        .unwrap();
    assert!(found("listens", &p).is_empty());
    assert_eq!(found("binds", &p), [id]);
    temp.store
        .write(|tx| tx.archive_memory(&p, id, MemorySource::Operator, NOW_MS + 2))
        .unwrap();
    assert!(found("binds", &p).is_empty());
}

#[test]
fn compartments_are_searchable_and_follow_a_rebuild() {
    let temp = TempStore::new();
    seed(&temp.store, "s1", &tool_exchange(), NOW_MS);
    let compartment = |title: &str, body: &str| Compartment {
        start_ordinal: 0,
        end_ordinal: 3,
        start_ms: NOW_MS as u64,
        end_ms: NOW_MS as u64,
        title: title.into(),
        importance: 50,
        episode: "debugging".into(),
        tiers: [body.into(), "c".into(), "p".into(), "l".into()],
        quotes: Vec::new(),
        index: mc_core::head::RangeIndex::default(),
    };
    temp.store
        .write(|tx| {
            tx.append_compartments(
                &sid("s1"),
                &[compartment("CI repair", "Fixed the tokio import path")],
                NOW_MS,
            )
        })
        .unwrap();
    let found = |query: &str| -> Vec<u64> {
        temp.store
            .read(|tx| tx.search_compartments(&q(query), &in_project("proj"), 10))
            .unwrap()
            .into_iter()
            .map(|hit| hit.start_ordinal)
            .collect()
    };
    assert_eq!(found("tokio import"), [0]);
    assert_eq!(found("repair"), [0]);
    temp.store
        .write(|tx| {
            tx.stage_compartments(
                &sid("s1"),
                &[compartment("Rebuilt", "Moved the use statement")],
                NOW_MS,
            )?;
            tx.swap_staged_compartments(&sid("s1"))
        })
        .unwrap();
    assert!(found("tokio").is_empty());
    assert_eq!(found("statement"), [0]);
}

#[test]
fn a_small_project_is_found_beside_a_large_one_saying_the_same() {
    let temp = TempStore::new();
    let crowd: Vec<Message> = (0..700)
        .map(|i| text(Role::User, &format!("alpha beta message {i}")))
        .collect();
    seed(&temp.store, "big", &crowd, NOW_MS);
    temp.store
        .write(|tx| {
            tx.upsert_session(
                &NewSession {
                    id: sid("small"),
                    host: Host::ClaudeCode,
                    project: Some(project("small-project")),
                },
                NOW_MS,
            )?;
            tx.append_messages(
                &sid("small"),
                0,
                &[
                    text(Role::User, "alpha beta in the small project"),
                    text(Role::Assistant, "only alpha here"),
                ],
                NOW_MS,
            )
        })
        .unwrap();
    // The big project's 700 matches fill the index's first pool; the small project's are
    // still found, every word first.
    let hits = ordinals(&temp.store, "alpha beta", &in_project("small-project"));
    assert_eq!(hits[0], ("small".to_owned(), 0));
    assert_eq!(hits.len(), 2);
}

mod properties {
    use mc_core::search::fts_query;
    use proptest::prelude::*;

    use super::*;

    fn any_query() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<String>(),
            "[a-z \"*:^()\\-]{0,40}",
            prop::collection::vec(
                prop_oneof![
                    Just("NEAR(".to_owned()),
                    Just("AND".to_owned()),
                    Just("OR".to_owned()),
                    Just("NOT".to_owned()),
                    Just("\"".to_owned()),
                    Just("*".to_owned()),
                    Just("body:".to_owned()),
                    Just("{body context}".to_owned()),
                    "[a-z]{1,8}",
                ],
                0..12
            )
            .prop_map(|words| words.join(" ")),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Whatever is typed, every source answers (possibly nothing), never an SQL error,
        /// and never with another project's rows.
        #[test]
        fn any_text_searches_every_source_within_its_project(query in any_query()) {
            let temp = TempStore::new();
            seed(&temp.store, "s1", &tool_exchange(), NOW_MS);
            let Ok(query) = fts_query(&query) else { return Ok(()) };
            let other = project("elsewhere");
            let scope = in_project("elsewhere");
            let found = caught_up(&temp.store).read(|tx| {
                Ok((
                    tx.search_messages(&query, &scope, 10)?,
                    tx.search_compartments(&query, &scope, 10)?,
                    tx.search_memories(&query, &other, &scope, 10)?,
                    tx.search_commits(&query, &other, &scope, 10)?,
                ))
            });
            let (messages, compartments, memories, commits) = found.map_err(|err| TestCaseError::fail(err.to_string()))?;
            prop_assert!(messages.is_empty() && compartments.is_empty());
            prop_assert!(memories.is_empty() && commits.is_empty());
            let mine = temp.store.read(|tx| tx.search_messages(&query, &in_project("proj"), 10));
            prop_assert!(mine.is_ok(), "{:?}", mine);
        }
    }
}

/// A made name is found where it is written as one: the messages that hold the words of
/// `old_field` apart (shorter, so ranked first by their words alone) come after those that
/// name it, and a message is found by its own words, not by a neighbour naming it.
#[test]
fn a_made_name_finds_the_messages_that_name_it() {
    let temp = TempStore::new();
    let messages = [
        text(Role::User, "the field is old"),
        text(Role::Assistant, "the old one, and a field"),
        text(
            Role::User,
            "the migration reads old_field.model before it alters the column, then compares it with the new field's model and keeps the old_field when both are equal",
        ),
        text(Role::Assistant, "field old"),
        text(
            Role::User,
            "renaming it breaks self.old_field in the schema editor, which every backend calls while the migration runs",
        ),
        text(Role::Assistant, "old and field, apart"),
    ];
    seed(&temp.store, "s1", &messages, NOW_MS);
    let found = ordinals(&temp.store, "old_field", &SearchScope::default());
    assert_eq!(found, [("s1".to_owned(), 2), ("s1".to_owned(), 4)]);
    let worded = ordinals(&temp.store, "the old field", &SearchScope::default());
    assert_eq!(worded.len(), messages.len(), "{worded:?}");
}

/// A made name written in one message only comes first, and the messages that hold one of
/// its words follow: too few to answer alone, the exact finds are not dropped for the
/// broader ones.
#[test]
fn a_made_name_written_once_comes_before_its_words() {
    let temp = TempStore::new();
    let messages = [
        text(Role::User, "query it"),
        text(Role::Assistant, "the query"),
        text(
            Role::User,
            "class SQLDeleteCompiler compiles the statement; def do_query(self, table, where, using) sets the alias map first and then runs the delete for every batch of primary keys",
        ),
        text(Role::Assistant, "query again"),
        text(Role::User, "a query"),
    ];
    seed(&temp.store, "s1", &messages, NOW_MS);
    let found = ordinals(&temp.store, "do_query", &SearchScope::default());
    assert_eq!(found.first(), Some(&("s1".to_owned(), 2)), "{found:?}");
    assert_eq!(found.len(), messages.len(), "{found:?}");
}

/// A sentence around a made name finds the message that writes the name first, then ranks
/// the rest by the sentence's words: the shorter messages holding more of its words do not
/// push the one naming it down.
#[test]
fn a_sentence_ranks_the_message_writing_its_made_name_first() {
    let temp = TempStore::new();
    let messages = [
        text(Role::User, "why does the delete fail"),
        text(Role::Assistant, "the delete query fails"),
        text(
            Role::User,
            "class SQLDeleteCompiler compiles the statement; def do_query(self, table, where, using) sets the alias map first and then runs the statement for every batch of primary keys",
        ),
        text(Role::Assistant, "fail again on delete"),
    ];
    seed(&temp.store, "s1", &messages, NOW_MS);
    let found = ordinals(
        &temp.store,
        "why does the delete in do_query fail",
        &SearchScope::default(),
    );
    assert_eq!(found.first(), Some(&("s1".to_owned(), 2)), "{found:?}");
    assert_eq!(found.len(), messages.len(), "{found:?}");
}

/// Of the messages a made name's phrase matches, the one that writes the name exactly comes
/// first: the phrase `model fields` also matches the stemmed path `models/fields`, whose
/// short message BM25 ranks above the long listing that wrote `model_fields`.
#[test]
fn the_message_writing_a_made_name_exactly_comes_before_its_stemmed_words() {
    let temp = TempStore::new();
    let listing = format!(
        "{} model_fields {}",
        "admin_checks admin_views aggregation annotations ".repeat(20),
        "queries schema serializers signals ".repeat(20)
    );
    let messages = [
        text(Role::Assistant, "see django/db/models/fields/__init__.py"),
        text(Role::User, &listing),
        text(Role::Assistant, "and models/fields again"),
    ];
    seed(&temp.store, "s1", &messages, NOW_MS);
    let found = ordinals(&temp.store, "model_fields", &SearchScope::default());
    assert_eq!(found.first(), Some(&("s1".to_owned(), 1)), "{found:?}");
    assert_eq!(found.len(), messages.len(), "{found:?}");
}
