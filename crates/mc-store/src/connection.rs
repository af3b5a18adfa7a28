//! Opening SQLite connections with the settings every store connection needs.
//!
//! The connection discipline that keeps concurrent writers from seeing `SQLITE_BUSY`:
//!
//! - **WAL**: readers never block the writer and the writer never blocks readers.
//! - **`busy_timeout`**: a writer that finds the write lock taken waits for it (up to the
//!   timeout) instead of failing at once.
//! - **Every write transaction is `BEGIN IMMEDIATE`**: it takes the write lock up front, where
//!   the busy handler can wait for it. A deferred transaction that reads first and writes later
//!   has to upgrade its read snapshot to a write lock; in WAL mode, if another connection
//!   committed in between, that snapshot is stale and SQLite returns `SQLITE_BUSY` (BUSY_SNAPSHOT)
//!   immediately, without calling the busy handler: no timeout can save it. See
//!   [`Store::write`](crate::Store::write).
//! - **Reads go through separate connections** in deferred transactions, so one read sees one
//!   snapshot and never takes the write lock.
//!
//! Switching a fresh file to WAL can itself return `SQLITE_BUSY` when two processes do it at
//! the same moment; [`enable_wal`] retries that for up to the busy timeout.

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use rusqlite::config::DbConfig;
use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::error::{Result, StoreError};

/// How long to wait for a lock before giving up, unless [`StoreOptions`] says otherwise.
///
/// Five seconds: long enough to ride out a checkpoint or another process's migration, short
/// enough that a stuck writer is reported while the user still waits for the turn.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Tunables for opening a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreOptions {
    /// How long a connection waits for a lock held by another before reporting
    /// [`StoreError::Busy`].
    pub busy_timeout: Duration,
    /// The most pages the database may hold (SQLite's `max_page_count`); a write that needs
    /// more fails as it would on a full disk ([`StoreError::DiskFull`]). `None` keeps
    /// SQLite's own limit. Tests use it to fill a store without filling a disk.
    pub max_pages: Option<u64>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
            max_pages: None,
        }
    }
}

/// Prepared statements each connection keeps. A pass runs about twenty distinct statements
/// and a managed call a few more; preparing one costs about as much as running it, so they
/// all stay prepared (rusqlite's default keeps 16, which a pass would cycle through).
const STATEMENT_CACHE: usize = 64;

/// Opens a connection to an existing file (the store creates the file itself, with its mode,
/// before SQLite sees it) and sets the busy timeout first, so every later step waits for locks.
fn open(path: &Path, options: &StoreOptions) -> Result<Connection> {
    // No SQLITE_OPEN_CREATE: the file was created 0600 by `location`; if it vanished since,
    // failing beats SQLite recreating it with a default mode.
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)
        .map_err(|source| StoreError::sqlite("opening the database")(source).at_path(path))?;
    conn.busy_timeout(options.busy_timeout)
        .map_err(|source| StoreError::sqlite("setting the busy timeout")(source).at_path(path))?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    // The query planner's stability guarantee: plans never depend on bound values. Without
    // it this build of SQLite (STAT4 compiled in) marks a statement whose plan looked at a
    // bound value (`WHERE session_id = ?1 ORDER BY ordinal DESC LIMIT 1`, `MAX(tag) … WHERE
    // session_id = ?1`) as expiring on every new binding, so the cached statements of the
    // request path were parsed and planned again on every call (a tenth of a pass's time in
    // a profile of the proxy). The store keeps no planner statistics, so no plan changes.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map_err(|source| StoreError::sqlite("keeping query plans stable")(source).at_path(path))?;
    Ok(conn)
}

/// Checks that the linked SQLite has FTS5; search indexes depend on it.
pub(crate) fn check_fts5(conn: &Connection) -> Result<()> {
    let has_fts5: bool = conn
        .query_row(
            "SELECT sqlite_compileoption_used('ENABLE_FTS5')",
            [],
            |row| row.get(0),
        )
        .map_err(StoreError::sqlite("checking for FTS5"))?;
    if has_fts5 {
        Ok(())
    } else {
        Err(StoreError::FtsUnavailable)
    }
}

/// Opens the connection that does all writing, before migrations: busy timeout only. The
/// caller runs the schema fence next, while nothing has been written.
pub(crate) fn open_writer(path: &Path, options: &StoreOptions) -> Result<Connection> {
    let conn = open(path, options)?;
    // The first statement reads the file header: a damaged file shows up here.
    check_fts5(&conn).map_err(|err| err.at_path(path))?;
    Ok(conn)
}

/// Switches the store to WAL and sets the per-connection pragmas of the writer. Run after the
/// fence has accepted the file: the switch writes the file header.
pub(crate) fn configure_writer(
    conn: &Connection,
    path: &Path,
    options: &StoreOptions,
) -> Result<()> {
    // Only a store without tables takes the mode (for any other SQLite ignores it): pages
    // that pruning frees can then be given back to the file system without rewriting the
    // whole file. Stores created before schema v21 keep theirs.
    conn.execute_batch("PRAGMA auto_vacuum = INCREMENTAL")
        .map_err(|source| StoreError::sqlite("setting the vacuum mode")(source).at_path(path))?;
    enable_wal(conn, path, options.busy_timeout)?;
    let pragmas = "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;";
    conn.execute_batch(pragmas)
        .map_err(|source| StoreError::sqlite("setting connection pragmas")(source).at_path(path))?;
    if let Some(pages) = options.max_pages {
        // The pragma answers with the limit it set (never below the current size).
        conn.query_row(&format!("PRAGMA max_page_count = {pages}"), [], |_| Ok(()))
            .map_err(|source| {
                StoreError::sqlite("limiting the database size")(source).at_path(path)
            })?;
    }
    Ok(())
}

