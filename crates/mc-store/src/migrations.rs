//! Versioned migrations and the schema fence.
//!
//! The schema version lives in `PRAGMA user_version`, in the database header, so the fence can
//! read it without touching a table and a migration can set it in the same transaction as its
//! DDL. Each migration runs in its own `BEGIN IMMEDIATE` transaction that re-reads the version
//! once it holds the write lock: when two processes open a fresh store at once, the second
//! waits for the first, sees the migration applied, and skips it. A failed migration rolls
//! back whole, leaving the store at the previous version.
//!
//! Migrations are append-only: never edit one that has shipped, add the next version instead.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use crate::error::{Result, StoreError};

/// One step of the schema.
struct Migration {
    /// The version the store has once this migration ran; versions count up from 1 by 1.
    version: u32,
    /// What it does, for errors and the `schema_migrations` table.
    name: &'static str,
    /// The DDL.
    sql: &'static str,
}

const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "sessions and raw messages",
        sql: include_str!("migrations/0001_sessions_messages.sql"),
    },
    Migration {
        version: 2,
        name: "engine state: tags, drops, passes",
        sql: include_str!("migrations/0002_engine_state.sql"),
    },
    Migration {
        version: 3,
        name: "call ledger",
        sql: include_str!("migrations/0003_call_ledger.sql"),
    },
    Migration {
        version: 4,
        name: "raw log keyed by row id, content last",
        sql: include_str!("migrations/0004_messages_rowid.sql"),
    },
    Migration {
        version: 5,
        name: "learned token corrections per model",
        sql: include_str!("migrations/0005_token_corrections.sql"),
    },
    Migration {
        version: 6,
        name: "historian compartments",
        sql: include_str!("migrations/0006_compartments.sql"),
    },
    Migration {
        version: 7,
        name: "historian facts, observations, runs and quotes",
        sql: include_str!("migrations/0007_historian_publish.sql"),
    },
    Migration {
        version: 8,
        name: "staging area of compartment rebuilds",
        sql: include_str!("migrations/0008_compartment_staging.sql"),
    },
    Migration {
        version: 9,
        name: "project memories and their change log",
        sql: include_str!("migrations/0009_memories.sql"),
    },
    Migration {
        version: 10,
        name: "full-text search indexes",
        sql: include_str!("migrations/0010_search.sql"),
    },
    Migration {
        version: 11,
        name: "agent notes",
        sql: include_str!("migrations/0011_notes.sql"),
    },
    Migration {
        version: 12,
        name: "exchanges the proxy ran for its own tools",
        sql: include_str!("migrations/0012_hidden_exchanges.sql"),
    },
    Migration {
        version: 13,
        name: "message search holds the next message",
        sql: include_str!("migrations/0013_message_search_next.sql"),
    },
    Migration {
        version: 14,
        name: "when each hidden exchange was last used",
        sql: include_str!("migrations/0014_hidden_exchange_use.sql"),
    },
    Migration {
        version: 15,
        name: "provisional compartments",
        sql: include_str!("migrations/0015_provisional_compartments.sql"),
    },
    Migration {
        version: 16,
        name: "messages a provider accepted",
        sql: include_str!("migrations/0016_accepted_messages.sql"),
    },
    Migration {
        version: 17,
        name: "compartment indexes",
        sql: include_str!("migrations/0017_compartment_index.sql"),
    },
    Migration {
        version: 18,
        name: "the folder of each project",
        sql: include_str!("migrations/0018_project_folders.sql"),
    },
    Migration {
        version: 19,
        name: "the user's profile",
        sql: include_str!("migrations/0019_user_profile.sql"),
    },
    Migration {
        version: 20,
        name: "dreamer lease and runs; the task behind a memory change",
        sql: include_str!("migrations/0020_dreamer.sql"),
    },
    Migration {
        version: 21,
        name: "a whole session can be pruned",
        sql: include_str!("migrations/0021_prune.sql"),
    },
    Migration {
        version: 22,
        name: "session modes and the session a subagent works for",
        sql: include_str!("migrations/0022_session_modes.sql"),
    },
    Migration {
        version: 23,
        name: "what a session carries from the conversation its client compacted away",
        sql: include_str!("migrations/0023_earlier_conversations.sql"),
    },
    Migration {
        version: 24,
        name: "the client's own prompt and the window on each call",
        sql: include_str!("migrations/0024_client_prompt.sql"),
    },
    Migration {
        version: 25,
        name: "when each memory was last retrieved or restated",
        sql: include_str!("migrations/0025_memory_use.sql"),
    },
    Migration {
        version: 26,
        name: "team store cache and write queue",
        sql: include_str!("migrations/0026_team_cache.sql"),
    },
    Migration {
        version: 27,
        name: "dreamer maintenance through the team write queue",
        sql: include_str!("migrations/0027_team_maintenance.sql"),
    },
    Migration {
        version: 28,
        name: "team-wide memory use and the team's smart notes",
        sql: include_str!("migrations/0028_team_use_and_notes.sql"),
    },
    Migration {
        version: 29,
        name: "the dreamer's pinned key files",
        sql: include_str!("migrations/0029_key_files.sql"),
    },
    Migration {
        version: 30,
        name: "the commit index shared through the team store",
        sql: include_str!("migrations/0030_team_commits.sql"),
    },
];

