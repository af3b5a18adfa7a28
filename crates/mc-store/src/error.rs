//! The one error type of the store.
//!
//! Every variant says what failed and what the reader should do next, because these messages
//! reach the user unchanged: the proxy refuses managed requests when the store cannot be opened
//! (DESIGN §7), and the refusal has to tell the user how to get going again.

use std::io;
use std::path::{Path, PathBuf};

use mc_core::SessionId;
use rusqlite::ErrorCode;

/// Result of every store operation.
pub type Result<T> = std::result::Result<T, StoreError>;

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No environment variable names a place for the store.
    #[error(
        "cannot find a data directory for the store: MAGIC_CONTEXT_DATA_DIR is not set and no \
         home directory is known; set MAGIC_CONTEXT_DATA_DIR to a directory magic-context may \
         write to"
    )]
    NoDataDir,

    /// The directory that holds the store could not be created or secured.
    #[error(
        "cannot prepare the data directory {}; check that it is a directory, that its parent \
         is writable by you, or set MAGIC_CONTEXT_DATA_DIR to another directory",
        path.display()
    )]
    DataDir {
        /// The directory.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: io::Error,
    },

    /// The database file exists but this process cannot open it for reading and writing.
    #[error(
        "cannot open the store {} for reading and writing; it must be a file you own with mode \
         0600: check its owner and permissions, or set MAGIC_CONTEXT_DATA_DIR to another directory",
        path.display()
    )]
    Unreadable {
        /// The database file.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: io::Error,
    },

    /// SQLite could not open or lock the file (permissions, a read-only or network file system).
    #[error(
        "SQLite cannot use the store {}; check that the file and its directory are \
         writable by you and on a local disk (WAL mode does not work on network shares)",
        path.display()
    )]
    Inaccessible {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },

    /// The file is not an SQLite database, or its pages are damaged.
    #[error(
        "the store {} is not a readable database (corrupt, or not an SQLite file); stop \
         magic-context, move the file aside (with its -wal and -shm files) and a new empty \
         store will be created on the next start, or restore it from a backup",
        path.display()
    )]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },

    /// The file is an SQLite database written by some other program.
    #[error(
        "{} is an SQLite database but not a magic-context store (it has tables and no store \
         schema version); nothing was changed; point MAGIC_CONTEXT_DATA_DIR at another directory",
        path.display()
    )]
    ForeignDatabase {
        /// The database file.
        path: PathBuf,
    },

    /// The schema fence: a newer magic-context has migrated this store.
    #[error(
        "{} has schema v{found} but this magic-context supports up to v{supported}; upgrade \
         magic-context (or point MAGIC_CONTEXT_DATA_DIR elsewhere); nothing was changed",
        path.display()
    )]
    SchemaTooNew {
        /// The database file.
        path: PathBuf,
        /// The version stored in the file.
        found: u32,
        /// The newest version this binary knows.
        supported: u32,
    },

    /// A migration failed; its transaction was rolled back, so the store stays at the version
    /// before it.
    #[error(
        "migrating {} to schema v{version} ({name}) failed and was rolled back; the store is \
         unchanged at the previous version; report this as a bug",
        path.display()
    )]
    Migration {
        /// The database file.
        path: PathBuf,
        /// The version that failed.
        version: u32,
        /// What the migration does.
        name: &'static str,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },

    /// SQLite refused to switch the store to WAL journaling.
    #[error(
        "SQLite kept the store {} in `{mode}` journal mode instead of WAL; the store needs a \
         local disk that supports shared memory (not a network share or a read-only mount)",
        path.display()
    )]
    NotWal {
        /// The database file.
        path: PathBuf,
        /// The journal mode SQLite reported.
        mode: String,
    },

    /// The linked SQLite was built without full-text search.
    #[error(
        "the SQLite linked into this magic-context has no FTS5 full-text search; rebuild \
         with rusqlite's `bundled` feature"
    )]
    FtsUnavailable,

    /// Another connection held the write lock for longer than the busy timeout.
    #[error(
        "the store stayed locked by another writer while {doing}; another magic-context \
         process may be stuck: retry, or stop the other process"
    )]
    Busy {
        /// What the store was doing.
        doing: &'static str,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },

    /// The store's file, its directory or its file system refuses writes.
    #[error(
        "the store at {} is read-only: magic-context writes every turn to it; make the file \
         and its directory writable by you (chmod u+w), or remount its disk read-write if it \
         went read-only after errors",
        path.display()
    )]
    ReadOnly {
        /// The database file.
        path: PathBuf,
        /// What the file system or SQLite said.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// The disk holding the store is full.
    #[error(
        "the disk holding the store at {} is full: the write was rolled back and nothing \
         was lost; free some space on that disk and retry",
        path.display()
    )]
    DiskFull {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },

    /// Any other SQLite failure.
    #[error("SQLite failed while {doing}")]
    Sqlite {
        /// What the store was doing.
        doing: &'static str,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },

    /// A backup would replace a file that exists.
    #[error(
        "{} already exists; choose another file, or pass --force to replace it",
        path.display()
    )]
    BackupExists {
        /// The file named for the backup.
        path: PathBuf,
    },

    /// SQLite's online backup failed.
    #[error("SQLite could not write the backup {}", path.display())]
    Backup {
        /// The file being written.
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },

    /// Creating, copying or renaming a file failed.
    #[error("failed while {doing} ({})", path.display())]
    File {
        /// What was being done.
        doing: &'static str,
        /// The file.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: io::Error,
    },

    /// A file offered as a store (a backup to restore) is not one.
    #[error("{} is not a magic-context store: {reason}; nothing was changed", path.display())]
    NotAStore {
        /// The file.
        path: PathBuf,
        /// Why not.
        reason: &'static str,
    },

    /// A backup made by a newer magic-context.
    #[error(
        "{} has schema v{found} but this magic-context supports up to v{supported}; restore it \
         with a newer magic-context; nothing was changed",
        path.display()
    )]
    BackupTooNew {
        /// The backup.
        path: PathBuf,
        /// Its schema version.
        found: u32,
        /// The newest version this binary knows.
        supported: u32,
    },

    /// An earlier restore's kept store is still there.
    #[error(
        "{} is kept from an earlier restore; move it elsewhere (or delete it once you no \
         longer need it) and restore again; nothing was changed",
        path.display()
    )]
    PreviousKept {
        /// The kept store.
        path: PathBuf,
    },

    /// Another process has the store open.
    #[error(
        "the store {} is open in another process (a running `magic-context serve`, `mcp` or \
         `run`); stop it and restore again; nothing was changed",
        path.display()
    )]
    StoreInUse {
        /// The store.
        path: PathBuf,
    },

    /// The session is not in the store.
    #[error("session `{session}` is not in the store; create it with upsert_session first")]
    UnknownSession {
        /// The session asked for.
        session: SessionId,
    },

    /// A session with this id already exists, so it cannot be created as a fork.
    #[error("session `{session}` already exists; a fork needs a new id")]
    SessionExists {
        /// The id already taken.
        session: SessionId,
    },

    /// An append did not start right after the last stored message.
    #[error(
        "session `{session}` has {expected} stored messages, so the next append must start at \
         ordinal {expected}, not {got}; the raw log is append-only and contiguous"
    )]
    OrdinalGap {
        /// The session appended to.
        session: SessionId,
        /// The ordinal the append had to start at (the stored count).
        expected: u64,
        /// The ordinal it started at.
        got: u64,
    },

    /// Compartments that do not continue a session's history from where it ends.
    #[error(
        "cannot store compartments for session `{session}`: {reason}; a session's compartments \
         cover its raw log from ordinal 0 in order, without gaps or overlaps"
    )]
    CompartmentGap {
        /// The session.
        session: SessionId,
        /// What is wrong.
        reason: String,
    },

    /// A rebuild's staged compartments do not yet cover what the ones in use cover.
    #[error(
        "the rebuilt compartments of session `{session}` cover ordinals below {staged_until}, \
         the ones in use below {needed}; the rebuild must continue before they can replace them"
    )]
    RebuildIncomplete {
        /// The session.
        session: SessionId,
        /// The first ordinal the staged compartments do not cover.
        staged_until: u64,
        /// The first ordinal the compartments in use do not cover.
        needed: u64,
    },

    /// No memory of this project has the id (it may belong to another project).
    #[error(
        "memory {id} not found in project `{project}`; list the project's memories to see \
         their ids"
    )]
    UnknownMemory {
        /// The project asked in.
        project: String,
        /// The id asked for.
        id: u64,
    },

    /// An edit would give a memory the wording another live memory already has.
    #[error(
        "memory {existing} of project `{project}` already says this; archive one of the two \
         (or edit memory {id} to say something else)"
    )]
    DuplicateMemory {
        /// The project.
        project: String,
        /// The memory being edited.
        id: u64,
        /// The live memory that already holds the wording.
        existing: u64,
    },

    /// A memory with no words in it.
    #[error("a memory needs some text; its content is empty")]
    EmptyMemory,

    /// A memory cannot take the change asked of it.
    #[error("memory {id} cannot be changed: {reason}")]
    MemoryRefused {
        /// The memory.
        id: u64,
        /// Why.
        reason: &'static str,
    },

    /// A change of project knowledge bound for the team store, which did not answer: it
    /// waits in the local queue and lands when the server returns. Not a failure of the
    /// change; its memory has no team id yet.
    #[error(
        "the team store is unreachable: the change waits in the local queue (write {write_id}) \
         and lands when it returns; list the memories then to see its id"
    )]
    QueuedForTeam {
        /// The id the queued write is replayed under.
        write_id: String,
    },

    /// The team store answered with something this binary cannot use (a newer schema, a
    /// row it cannot read).
    #[error("the team store cannot be used: {problem}")]
    TeamStore {
        /// What is wrong, as the team store client said it (the URL's password redacted).
        problem: String,
    },

    /// A fork point lies past the end of its parent.
    #[error("cannot fork session `{parent}` at ordinal {at}: it has only {count} messages")]
    ForkBeyondEnd {
        /// The parent session.
        parent: SessionId,
        /// The requested fork ordinal.
        at: u64,
        /// The parent's message count.
        count: u64,
    },

    /// A message could not be encoded for storage.
    #[error("cannot encode message {ordinal} of session `{session}` as JSON")]
    Encode {
        /// The session appended to.
        session: SessionId,
        /// The message's ordinal.
        ordinal: u64,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },

    /// A stored message cannot be decoded: the file was changed behind our back.
    #[error(
        "stored message {ordinal} of session `{session}` is damaged; the database was changed \
         outside magic-context: restore it from a backup"
    )]
    CorruptRow {
        /// The session read.
        session: SessionId,
        /// The damaged message.
        ordinal: u64,
        /// What is wrong with it.
        #[source]
        problem: RowProblem,
    },

    /// A stored session row cannot be decoded.
    #[error(
        "stored session `{id}` is damaged; the database was changed outside magic-context: \
         restore it from a backup"
    )]
    CorruptSession {
        /// The id as stored (it may itself be the damage).
        id: String,
        /// What is wrong with it.
        #[source]
        problem: RowProblem,
    },
}