/// Opens a connection for reads. `query_only` makes a write through it an error, so the
/// discipline (writes only through the writer) is enforced rather than hoped for.
pub(crate) fn open_reader(path: &Path, options: &StoreOptions) -> Result<Connection> {
    let conn = open(path, options)?;
    conn.execute_batch("PRAGMA query_only = ON; PRAGMA foreign_keys = ON;")
        .map_err(|source| StoreError::sqlite("setting reader pragmas")(source).at_path(path))?;
    Ok(conn)
}

/// Opens the connection that checkpoints the log in the background
/// ([`crate::checkpoint`]).
pub(crate) fn open_checkpointer(path: &Path, options: &StoreOptions) -> Result<Connection> {
    let conn = open(path, options)?;
    // A connection only knows the file is in WAL mode once it has read it; until then a
    // checkpoint reports that there is no log.
    conn.query_row("PRAGMA journal_mode", [], |row| row.get::<_, String>(0))
        .map_err(|source| StoreError::sqlite("reading the journal mode")(source).at_path(path))?;
    Ok(conn)
}

/// `PRAGMA journal_mode = WAL`, retried while another connection holds the lock the switch
/// needs. The busy handler does not cover every case here (two connections on a fresh file,
/// each holding a shared lock and wanting an exclusive one, are told BUSY at once), so we retry
/// with a short backoff until the busy timeout has passed.
fn enable_wal(conn: &Connection, path: &Path, timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    let mut backoff = Duration::from_millis(2);
    loop {
        let result = conn
            .pragma_update_and_check(None, "journal_mode", "wal", |row| row.get::<_, String>(0));
        match result {
            Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
            Ok(mode) => {
                return Err(StoreError::NotWal {
                    path: path.to_path_buf(),
                    mode,
                });
            }
            Err(err) if is_busy(&err) && Instant::now() < deadline => {
                thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_millis(50));
            }
            Err(err) => {
                return Err(StoreError::sqlite("switching to WAL journal mode")(err).at_path(path));
            }
        }
    }
}

fn is_busy(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cached statement of the request path runs again with a new binding without being
    /// prepared again, on the writer and on a reader.
    #[test]
    fn cached_statements_are_not_prepared_again_for_new_bindings() {
        use mc_core::{Host, Message, Part, Role, SessionId};
        use rusqlite::StatementStatus;

        let dir = tempfile::tempdir().unwrap();
        let store = crate::Store::open(dir.path().join("context.db")).unwrap();
        let sessions = ["a", "b", "c"].map(|id| SessionId::new(id).unwrap());
        let newest = "SELECT ordinal, chain FROM messages WHERE session_id = ?1
                      ORDER BY ordinal DESC LIMIT 1";
        let reprepares = |conn: &Connection, session: &SessionId| {
            let mut statement = conn.prepare_cached(newest).unwrap();
            statement
                .query_row([session.as_str()], |row| row.get::<_, u64>(0))
                .unwrap();
            statement.get_status(StatementStatus::RePrepare)
        };
        for session in &sessions {
            store
                .write(|tx| {
                    tx.upsert_session(
                        &crate::NewSession {
                            id: session.clone(),
                            host: Host::ClaudeCode,
                            project: None,
                        },
                        1,
                    )?;
                    let message = Message::new(Role::User, vec![Part::text("hello")]);
                    tx.append_messages(session, 0, &[message], 1)
                })
                .unwrap();
        }
        store
            .write(|tx| {
                for session in &sessions {
                    assert_eq!(reprepares(tx.conn(), session), 0);
                }
                Ok(())
            })
            .unwrap();
        store
            .read(|tx| {
                for session in &sessions {
                    assert_eq!(reprepares(tx.conn(), session), 0);
                }
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn bundled_sqlite_has_fts5() {
        let conn = Connection::open_in_memory().unwrap();
        check_fts5(&conn).unwrap();
        conn.execute_batch(
            "CREATE VIRTUAL TABLE docs USING fts5(body);
             INSERT INTO docs (body) VALUES ('the flaky test'), ('a green build');",
        )
        .unwrap();
        let hit: String = conn
            .query_row(
                "SELECT body FROM docs WHERE docs MATCH 'flaky' ORDER BY bm25(docs)",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(hit, "the flaky test");
    }

    #[test]
    fn a_missing_file_is_not_created_by_sqlite() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("absent.db");
        let err = open(&path, &StoreOptions::default()).unwrap_err();
        assert!(matches!(err, StoreError::Inaccessible { .. }), "{err}");
        assert!(!path.exists());
    }
}
