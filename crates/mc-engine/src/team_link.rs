//! The engine's link to a team store: where project knowledge is read and written when
//! `team_store.url` is set.
//!
//! Passes read the team store's local cache inside their own SQLite transaction
//! ([`KnowledgeSource::TeamCache`]), so a request never waits on PostgreSQL. The agent's
//! memory tool writes through [`TeamWriteThrough`]: each change goes to the team store (or
//! its durable queue when the server does not answer) and the project's cache is refreshed
//! at once, so the tool reads back what it wrote. Tools run on blocking threads; the link
//! carries the runtime handle their async writes run on.

use std::sync::Arc;

use mc_core::ProjectId;
use mc_core::search::FtsQuery;
use mc_store::{
    Added, KnowledgeSource, MemoryEdit, MemoryHit, MemoryLogEntry, MemorySource, MemoryStatus,
    NewMemory, ProjectKnowledge, ProjectKnowledgeWrite, Result, SearchScope, Store, StoreError,
    StoredMemory, TeamCache, TeamWrite,
};
use mc_team_store::{Applied, TeamStoreError, TeamSync, Written};
use tokio::runtime::Handle;

/// A team store and the runtime its calls run on.
#[derive(Debug, Clone)]
pub struct TeamLink {
    sync: TeamSync,
    runtime: Handle,
}

impl TeamLink {
    /// Links the engine to `sync`, whose async calls run on `runtime`.
    pub fn new(sync: TeamSync, runtime: Handle) -> Arc<Self> {
        Arc::new(Self { sync, runtime })
    }

    /// The local store and team store pair.
    pub fn sync(&self) -> &TeamSync {
        &self.sync
    }

    /// Where a pass reads project knowledge.
    pub fn source() -> KnowledgeSource {
        KnowledgeSource::TeamCache
    }

    /// The team store's URL as it may be shown (password redacted).
    pub fn shown_url(&self) -> &str {
        self.sync.team().url().redacted()
    }

    /// Sends what waits in the queue, then brings the project's cache up to date, before an
    /// operator reads or changes the team's memories. Blocks the calling thread, which must
    /// not be one of the runtime's workers. An error says the server did not answer: the
    /// cache stays as the last sync left it, and writes queue.
    pub fn catch_up(
        &self,
        project: &ProjectId,
        now_ms: i64,
    ) -> std::result::Result<(), TeamStoreError> {
        self.runtime.block_on(async {
            let replayed = self.sync.replay(now_ms).await?;
            for (write, reason) in &replayed.refused {
                tracing::warn!(
                    write_id = %write.write_id,
                    %reason,
                    "the team store refused a queued memory change; it was dropped"
                );
            }
            self.sync.pull(project, now_ms).await.map(|_| ())
        })
    }

    /// Sends `write` (or queues it) and refreshes the project's cache when it landed.
    /// Blocks the calling thread, which must not be one of the runtime's workers.
    fn write(&self, project: &ProjectId, write: TeamWrite, now_ms: i64) -> Result<Applied> {
        self.runtime.block_on(async {
            let written = self.sync.write(project, write, now_ms).await;
            match written {
                Ok(Written::Landed(applied)) => {
                    // The cache catching up is best effort: the write itself has landed.
                    let _caught_up = self.sync.pull(project, now_ms).await;
                    Ok(applied)
                }
                Ok(Written::Queued(write_id)) => Err(StoreError::QueuedForTeam { write_id }),
                Err(error) => Err(store_error(error)),
            }
        })
    }
}

/// A team store failure as the store layer reports it: the local rules' refusals and the
/// local store's own failures as they are, anything else named.
fn store_error(error: TeamStoreError) -> StoreError {
    match error {
        TeamStoreError::Refused(error) | TeamStoreError::Local(error) => error,
        other @ (TeamStoreError::BadUrl { .. }
        | TeamStoreError::Unreachable { .. }
        | TeamStoreError::Postgres { .. }
        | TeamStoreError::SchemaTooNew { .. }
        | TeamStoreError::CorruptRow { .. }
        | TeamStoreError::Random(_)
        | TeamStoreError::UnknownNote { .. }
        | TeamStoreError::Interrupted) => StoreError::TeamStore {
            problem: other.to_string(),
        },
    }
}

