//! The store handle: one writer connection, a few reader connections, and the transaction
//! shapes every repository runs in.

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};

use rusqlite::{Connection, TransactionBehavior};

use crate::checkpoint::Checkpointer;
use crate::connection::{self, StoreOptions};
use crate::error::{Result, StoreError, StoreFailure};
use crate::location::{self, DataLocation, DirOwner, LocationEnv, Platform};
use crate::migrations;

/// Idle reader connections kept for reuse; more are opened while many reads run at once.
const MAX_IDLE_READERS: usize = 4;

/// An open, migrated store.
///
/// `Store` is `Send + Sync` and blocking: share it in an `Arc` and call it from a writer thread
/// or `spawn_blocking`, never from an async task directly. Several processes may open the same
/// file; SQLite's locks keep them consistent.
#[derive(Debug)]
pub struct Store {
    /// First, so it is dropped (its thread stopped, its connection closed) before the
    /// store's connections close.
    _checkpointer: Option<Checkpointer>,
    path: PathBuf,
    options: StoreOptions,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    /// Counts this store's writes to the drops table; see [`WriteTx::drops_version`].
    drop_writes: AtomicU64,
}

impl Store {
    /// Opens (creating if needed) the store at `path` with default options.
    ///
    /// A missing parent directory is created 0700; an existing one is left as it is.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, StoreOptions::default())
    }

    /// Opens the store at `path` with the given options.
    pub fn open_with(path: impl AsRef<Path>, options: StoreOptions) -> Result<Self> {
        Self::open_at(path.as_ref(), DirOwner::User, options)
    }

    /// Opens the store at `$MAGIC_CONTEXT_DATA_DIR/context.db`, else in the platform's data
    /// directory (see [`location`](crate::resolve_data_dir)).
    pub fn open_default() -> Result<Self> {
        let location =
            location::resolve_data_dir(&LocationEnv::from_process(), Platform::current())?;
        Self::open_location(&location, StoreOptions::default())
    }

    /// Opens the store in a resolved data directory; our own directory is kept at 0700.
    pub fn open_location(location: &DataLocation, options: StoreOptions) -> Result<Self> {
        Self::open_at(&location.db_path(), location.owner, options)
    }

    fn open_at(path: &Path, owner: DirOwner, options: StoreOptions) -> Result<Self> {
        location::prepare_db_file(path, owner)?;
        let mut writer = connection::open_writer(path, &options)?;
        // The fence runs before anything writes: a refused file stays byte for byte as it was.
        migrations::check_fence(&writer, path)?;
        connection::configure_writer(&writer, path, &options)?;
        migrations::migrate(&mut writer, path)?;
        let checkpointer = Checkpointer::start(&mut writer, path, &options)?;
        let reader = connection::open_reader(path, &options)?;
        let store = Self {
            _checkpointer: checkpointer,
            path: path.to_path_buf(),
            options,
            writer: Mutex::new(writer),
            readers: Mutex::new(vec![reader]),
            drop_writes: AtomicU64::new(0),
        };
        store.index_pending_messages()?;
        Ok(store)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The options the store was opened with.
    pub(crate) fn options(&self) -> &StoreOptions {
        &self.options
    }

    /// Runs `work` in one write transaction, committed when it returns `Ok` and rolled back
    /// when it returns `Err` (or panics): all of a pass's writes land together or not at all.
    ///
    /// The transaction is `BEGIN IMMEDIATE`, taking the write lock before `work` reads
    /// anything. A deferred transaction would start as a read and upgrade to a write at its
    /// first insert; in WAL mode that upgrade fails with `SQLITE_BUSY` at once, without waiting
    /// for the busy timeout, whenever another connection committed since the read began. Taking
    /// the lock first means a concurrent writer only ever makes us wait, and only a lock held
    /// past the busy timeout becomes [`StoreError::Busy`].
    pub fn write<T>(&self, work: impl FnOnce(&WriteTx<'_>) -> Result<T>) -> Result<T> {
        self.write_with(work)
    }

    /// Like [`Store::write`] for callers with their own error type (the engine): an `Err` from
    /// `work` rolls the whole transaction back, whatever its type.
    pub fn write_with<T, E: StoreFailure>(
        &self,
        work: impl FnOnce(&WriteTx<'_>) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        self.in_write_transaction(work, true)
    }

    /// Runs `work` in a write transaction that is always rolled back: what it reads back of
    /// its own writes is exact, and nothing it wrote remains. A dry run of a change.
    pub(crate) fn rehearse<T>(&self, work: impl FnOnce(&WriteTx<'_>) -> Result<T>) -> Result<T> {
        self.in_write_transaction(work, false)
    }

    /// Runs `work` in a write transaction on the writer, then commits it, or rolls it back
    /// when not `commit`; an `Err` from `work` rolls it back either way.
    fn in_write_transaction<T, E: StoreFailure>(
        &self,
        work: impl FnOnce(&WriteTx<'_>) -> std::result::Result<T, E>,
        commit: bool,
    ) -> std::result::Result<T, E> {
        let mut conn = lock(&self.writer);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|source| self.failed("starting a write transaction", source))?;
        let value = work(&WriteTx {
            read: ReadTx { conn: &tx },
            drop_writes: &self.drop_writes,
        })
        .map_err(|err| err.at_store_path(&self.path))?;
        if commit {
            tx.commit()
                .map_err(|source| self.failed("committing a write transaction", source))?;
        } else {
            tx.rollback()
                .map_err(|source| self.failed("rolling back a rehearsed write", source))?;
        }
        Ok(value)
    }

    /// Runs `work` in one read transaction on a reader connection: every query inside sees
    /// the same snapshot, and reads never wait for the writer.
    pub fn read<T>(&self, work: impl FnOnce(&ReadTx<'_>) -> Result<T>) -> Result<T> {
        let mut conn = match lock(&self.readers).pop() {
            Some(conn) => conn,
            None => connection::open_reader(&self.path, &self.options)?,
        };
        let result = Self::read_on(&mut conn, work).map_err(|err| err.at_path(&self.path));
        let mut idle = lock(&self.readers);
        if idle.len() < MAX_IDLE_READERS {
            idle.push(conn);
        }
        result
    }

    /// Like [`Store::read`], for a short read that comes right before a write (the proxy's
    /// session resolution before its pass): it runs on the writer connection when no write is
    /// running, else on a reader, so it never waits for the writer.
    ///
    /// In WAL mode a connection empties its page cache whenever another connection has
    /// committed since its last transaction, so a reader reads every page again after each
    /// pass. The writer's cache survives its own commits and holds the pages the last pass
    /// touched. A long read must not use this: a write arriving meanwhile would wait for it.
    pub fn read_warm<T>(&self, work: impl FnOnce(&ReadTx<'_>) -> Result<T>) -> Result<T> {
        let mut conn = match self.writer.try_lock() {
            Ok(conn) => conn,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return self.read(work),
        };
        Self::read_on(&mut conn, work).map_err(|err| err.at_path(&self.path))
    }

    fn read_on<T>(conn: &mut Connection, work: impl FnOnce(&ReadTx<'_>) -> Result<T>) -> Result<T> {
        let tx = conn
            .transaction()
            .map_err(StoreError::sqlite("starting a read transaction"))?;
        let value = work(&ReadTx { conn: &tx })?;
        tx.commit()
            .map_err(StoreError::sqlite("ending a read transaction"))?;
        Ok(value)
    }

    fn failed(&self, doing: &'static str, source: rusqlite::Error) -> StoreError {
        StoreError::sqlite(doing)(source).at_path(&self.path)
    }
}

/// Locks a connection slot. A poisoned lock means a closure panicked mid-transaction; the
/// transaction rolled back as it unwound, so the connection is clean and safe to reuse.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A read transaction: one consistent snapshot of the store.
#[derive(Debug)]
pub struct ReadTx<'a> {
    conn: &'a Connection,
}

impl ReadTx<'_> {
    pub(crate) fn conn(&self) -> &Connection {
        self.conn
    }
}

/// A write transaction; it can read too (through `Deref`), seeing its own uncommitted writes.
#[derive(Debug)]
pub struct WriteTx<'a> {
    read: ReadTx<'a>,
    drop_writes: &'a AtomicU64,
}

/// A token for the state of every session's drops: two tokens read in write transactions
/// of the same [`Store`] are equal only if no drop was queued or landed in between, so a
/// copy of the drops read at one token is still exact at an equal one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DropsVersion {
    /// `PRAGMA data_version` of the writer connection: it changes whenever another
    /// connection (another process, another `Store` on the file) has committed.
    data_version: i64,
    /// This store's own drop writes, which `data_version` does not count.
    own_writes: u64,
}

impl WriteTx<'_> {
    /// Marks that this transaction writes drops (before it does, so a write that fails
    /// half-way still makes older tokens stale).
    pub(crate) fn note_drop_write(&self) {
        self.drop_writes.fetch_add(1, Ordering::Relaxed);
    }

    /// The current [`DropsVersion`]: one cached statement, in place of reading every drop
    /// of a session on each pass.
    pub fn drops_version(&self) -> Result<DropsVersion> {
        let data_version = self
            .conn()
            .prepare_cached("PRAGMA data_version")
            .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
            .map_err(StoreError::sqlite("reading the data version"))?;
        Ok(DropsVersion {
            data_version,
            own_writes: self.drop_writes.load(Ordering::Relaxed),
        })
    }
}

impl<'a> Deref for WriteTx<'a> {
    type Target = ReadTx<'a>;

    fn deref(&self) -> &ReadTx<'a> {
        &self.read
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_can_be_shared_across_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Store>();
    }
}
