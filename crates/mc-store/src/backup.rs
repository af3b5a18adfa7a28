//! Copies of the store: a consistent backup taken while the store is in use, checking that a
//! file is a store this build can open, putting a backup in place, and the store's size.
//!
//! A backup is made with SQLite's online backup API from a reader connection, in one step:
//! it reads one snapshot, so writes committed meanwhile (a running `serve`) are either all in
//! it or not at all, and they never wait for it. The copy is switched out of WAL into a
//! single self-contained file, created 0600 like the store, beside its final name and renamed
//! into place only when complete, so an interrupted backup never leaves a half-written file
//! under that name.
//!
//! A restore only moves files: the store (with its `-wal` and `-shm` files, folded into it
//! first) becomes `<name>.before-restore`, and a private copy of the backup takes its name.
//! Nothing may have the store open meanwhile: a process that still held the old file would
//! go on writing to it, or to a log that no longer belongs to the file under its name.

use std::fs;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags};

use crate::connection;
use crate::error::{Result, StoreError};
use crate::location::create_private_new_file;
use crate::migrations::SCHEMA_VERSION;
use crate::store::Store;

/// The suffix the previous store takes when a backup is restored over it.
pub const BEFORE_RESTORE_SUFFIX: &str = ".before-restore";

/// The bytes the store takes on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreSize {
    /// The database file.
    pub db_bytes: u64,
    /// Its write-ahead log: commits not yet checkpointed into the file.
    pub wal_bytes: u64,
}

impl StoreSize {
    /// The database file and its log together.
    pub fn total_bytes(&self) -> u64 {
        self.db_bytes.saturating_add(self.wal_bytes)
    }
}

/// The size of the store at `db_path`; a missing file counts as empty.
pub fn store_size(db_path: &Path) -> StoreSize {
    let size = |path: &Path| fs::metadata(path).map(|meta| meta.len()).unwrap_or(0);
    StoreSize {
        db_bytes: size(db_path),
        wal_bytes: size(&sibling(db_path, "-wal")),
    }
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// The schema version of the restored store (migrated to this build's when next opened).
    pub schema_version: u32,
    /// Where the previous store was kept, if there was one.
    pub previous: Option<PathBuf>,
}

impl Store {
    /// Writes a consistent copy of the store to `out`, which must not exist
    /// ([`StoreError::BackupExists`]) unless `replace`, when an existing file is replaced
    /// only once the copy is complete.
    pub fn backup_to(&self, out: &Path, replace: bool) -> Result<()> {
        if !replace && out.exists() {
            return Err(StoreError::BackupExists {
                path: out.to_path_buf(),
            });
        }
        let partial = sibling(out, ".partial");
        let written = self.write_backup(&partial);
        let placed = written.and_then(|()| {
            fs::rename(&partial, out).map_err(|source| StoreError::File {
                doing: "moving the finished backup into place",
                path: out.to_path_buf(),
                source,
            })
        });
        if placed.is_err() {
            // The half-written copy is ours and useless; failing to remove it changes nothing.
            let _ = fs::remove_file(&partial);
            let _ = fs::remove_file(sibling(&partial, "-journal"));
        }
        placed
    }

    fn write_backup(&self, partial: &Path) -> Result<()> {
        // A leftover of an earlier interrupted backup is ours to replace.
        let _ = fs::remove_file(partial);
        create_private_new_file(partial).map_err(|source| StoreError::File {
            doing: "creating the backup file",
            path: partial.to_path_buf(),
            source,
        })?;
        let failed = |source| StoreError::Backup {
            path: partial.to_path_buf(),
            source,
        };
        let source = connection::open_reader(self.path(), self.options())?;
        let mut copy = Connection::open_with_flags(partial, OpenFlags::SQLITE_OPEN_READ_WRITE)
            .map_err(failed)?;
        {
            let backup = Backup::new(&source, &mut copy).map_err(failed)?;
            let deadline = Instant::now() + self.options().busy_timeout;
            // All pages in one step (-1): one read snapshot, never restarted by a commit.
            loop {
                match backup.step(-1).map_err(failed)? {
                    StepResult::Done => break,
                    StepResult::Busy | StepResult::Locked if Instant::now() < deadline => {
                        thread::sleep(Duration::from_millis(20));
                    }
                    StepResult::Busy | StepResult::Locked => {
                        return Err(StoreError::Backup {
                            path: partial.to_path_buf(),
                            source: rusqlite::Error::SqliteFailure(
                                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
                                None,
                            ),
                        });
                    }
                    // More pages to copy (and any result a later rusqlite adds): step again.
                    _ => {}
                }
            }
        }
        // The copied header says WAL; a backup is one file, with no log beside it.
        copy.query_row("PRAGMA journal_mode = DELETE", [], |row| {
            row.get::<_, String>(0)
        })
        .map_err(failed)?;
        copy.close().map_err(|(_, source)| failed(source))
    }
}

