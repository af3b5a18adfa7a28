//! The embedded SQLite store of Magic Context.
//!
//! This crate owns the database file: where it lives (`$MAGIC_CONTEXT_DATA_DIR/context.db`,
//! else the platform data directory), its private permissions (0700 directory, 0600 file), its
//! versioned schema and the fence that refuses a newer one, the connection discipline that lets
//! several processes write without `SQLITE_BUSY`, and the repositories over the tables:
//! sessions and their append-only raw message log, chained by content hash; the engine's
//! tags, drops and pass log; the historian's compartments (and a rebuild's staged ones), facts
//! and runs; project memories and their change log, read and written through the
//! [`ProjectKnowledge`] trait, and beside them a team store's local cache and durable write
//! queue; the dreamer's lease and runs; the exchanges the proxy ran for its own
//! tools; and the call ledger with the per-session status built on it. Retention prunes a
//! whole session in one transaction; a backup is taken with SQLite's online backup API, and
//! restored only when its schema is one this build knows.
//!
//! What it must not do: decide anything about conversations (that is `mc-core`), speak a
//! provider's wire format (`mc-wire`), read the clock (every timestamp is an argument, unix
//! milliseconds), run async code (it is blocking; the engine calls it from a writer thread or
//! `spawn_blocking`), panic, or lose a stored row: the raw log is never updated, and deleted
//! only when retention prunes its whole session (with every other row of that session, in
//! one transaction); a failed write rolls back whole, and a store it does not understand is
//! refused untouched.
//!
//! ```
//! use mc_core::{Host, Message, Part, Role, SessionId};
//! use mc_store::{NewSession, Store};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let store = Store::open(dir.path().join("context.db"))?;
//! let id = SessionId::new("s-1")?;
//! let now_ms = 1_764_000_000_000;
//!
//! // One write transaction: everything in it lands together or not at all.
//! store.write(|tx| {
//!     tx.upsert_session(&NewSession { id: id.clone(), host: Host::ClaudeCode, project: None }, now_ms)?;
//!     let hello = Message::new(Role::User, vec![Part::text("fix the flaky test")]);
//!     tx.append_messages(&id, 0, &[hello], now_ms)
//! })?;
//!
//! // Reads see one snapshot and never wait for the writer.
//! let head = store.read(|tx| tx.chain_head(&id))?.expect("one message stored");
//! let found = store.read(|tx| tx.find_by_chain(&head))?.expect("the chain is indexed");
//! assert_eq!((found.session, found.ordinal), (id, 0));
//! # Ok(())
//! # }
//! ```

mod accepted;
mod backup;
mod branches;
mod calls;
mod chain_check;
mod checkpoint;
mod commits;
mod compartment_staging;
mod compartments;
mod connection;
mod dreamer_rows;
mod earlier_conversations;
mod engine_state;
mod error;
mod fork;
mod health;
mod hidden_exchanges;
mod historian_rows;
mod key_files;
mod knowledge;
mod location;
mod memories;
mod memory_maintenance;
mod memory_rows;
mod memory_use;
mod messages;
mod migrations;
mod notes;
mod project_folders;
mod provisional;
mod prune;
mod search;
mod search_index;
mod search_written;
mod session_status;
mod sessions;
mod store;
mod team_cache;
mod team_commits;
mod team_memory_use;
mod team_notes;
mod team_outbox;
mod team_promotion;
mod team_use_outbox;
mod token_corrections;
mod user_profile;
mod vectors;

pub use backup::{
    BEFORE_RESTORE_SUFFIX, Restored, StoreSize, check_backup, restore_backup, store_size,
};
pub use branches::{BRANCH_SEPARATOR, BranchHead};
pub use calls::CallRow;
pub use chain_check::{BrokenChain, ChainReport};
pub use commits::{Commit, CommitHit};
pub use compartment_staging::Swapped;
pub use connection::{DEFAULT_BUSY_TIMEOUT, StoreOptions};
pub use dreamer_rows::{DreamerRun, Lease, RunOutcome};
pub use earlier_conversations::EarlierConversationRow;
pub use engine_state::{DropRow, PassRow};
pub use error::{Result, RowProblem, StoreError, StoreFailure};
pub use health::StoreHealth;
pub use hidden_exchanges::HiddenExchange;
pub use historian_rows::{HistorianRun, StoredFact, history_scope};
pub use key_files::PinnedFile;
pub use knowledge::{KnowledgeSource, ProjectKnowledge, ProjectKnowledgeWrite};
pub use location::{
    APP_DIR_NAME, DATA_DIR_ENV, DB_FILE_NAME, DataLocation, DirOwner, LocationEnv, Platform,
    resolve_data_dir,
};
pub use memory_maintenance::{MemoryMaintenance, TeamMaintenance};
pub use memory_rows::{
    Added, MemoryAction, MemoryEdit, MemoryLogEntry, MemoryRecord, MemorySource, MemoryStatus,
    NewMemory, StoredMemory,
};
pub use memory_use::{MemoryUse, UsedMemory};
pub use messages::{ChainMatch, LogEnd, StoredMessage};
pub use migrations::SCHEMA_VERSION;
pub use notes::{NewNote, NoteHit, NoteOwner, NoteStatus, StoredNote};
pub use prune::{AutoVacuum, PruneRun, PrunedRows, Reclaimed, SessionPrune};
pub use search::{CompartmentHit, MemoryHit, MessageHit, SearchScope};
pub use session_status::{BustCount, ContextUse, SessionStatus, TokenTotals};
pub use sessions::{ForkPoint, NewSession, SessionRecord};
pub use store::{DropsVersion, ReadTx, Store, WriteTx};
pub use team_cache::TeamCache;
pub use team_commits::UnsentCommit;
pub use team_memory_use::TeamUse;
pub use team_notes::{QueuedTeamNoteWrite, TeamNote, TeamNoteWrite};
pub use team_outbox::{Maintenance, MaintenanceKind, QueuedTeamWrite, TeamWrite};
pub use team_promotion::historian_write_id;
pub use team_use_outbox::TeamUseBatch;
pub use user_profile::ProfileLine;
pub use vectors::{EmbedBatch, EmbedItem, StoredVector, VectorPlace, VectorSource};