/// The newest schema version this binary knows; a store above it is refused.
pub const SCHEMA_VERSION: u32 = 30;

/// The stored version and whether the file has any schema, read in one statement so both come
/// from the same snapshot: read apart, another process's migration could land in between and
/// make a fresh store look like someone else's database.
fn read_header(conn: &Connection, path: &Path) -> Result<(u32, bool)> {
    let (version, has_tables): (i64, bool) = conn
        .query_row(
            "SELECT (SELECT user_version FROM pragma_user_version),
                    EXISTS (SELECT 1 FROM sqlite_schema)",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .map_err(|source| StoreError::sqlite("reading the schema version")(source).at_path(path))?;
    // user_version is a signed 32-bit field; we only ever write small positive numbers.
    let version = u32::try_from(version).map_err(|_| StoreError::ForeignDatabase {
        path: path.to_path_buf(),
    })?;
    Ok((version, has_tables))
}

/// The fence: reads the stored version, refusing a store newer than this binary and an SQLite
/// file that is not a store. Only reads, so a refused file is left exactly as it was.
pub(crate) fn check_fence(conn: &Connection, path: &Path) -> Result<u32> {
    let (found, has_tables) = read_header(conn, path)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            path: path.to_path_buf(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    if found == 0 && has_tables {
        return Err(StoreError::ForeignDatabase {
            path: path.to_path_buf(),
        });
    }
    Ok(found)
}

/// Brings the store up to [`SCHEMA_VERSION`]; returns the versions this call applied (empty
/// when another process, or an earlier run, already did).
pub(crate) fn migrate(conn: &mut Connection, path: &Path) -> Result<Vec<u32>> {
    let mut applied = Vec::new();
    let start = check_fence(conn, path)?;
    for migration in MIGRATIONS
        .iter()
        .filter(|migration| migration.version > start)
    {
        if apply(conn, path, migration)? {
            applied.push(migration.version);
        }
    }
    Ok(applied)
}

fn apply(conn: &mut Connection, path: &Path, migration: &Migration) -> Result<bool> {
    let failed =
        |source: rusqlite::Error| match StoreError::sqlite("migrating")(source).at_path(path) {
            StoreError::Sqlite { source, .. } => StoreError::Migration {
                path: path.to_path_buf(),
                version: migration.version,
                name: migration.name,
                source,
            },
            other => other,
        };
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|source| StoreError::sqlite("starting a migration")(source).at_path(path))?;
    // Holding the write lock now: another process may have migrated while we waited for it.
    if check_fence(&tx, path)? >= migration.version {
        return Ok(false);
    }
    tx.execute_batch(migration.sql).map_err(failed)?;
    tx.execute(
        "INSERT INTO schema_migrations (version, name) VALUES (?1, ?2)",
        (migration.version, migration.name),
    )
    .map_err(failed)?;
    tx.pragma_update(None, "user_version", migration.version)
        .map_err(failed)?;
    tx.commit().map_err(failed)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory() -> Connection {
        Connection::open_in_memory().unwrap()
    }

    /// The versions a store at `version` is migrated through.
    fn versions_after(version: u32) -> Vec<u32> {
        MIGRATIONS
            .iter()
            .map(|migration| migration.version)
            .filter(|&later| later > version)
            .collect()
    }

    #[test]
    fn versions_count_up_by_one_to_the_supported_version() {
        let versions: Vec<u32> = MIGRATIONS
            .iter()
            .map(|migration| migration.version)
            .collect();
        let expected: Vec<u32> = (1..=SCHEMA_VERSION).collect();
        assert_eq!(versions, expected);
    }

    #[test]
    fn migrating_twice_applies_each_version_once() {
        let mut conn = memory();
        let path = Path::new(":memory:");
        assert_eq!(migrate(&mut conn, path).unwrap(), versions_after(0));
        assert_eq!(migrate(&mut conn, path).unwrap(), Vec::<u32>::new());
        let rows: Vec<(u32, String)> = conn
            .prepare("SELECT version, name FROM schema_migrations")
            .unwrap()
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        let expected: Vec<(u32, String)> = MIGRATIONS
            .iter()
            .map(|migration| (migration.version, migration.name.to_owned()))
            .collect();
        assert_eq!(rows, expected);
        assert_eq!(check_fence(&conn, path).unwrap(), SCHEMA_VERSION);
    }

    /// A v13 store's hidden exchanges count as last used when they were stored.
    #[test]
    fn v14_dates_existing_hidden_exchanges_from_when_they_were_stored() {
        let mut conn = memory();
        let path = Path::new(":memory:");
        for migration in MIGRATIONS
            .iter()
            .filter(|migration| migration.version <= 13)
        {
            assert!(apply(&mut conn, path, migration).unwrap());
        }
        conn.execute(
            "INSERT INTO hidden_exchanges (anchor, splice, created_ms) VALUES ('a', '[]', 5)",
            [],
        )
        .unwrap();
        assert_eq!(migrate(&mut conn, path).unwrap(), versions_after(13));
        let last_used: i64 = conn
            .query_row(
                "SELECT last_used_ms FROM hidden_exchanges WHERE anchor = 'a'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(last_used, 5);
    }

    /// A v15 store's sessions were written by a working setup: after v16 they are not gated,
    /// and every message stays searchable.
    #[test]
    fn v16_leaves_existing_sessions_ungated() {
        let mut conn = memory();
        let path = Path::new(":memory:");
        for migration in MIGRATIONS
            .iter()
            .filter(|migration| migration.version <= 15)
        {
            assert!(apply(&mut conn, path, migration).unwrap());
        }
        conn.execute(
            "INSERT INTO sessions (id, host, created_ms, last_seen_ms)
             VALUES ('s', 'claude-code', 1, 1)",
            [],
        )
        .unwrap();
        assert_eq!(migrate(&mut conn, path).unwrap(), versions_after(15));
        let accepted: Option<i64> = conn
            .query_row(
                "SELECT accepted_messages FROM sessions WHERE id = 's'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(accepted, None);
    }

    /// A v19 store's memory log keeps its rows, ids and actors through v20, and takes the
    /// dreamer as an actor with the task that made the change.
    #[test]
    fn v20_keeps_the_memory_log_and_takes_dreamer_changes() {
        let mut conn = memory();
        let path = Path::new(":memory:");
        for migration in MIGRATIONS
            .iter()
            .filter(|migration| migration.version <= 19)
        {
            assert!(apply(&mut conn, path, migration).unwrap());
        }
        conn.execute_batch(
            "INSERT INTO memories (id, project_id, category, content, content_key, status,
               seen_count, source, created_ms, updated_ms)
             VALUES (1, 'p', 'NAMING', 'x', 'x', 'active', 1, 'agent', 1, 1);
             INSERT INTO memory_log (id, project_id, memory_id, action, at_ms, detail, actor)
             VALUES (7, 'p', 1, 'added', 1, 'agent', 'agent');",
        )
        .unwrap();
        assert_eq!(migrate(&mut conn, path).unwrap(), versions_after(19));
        let kept: (u64, String, Option<String>) = conn
            .query_row("SELECT id, actor, task FROM memory_log", [], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?))
            })
            .unwrap();
        assert_eq!(kept, (7, "agent".to_owned(), None));
        conn.execute(
            "INSERT INTO memory_log (project_id, memory_id, action, at_ms, actor, task)
             VALUES ('p', 1, 'archived', 2, 'dreamer', 'verify_memories')",
            [],
        )
        .unwrap();
        let unknown = conn.execute(
            "INSERT INTO memory_log (project_id, memory_id, action, at_ms, actor)
             VALUES ('p', 1, 'archived', 2, 'somebody')",
            [],
        );
        assert!(unknown.is_err());
    }

    /// A v21 store's sessions are primary ones spawned by nobody after v22, and a mode the
    /// engine does not know is refused.
    #[test]
    fn v22_makes_existing_sessions_primary() {
        let mut conn = memory();
        let path = Path::new(":memory:");
        for migration in MIGRATIONS
            .iter()
            .filter(|migration| migration.version <= 21)
        {
            assert!(apply(&mut conn, path, migration).unwrap());
        }
        conn.execute(
            "INSERT INTO sessions (id, host, created_ms, last_seen_ms)
             VALUES ('s', 'claude-code', 1, 1)",
            [],
        )
        .unwrap();
        assert_eq!(migrate(&mut conn, path).unwrap(), versions_after(21));
        let row: (String, Option<String>) = conn
            .query_row(
                "SELECT mode, spawned_by FROM sessions WHERE id = 's'",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .unwrap();
        assert_eq!(row, ("primary".to_owned(), None));
        let unknown = conn.execute("UPDATE sessions SET mode = 'helper' WHERE id = 's'", []);
        assert!(unknown.is_err());
    }

    /// A v23 store's calls keep every figure through v24 and have no client prompt, which
    /// the dashboard reads as "no estimate" for them; a negative figure is refused.
    #[test]
    fn v24_leaves_earlier_calls_without_a_client_prompt() {
        let mut conn = memory();
        let path = Path::new(":memory:");
        for migration in MIGRATIONS
            .iter()
            .filter(|migration| migration.version <= 23)
        {
            assert!(apply(&mut conn, path, migration).unwrap());
        }
        conn.execute_batch(
            "INSERT INTO sessions (id, host, created_ms, last_seen_ms)
             VALUES ('s', 'claude-code', 1, 1);
             INSERT INTO calls (session_id, started_ms, route, model, status,
               uncached_tokens, output_tokens, total_ms, overflow_retry)
             VALUES ('s', 5, 'anthropic', 'claude-sonnet-4-5', 200, 40, 7, 9, 0);",
        )
        .unwrap();
        assert_eq!(migrate(&mut conn, path).unwrap(), versions_after(23));
        let row: (u64, u64, Option<u64>, Option<u64>, Option<u64>) = conn
            .query_row(
                "SELECT uncached_tokens, output_tokens, client_prompt_tokens,
                        client_fixed_tokens, window_tokens FROM calls",
                [],
                |row| {
                    Ok((
                        row.get(0)?,
                        row.get(1)?,
                        row.get(2)?,
                        row.get(3)?,
                        row.get(4)?,
                    ))
                },
            )
            .unwrap();
        assert_eq!(row, (40, 7, None, None, None));
        let negative = conn.execute("UPDATE calls SET client_prompt_tokens = -1", []);
        assert!(negative.is_err());
    }

    /// A v24 store's memories count as used when use began to be recorded, and a historian
    /// memory takes the historian's last sighting of its fact as its last restatement.
    #[test]
    fn v25_dates_existing_memories_from_the_upgrade_and_the_historians_sightings() {
        let mut conn = memory();
        let path = Path::new(":memory:");
        for migration in MIGRATIONS
            .iter()
            .filter(|migration| migration.version <= 24)
        {
            assert!(apply(&mut conn, path, migration).unwrap());
        }
        conn.execute_batch(
            "INSERT INTO memories (id, project_id, category, content, content_key, status,
               seen_count, source, created_ms, updated_ms)
             VALUES (1, 'p', 'NAMING', 'x', 'x', 'active', 1, 'historian', 1, 1),
                    (2, 'p', 'NAMING', 'y', 'y', 'active', 1, 'agent', 1, 1);
             INSERT INTO historian_facts (scope, fact_key, category, content, seen_count,
               first_session, first_ms, last_ms)
             VALUES ('project:p', 'x', 'NAMING', 'x', 2, 's', 1, 40),
                    ('project:q', 'y', 'NAMING', 'y', 2, 's', 1, 50);",
        )
        .unwrap();
        assert_eq!(migrate(&mut conn, path).unwrap(), versions_after(24));
        let rows: Vec<(i64, Option<i64>, Option<i64>, i64)> = conn
            .prepare(
                "SELECT retrievals, last_retrieved_ms, last_restated_ms, use_recorded_from_ms
                 FROM memories ORDER BY id",
            )
            .unwrap()
            .query_map([], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(
            rows.iter()
                .map(|row| (row.0, row.1, row.2))
                .collect::<Vec<_>>(),
            [(0, None, Some(40)), (0, None, None)],
            "another project's sighting is not this one's"
        );
        let year_2025_ms = 1_735_689_600_000;
        assert!(rows.iter().all(|row| row.3 > year_2025_ms), "{rows:?}");
    }

    #[test]
    fn a_foreign_database_is_refused_untouched() {
        let mut conn = memory();
        conn.execute_batch("CREATE TABLE notes (body TEXT)")
            .unwrap();
        let err = migrate(&mut conn, Path::new("other.db")).unwrap_err();
        assert!(matches!(err, StoreError::ForeignDatabase { .. }), "{err}");
        let version: u32 = conn
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .unwrap();
        assert_eq!(version, 0);
    }

    #[test]
    fn the_fence_refuses_a_newer_schema() {
        let mut conn = memory();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
        let err = migrate(&mut conn, Path::new("/data/context.db")).unwrap_err();
        let newer = SCHEMA_VERSION + 1;
        assert!(
            matches!(
                err,
                StoreError::SchemaTooNew {
                    found,
                    supported: SCHEMA_VERSION,
                    ..
                } if found == newer
            ),
            "{err}"
        );
    }
}