/// What is wrong with a stored row.
#[derive(Debug, thiserror::Error)]
pub enum RowProblem {
    /// The content column is not the JSON of message parts.
    #[error("content is not valid message JSON")]
    Json(#[source] serde_json::Error),
    /// The role column names no role.
    #[error("unknown role `{0}`")]
    Role(String),
    /// The mode column names no session mode.
    #[error("unknown session mode `{0}`")]
    Mode(String),
    /// A hash column does not hold 32 bytes.
    #[error("{column} holds {len} bytes instead of 32")]
    HashLength {
        /// The column.
        column: &'static str,
        /// Its length.
        len: usize,
    },
    /// The content no longer hashes to the stored hash.
    #[error("content does not match its stored hash")]
    HashMismatch,
    /// An id column is not a valid id.
    #[error("an id is invalid")]
    Id(#[source] mc_core::InvalidId),
    /// The chain link is not the one computed from the message's hash and the previous
    /// link: a row was changed, lost or inserted outside magic-context.
    #[error("chain link does not follow from the message hash and the previous link")]
    ChainMismatch,
    /// Ordinals skip a message: the log should run 0, 1, 2, … without holes.
    #[error("ordinal found where {expected} was expected")]
    OrdinalGap {
        /// The ordinal the log should have held next.
        expected: u64,
    },
    /// A compartment's quotes column is not a JSON list of `{"ordinal", "text"}`.
    #[error("compartment quotes are not a list of {{ordinal, text}}")]
    Quotes,
    /// A compartment's index column is not `{"files", "ran", "names"}` lists of text.
    #[error("compartment index is not lists of files, commands and names")]
    RangeIndex,
}

impl StoreError {
    /// Wraps a SQLite error raised while `doing` something; a lock still held after the busy
    /// timeout becomes [`StoreError::Busy`].
    pub(crate) fn sqlite(doing: &'static str) -> impl FnOnce(rusqlite::Error) -> Self {
        move |source| match source.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy) => Self::Busy { doing, source },
            _ => Self::Sqlite { doing, source },
        }
    }