/// Checks that `path` is a store this build can open: an SQLite file with a store schema no
/// newer than [`SCHEMA_VERSION`], passing SQLite's quick check. Returns its schema version.
/// Only reads.
pub fn check_backup(path: &Path) -> Result<u32> {
    let not_a_store = |reason: &'static str| StoreError::NotAStore {
        path: path.to_path_buf(),
        reason,
    };
    if !path.is_file() {
        return Err(not_a_store("there is no such file"));
    }
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|_| not_a_store("it cannot be opened as an SQLite database"))?;
    let header: rusqlite::Result<(i64, bool)> = conn.query_row(
        "SELECT (SELECT user_version FROM pragma_user_version),
                EXISTS (SELECT 1 FROM sqlite_schema WHERE name = 'schema_migrations')",
        [],
        |row| Ok((row.get(0)?, row.get(1)?)),
    );
    let (version, has_store_schema) =
        header.map_err(|_| not_a_store("it is not an SQLite database"))?;
    let version = u32::try_from(version).map_err(|_| not_a_store("it has no store schema"))?;
    if version == 0 || !has_store_schema {
        return Err(not_a_store("it has no store schema"));
    }
    if version > SCHEMA_VERSION {
        return Err(StoreError::BackupTooNew {
            path: path.to_path_buf(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    let check: String = conn
        .query_row("PRAGMA quick_check", [], |row| row.get(0))
        .map_err(|_| not_a_store("SQLite cannot check its pages"))?;
    if check != "ok" {
        return Err(not_a_store(
            "its pages are damaged (SQLite's quick check failed)",
        ));
    }
    Ok(version)
}

/// Puts the backup at `backup` in place of the store at `db_path`, keeping the store as
/// `<db_path>.before-restore`. The backup is checked first ([`check_backup`]); an earlier
/// `.before-restore` file is never replaced ([`StoreError::PreviousKept`]). Nothing may have
/// the store open while this runs.
pub fn restore_backup(backup: &Path, db_path: &Path) -> Result<Restored> {
    let schema_version = check_backup(backup)?;
    let kept = sibling(db_path, BEFORE_RESTORE_SUFFIX);
    if kept.exists() {
        return Err(StoreError::PreviousKept { path: kept });
    }
    let incoming = sibling(db_path, ".restoring");
    let _ = fs::remove_file(&incoming);
    create_private_new_file(&incoming)
        .and_then(|()| fs::copy(backup, &incoming).map(drop))
        .map_err(|source| StoreError::File {
            doing: "copying the backup beside the store",
            path: incoming.clone(),
            source,
        })?;
    let previous = if db_path.exists() {
        fold_log_into_file(db_path)?;
        fs::rename(db_path, &kept).map_err(|source| StoreError::File {
            doing: "keeping the previous store",
            path: kept.clone(),
            source,
        })?;
        Some(kept)
    } else {
        None
    };
    fs::rename(&incoming, db_path).map_err(|source| StoreError::File {
        doing: "putting the backup in place",
        path: db_path.to_path_buf(),
        source,
    })?;
    Ok(Restored {
        schema_version,
        previous,
    })
}

/// How long the restore waits for other connections to the store to close.
const IN_USE_WAIT: Duration = Duration::from_secs(1);

/// Checkpoints the store's log into its file and leaves WAL mode, so the file alone holds
/// every commit and no `-wal` or `-shm` file is left to pair with another file later.
///
/// SQLite leaves WAL mode only when no other connection has the file open, so this is also
/// how a restore finds out that a `serve` (or any other process) still uses the store:
/// [`StoreError::StoreInUse`], with nothing changed.
fn fold_log_into_file(db_path: &Path) -> Result<()> {
    let failed = |source| StoreError::sqlite("folding the store's log into its file")(source);
    let in_use = || StoreError::StoreInUse {
        path: db_path.to_path_buf(),
    };
    let conn = Connection::open_with_flags(db_path, OpenFlags::SQLITE_OPEN_READ_WRITE)
        .map_err(|source| failed(source).at_path(db_path))?;
    conn.busy_timeout(IN_USE_WAIT)
        .map_err(|source| failed(source).at_path(db_path))?;
    let mode = conn
        .query_row("PRAGMA journal_mode = DELETE", [], |row| {
            row.get::<_, String>(0)
        })
        .map_err(|source| match failed(source) {
            StoreError::Busy { .. } => in_use(),
            other => other.at_path(db_path),
        })?;
    if !mode.eq_ignore_ascii_case("delete") {
        return Err(in_use());
    }
    conn.close()
        .map_err(|(_, source)| failed(source).at_path(db_path))
}

/// `path` with `suffix` added to its file name.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

#[cfg(test)]
mod tests;
