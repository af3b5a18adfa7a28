//! Project knowledge behind one seam: the reads and writes of a project's memories and their
//! change log that the engine, search and the agent tools make, whichever store holds them.
//!
//! Project knowledge is what a team can share (DESIGN §3): the raw log, tags, drops and ledger
//! always stay in this SQLite file, but a project's memories may live in a team store on
//! PostgreSQL. Callers that only need project knowledge take `&dyn ProjectKnowledge` (or
//! `&dyn ProjectKnowledgeWrite`) instead of a SQLite transaction, so the team store can stand
//! where the local tables stand today. This file holds the SQLite implementation: a read
//! transaction reads, a write transaction reads its own uncommitted writes and writes, with
//! exactly the behaviour of the repository in `memories.rs`.

use mc_core::ProjectId;
use mc_core::search::FtsQuery;

use crate::error::Result;
use crate::memory_rows::{
    Added, MemoryEdit, MemoryLogEntry, MemorySource, MemoryStatus, NewMemory, StoredMemory,
};
use crate::search::{MemoryHit, SearchScope};
use crate::store::{ReadTx, WriteTx};
use crate::team_cache::TeamCache;

/// The reads of a project's memories and their change log.
///
/// Every method is scoped to one project: a memory of another project is not found. Log ids
/// are a cursor: `memory_log_since(p, memory_log_head(p))` is empty until something changes.
pub trait ProjectKnowledge {
    /// The project's memories whose status is in `statuses`, oldest first.
    fn memories(&self, project: &ProjectId, statuses: &[MemoryStatus])
    -> Result<Vec<StoredMemory>>;

    /// The project's memory `id`, or `None` when the project has no such memory.
    fn memory(&self, project: &ProjectId, id: u64) -> Result<Option<StoredMemory>>;

    /// The project's changes logged after log id `after` (0 for all), oldest first.
    fn memory_log_since(&self, project: &ProjectId, after: u64) -> Result<Vec<MemoryLogEntry>>;

    /// The id of the project's newest log entry (0 when it has none).
    fn memory_log_head(&self, project: &ProjectId) -> Result<u64>;

    /// Full-text hits among the project's live memories updated inside `scope`, best first.
    fn search_memories(
        &self,
        query: &FtsQuery,
        project: &ProjectId,
        scope: &SearchScope,
        limit: u32,
    ) -> Result<Vec<MemoryHit>>;
}

/// The writes of a project's memories; each logs its change as part of the same write.
pub trait ProjectKnowledgeWrite: ProjectKnowledge {
    /// Adds a memory, or counts it seen again when a live memory says the same thing.
    fn add_memory(&self, project: &ProjectId, memory: &NewMemory<'_>, now_ms: i64)
    -> Result<Added>;

    /// Rewrites a live memory's content or category; logs `changed` when something did.
    fn edit_memory(
        &self,
        project: &ProjectId,
        id: u64,
        edit: MemoryEdit<'_>,
        actor: MemorySource,
        now_ms: i64,
    ) -> Result<StoredMemory>;

    /// Retires a live memory; logs `archived`.
    fn archive_memory(
        &self,
        project: &ProjectId,
        id: u64,
        actor: MemorySource,
        now_ms: i64,
    ) -> Result<StoredMemory>;

    /// Retires live memory `old` in favour of live memory `by`; logs `superseded`.
    fn supersede_memory(
        &self,
        project: &ProjectId,
        old: u64,
        by: u64,
        actor: MemorySource,
        now_ms: i64,
    ) -> Result<StoredMemory>;
}

/// The SQLite reads, shared by both transaction kinds (a write transaction derefs to a read).
macro_rules! sqlite_reads {
    ($reader:ty) => {
        impl ProjectKnowledge for $reader {
            fn memories(
                &self,
                project: &ProjectId,
                statuses: &[MemoryStatus],
            ) -> Result<Vec<StoredMemory>> {
                ReadTx::memories(self, project, statuses)
            }

            fn memory(&self, project: &ProjectId, id: u64) -> Result<Option<StoredMemory>> {
                ReadTx::memory(self, project, id)
            }

            fn memory_log_since(
                &self,
                project: &ProjectId,
                after: u64,
            ) -> Result<Vec<MemoryLogEntry>> {
                ReadTx::memory_log_since(self, project, after)
            }

            fn memory_log_head(&self, project: &ProjectId) -> Result<u64> {
                ReadTx::memory_log_head(self, project)
            }

            fn search_memories(
                &self,
                query: &FtsQuery,
                project: &ProjectId,
                scope: &SearchScope,
                limit: u32,
            ) -> Result<Vec<MemoryHit>> {
                ReadTx::search_memories(self, query, project, scope, limit)
            }
        }
    };
}

sqlite_reads!(ReadTx<'_>);
sqlite_reads!(WriteTx<'_>);

impl ProjectKnowledgeWrite for WriteTx<'_> {
    fn add_memory(
        &self,
        project: &ProjectId,
        memory: &NewMemory<'_>,
        now_ms: i64,
    ) -> Result<Added> {
        WriteTx::add_memory(self, project, memory, now_ms)
    }

    fn edit_memory(
        &self,
        project: &ProjectId,
        id: u64,
        edit: MemoryEdit<'_>,
        actor: MemorySource,
        now_ms: i64,
    ) -> Result<StoredMemory> {
        WriteTx::edit_memory(self, project, id, edit, actor, now_ms)
    }

    fn archive_memory(
        &self,
        project: &ProjectId,
        id: u64,
        actor: MemorySource,
        now_ms: i64,
    ) -> Result<StoredMemory> {
        WriteTx::archive_memory(self, project, id, actor, now_ms)
    }

    fn supersede_memory(
        &self,
        project: &ProjectId,
        old: u64,
        by: u64,
        actor: MemorySource,
        now_ms: i64,
    ) -> Result<StoredMemory> {
        WriteTx::supersede_memory(self, project, old, by, actor, now_ms)
    }
}

/// Which tables hold a process's project knowledge.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum KnowledgeSource {
    /// The local tables (`memories`, `memory_log`): no team store is configured.
    #[default]
    Local,
    /// The cache of the team store (`team_memories`, `team_memory_log`), kept up to date by
    /// the team store's sync: what the engine reads when `team_store.url` is set.
    TeamCache,
}

impl ReadTx<'_> {
    /// Runs `read` over project knowledge as `source` holds it, in this transaction.
    pub fn with_knowledge<T>(
        &self,
        source: KnowledgeSource,
        read: impl FnOnce(&dyn ProjectKnowledge) -> T,
    ) -> T {
        match source {
            KnowledgeSource::Local => read(self),
            KnowledgeSource::TeamCache => read(&TeamCache::new(self)),
        }
    }
}