/// Runs `read` over project knowledge where it lives: the team store's cache when `team`
/// is given, else the local tables, in one read snapshot of `store`.
pub fn read_knowledge<T>(
    store: &Store,
    team: Option<&TeamLink>,
    read: impl FnOnce(&dyn ProjectKnowledge) -> Result<T>,
) -> Result<T> {
    let source = match team {
        Some(_) => TeamLink::source(),
        None => KnowledgeSource::Local,
    };
    store.read(|tx| tx.with_knowledge(source, read))
}

/// Runs `write` over project knowledge where it lives: through to the team store when
/// `team` is given (each change its own write, no local transaction held while it
/// travels; a change the server cannot take now is queued and reported as
/// [`StoreError::QueuedForTeam`]), else in one write transaction of `store`.
pub fn write_knowledge<T>(
    store: &Store,
    team: Option<&TeamLink>,
    write: impl FnOnce(&dyn ProjectKnowledgeWrite) -> Result<T>,
) -> Result<T> {
    match team {
        Some(link) => write(&TeamWriteThrough { link, store }),
        None => store.write_with(|tx| write(tx)),
    }
}

/// Project knowledge read from the team store's cache and written through to the team
/// store. Each change is its own write: a merge of several memories is not atomic here as
/// it is in one SQLite transaction, but each step lands once and the log shows each.
struct TeamWriteThrough<'a> {
    link: &'a TeamLink,
    store: &'a Store,
}

impl TeamWriteThrough<'_> {
    fn cached<T>(&self, read: impl FnOnce(&TeamCache<'_, '_>) -> Result<T>) -> Result<T> {
        self.store.read(|tx| read(&TeamCache::new(tx)))
    }

    fn written(&self, project: &ProjectId, id: u64) -> Result<StoredMemory> {
        self.cached(|cache| cache.memory(project, id))?
            .ok_or_else(|| StoreError::UnknownMemory {
                project: project.to_string(),
                id,
            })
    }
}

impl ProjectKnowledge for TeamWriteThrough<'_> {
    fn memories(
        &self,
        project: &ProjectId,
        statuses: &[MemoryStatus],
    ) -> Result<Vec<StoredMemory>> {
        self.cached(|cache| cache.memories(project, statuses))
    }

    fn memory(&self, project: &ProjectId, id: u64) -> Result<Option<StoredMemory>> {
        self.cached(|cache| cache.memory(project, id))
    }

    fn memory_log_since(&self, project: &ProjectId, after: u64) -> Result<Vec<MemoryLogEntry>> {
        self.cached(|cache| cache.memory_log_since(project, after))
    }

    fn memory_log_head(&self, project: &ProjectId) -> Result<u64> {
        self.cached(|cache| cache.memory_log_head(project))
    }

    fn search_memories(
        &self,
        query: &FtsQuery,
        project: &ProjectId,
        scope: &SearchScope,
        limit: u32,
    ) -> Result<Vec<MemoryHit>> {
        self.cached(|cache| cache.search_memories(query, project, scope, limit))
    }
}

impl ProjectKnowledgeWrite for TeamWriteThrough<'_> {
    fn add_memory(
        &self,
        project: &ProjectId,
        memory: &NewMemory<'_>,
        now_ms: i64,
    ) -> Result<Added> {
        let write = TeamWrite::Add {
            category: memory.category,
            content: memory.content.trim().to_owned(),
            source: memory.source,
            permanent: memory.permanent,
        };
        Ok(match self.link.write(project, write, now_ms)? {
            Applied::Now(added) => added,
            Applied::Before(id) => Added::Merged(id),
        })
    }

    fn edit_memory(
        &self,
        project: &ProjectId,
        id: u64,
        edit: MemoryEdit<'_>,
        actor: MemorySource,
        now_ms: i64,
    ) -> Result<StoredMemory> {
        let write = TeamWrite::Edit {
            id,
            category: edit.category,
            content: edit.content.map(str::to_owned),
            actor,
        };
        self.link.write(project, write, now_ms)?;
        self.written(project, id)
    }

    fn archive_memory(
        &self,
        project: &ProjectId,
        id: u64,
        actor: MemorySource,
        now_ms: i64,
    ) -> Result<StoredMemory> {
        self.link
            .write(project, TeamWrite::Archive { id, actor }, now_ms)?;
        self.written(project, id)
    }

    fn supersede_memory(
        &self,
        project: &ProjectId,
        old: u64,
        by: u64,
        actor: MemorySource,
        now_ms: i64,
    ) -> Result<StoredMemory> {
        self.link
            .write(project, TeamWrite::Supersede { old, by, actor }, now_ms)?;
        self.written(project, old)
    }
}