    /// Names the file in errors that are about the file rather than the operation: damage,
    /// permissions, a read-only file, a full disk. Other errors pass through.
    pub fn at_path(self, path: &Path) -> Self {
        let Self::Sqlite { doing, source } = self else {
            return self;
        };
        let path = path.to_path_buf();
        match source.sqlite_error_code() {
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
                Self::Corrupt { path, source }
            }
            Some(ErrorCode::ReadOnly) => Self::ReadOnly {
                path,
                source: Box::new(source),
            },
            Some(
                ErrorCode::CannotOpen
                | ErrorCode::PermissionDenied
                | ErrorCode::SystemIoFailure
                | ErrorCode::FileLockingProtocolFailed,
            ) => Self::Inaccessible { path, source },
            Some(ErrorCode::DiskFull) => Self::DiskFull { path, source },
            _ => Self::Sqlite { doing, source },
        }
    }

    /// Whether retrying the same operation in a moment may succeed: only a busy lock clears
    /// that fast (the engine retries briefly before refusing a turn, DESIGN §7).
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Busy { .. } => true,
            Self::DiskFull { .. }
            | Self::ReadOnly { .. }
            | Self::NoDataDir
            | Self::DataDir { .. }
            | Self::Unreadable { .. }
            | Self::Inaccessible { .. }
            | Self::Corrupt { .. }
            | Self::ForeignDatabase { .. }
            | Self::SchemaTooNew { .. }
            | Self::Migration { .. }
            | Self::NotWal { .. }
            | Self::FtsUnavailable
            | Self::Sqlite { .. }
            | Self::BackupExists { .. }
            | Self::Backup { .. }
            | Self::File { .. }
            | Self::NotAStore { .. }
            | Self::BackupTooNew { .. }
            | Self::PreviousKept { .. }
            | Self::StoreInUse { .. }
            | Self::UnknownSession { .. }
            | Self::SessionExists { .. }
            | Self::OrdinalGap { .. }
            | Self::ForkBeyondEnd { .. }
            | Self::UnknownMemory { .. }
            | Self::DuplicateMemory { .. }
            | Self::MemoryRefused { .. }
            | Self::EmptyMemory
            | Self::CompartmentGap { .. }
            | Self::RebuildIncomplete { .. }
            | Self::Encode { .. }
            | Self::CorruptRow { .. }
            | Self::CorruptSession { .. }
            | Self::QueuedForTeam { .. }
            | Self::TeamStore { .. } => false,
        }
    }
}

/// An error a write transaction's work may end with: the store's own, or a caller's type
/// that can hold one, so [`crate::Store::write_with`] names the store's file in it whatever
/// its type (a full disk met by an insert is about the file, not the insert).
pub trait StoreFailure: From<StoreError> {
    /// `self`, with the store error it holds (if any) passed through
    /// [`StoreError::at_path`].
    fn at_store_path(self, path: &Path) -> Self;
}

impl StoreFailure for StoreError {
    fn at_store_path(self, path: &Path) -> Self {
        self.at_path(path)
    }
}

#[cfg(test)]
mod tests;
