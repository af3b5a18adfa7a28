//! Writing a project's knowledge to the team store: each change in one transaction that
//! holds the project's advisory lock, applies the same rules as the local repository
//! (`mc-store`'s `memories.rs`), logs its change at a fresh version, and records its write
//! id, so a write replayed from a proxy's queue changes nothing the second time.

use deadpool_postgres::{Object, Transaction};
use mc_core::ProjectId;
use mc_core::head::MemoryCategory;
use mc_core::historian::fact_key;
use mc_store::{
    Added, MemoryAction, MemorySource, MemoryStatus, StoreError, StoredMemory, TeamWrite,
};

use crate::client::TeamStore;
use crate::error::{Result, TeamStoreError, postgres};
use crate::rows::{MEMORY_COLUMNS, memory_of, pg_id};

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// It ran now; the memory it touched (for an add, new or merged).
    Now(Added),
    /// This write id had already landed; the memory it touched then.
    Before(u64),
}

impl Applied {
    /// The memory the write touched.
    pub fn memory_id(self) -> u64 {
        match self {
            Self::Now(added) => added.id(),
            Self::Before(id) => id,
        }
    }
}

/// The write transaction of one change.
pub(crate) struct Change<'a> {
    pub(crate) tx: Transaction<'a>,
    pub(crate) project: &'a ProjectId,
    pub(crate) now_ms: i64,
    pub(crate) url: &'a str,
}

/// Takes `project`'s advisory lock for the rest of `tx`, so the project's changes draw their
/// versions in commit order and a version cursor never skips one that commits late.
pub(crate) async fn lock_project(
    tx: &Transaction<'_>,
    project: &ProjectId,
    url: &str,
) -> Result<()> {
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
        &[&project.as_str()],
    )
    .await
    .map_err(postgres(url, "locking the project"))?;
    Ok(())
}

impl TeamStore {
    /// Applies `write` to the project once: a `write_id` seen before returns what it did
    /// then. A refusal (unknown memory, duplicate wording, archived) is
    /// [`TeamStoreError::Refused`] and records nothing.
    pub async fn apply(
        &self,
        write_id: &str,
        project: &ProjectId,
        write: &TeamWrite,
        now_ms: i64,
    ) -> Result<Applied> {
        const DOING: &str = "writing a memory";
        let mut client = self.client(DOING).await?;
        let change = Change::begin(&mut client, project, now_ms, self.redacted(), DOING).await?;
        if let Some(id) = change.lock_and_check(write_id).await? {
            return Ok(Applied::Before(id));
        }
        let added = change.run(write).await?;
        change.record_write(write_id, Some(added.id())).await?;
        change.commit("committing a memory write").await?;
        Ok(Applied::Now(added))
    }
}

impl<'a> Change<'a> {
    /// Opens the transaction of a change to `project` on `client`.
    pub(crate) async fn begin(
        client: &'a mut Object,
        project: &'a ProjectId,
        now_ms: i64,
        url: &'a str,
        doing: &'static str,
    ) -> Result<Self> {
        let tx = client.transaction().await.map_err(postgres(url, doing))?;
        Ok(Self {
            tx,
            project,
            now_ms,
            url,
        })
    }

    /// Commits the change.
    pub(crate) async fn commit(self, doing: &'static str) -> Result<()> {
        self.tx.commit().await.map_err(postgres(self.url, doing))
    }

    /// Takes the project's lock, then looks `write_id` up: the memory it touched when it
    /// landed before (0 for a write that names none), or `None` when it has not.
    pub(crate) async fn lock_and_check(&self, write_id: &str) -> Result<Option<u64>> {
        lock_project(&self.tx, self.project, self.url).await?;
        let row = self
            .tx
            .query_opt(
                "SELECT memory_id FROM mc_writes WHERE write_id = $1",
                &[&write_id],
            )
            .await
            .map_err(postgres(self.url, "looking up a write id"))?;
        Ok(row.map(|row| {
            let id: Option<i64> = row.get(0);
            id.and_then(|id| u64::try_from(id).ok()).unwrap_or_default()
        }))
    }

    /// Records that `write_id` landed, touching `memory_id`.
    pub(crate) async fn record_write(&self, write_id: &str, memory_id: Option<u64>) -> Result<()> {
        self.tx
            .execute(
                "INSERT INTO mc_writes (write_id, project_id, memory_id, applied_ms)
                 VALUES ($1, $2, $3, $4)",
                &[
                    &write_id,
                    &self.project.as_str(),
                    &memory_id.map(pg_id),
                    &self.now_ms,
                ],
            )
            .await
            .map(|_| ())
            .map_err(postgres(self.url, "recording a write id"))
    }

    async fn run(&self, write: &TeamWrite) -> Result<Added> {
        match write {
            TeamWrite::Add {
                category,
                content,
                source,
                permanent,
            } => self.add(*category, content, *source, *permanent).await,
            TeamWrite::Edit {
                id,
                category,
                content,
                actor,
            } => self
                .edit(*id, *category, content.as_deref(), *actor)
                .await
                .map(Added::Merged),
            TeamWrite::Archive { id, actor } => {
                let memory = self.require(*id).await?;
                if memory.record.status == MemoryStatus::Archived {
                    return Err(refused(*id, "it is already archived"));
                }
                self.retire(*id, None).await?;
                self.log(*id, MemoryAction::Archived, (*actor, None), None)
                    .await?;
                Ok(Added::Merged(*id))
            }
            TeamWrite::Supersede { old, by, actor } => {
                let retired = self.require(*old).await?;
                let successor = self.require(*by).await?;
                if old == by {
                    return Err(refused(*old, "a memory cannot supersede itself"));
                }
                if retired.record.status == MemoryStatus::Archived
                    || successor.record.status == MemoryStatus::Archived
                {
                    return Err(refused(
                        *old,
                        "both it and its successor must be live, not archived",
                    ));
                }
                self.retire(*old, Some(*by)).await?;
                let detail = format!("by {by}");
                self.log(
                    *old,
                    MemoryAction::Superseded,
                    (*actor, None),
                    Some(&detail),
                )
                .await?;
                Ok(Added::Merged(*old))
            }
            TeamWrite::Maintain(maintenance) => self.maintain(maintenance).await,
        }
    }

    async fn add(
        &self,
        category: MemoryCategory,
        content: &str,
        source: MemorySource,
        permanent: bool,
    ) -> Result<Added> {
        let key = key_of(content)?;
        if let Some(id) = self.live_with_key(&key).await? {
            self.tx
                .execute(
                    "UPDATE mc_memories SET seen_count = seen_count + 1,
                       version = nextval('mc_version') WHERE id = $1",
                    &[&pg_id(id)],
                )
                .await
                .map_err(postgres(self.url, "counting a repeated memory"))?;
            self.note_restated(id).await?;
            return Ok(Added::Merged(id));
        }
        let status = if permanent {
            MemoryStatus::Permanent
        } else {
            MemoryStatus::Active
        };
        let id: i64 = self
            .tx
            .query_one(
                "INSERT INTO mc_memories (project_id, category, content, content_key, status,
                   source, created_ms, updated_ms, version)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $7, nextval('mc_version')) RETURNING id",
                &[
                    &self.project.as_str(),
                    &category.as_str(),
                    &content.trim(),
                    &key,
                    &status.as_str(),
                    &source.as_str(),
                    &self.now_ms,
                ],
            )
            .await
            .map_err(postgres(self.url, "adding a memory"))?
            .get(0);
        let id = u64::try_from(id).unwrap_or_default();
        self.log(
            id,
            MemoryAction::Added,
            (source, None),
            Some(source.as_str()),
        )
        .await?;
        Ok(Added::New(id))
    }

    async fn edit(
        &self,
        id: u64,
        category: Option<MemoryCategory>,
        content: Option<&str>,
        actor: MemorySource,
    ) -> Result<u64> {
        let mut memory = self.require(id).await?;
        if memory.record.status == MemoryStatus::Archived {
            return Err(refused(id, "it is archived; add the fact again instead"));
        }
        let mut changes = Vec::new();
        if let Some(content) = content.map(str::trim)
            && content != memory.record.content
        {
            self.refuse_repeat(id, content).await?;
            memory.record.content = content.to_owned();
            changes.push("content".to_owned());
        }
        if let Some(category) = category
            && category != memory.record.category
        {
            changes.push(format!(
                "category {} -> {}",
                memory.record.category.as_str(),
                category.as_str()
            ));
            memory.record.category = category;
        }
        if changes.is_empty() {
            return Ok(id);
        }
        self.tx
            .execute(
                "UPDATE mc_memories SET category = $2, content = $3, content_key = $4,
                   updated_ms = $5, version = nextval('mc_version') WHERE id = $1",
                &[
                    &pg_id(id),
                    &memory.record.category.as_str(),
                    &memory.record.content,
                    &fact_key(&memory.record.content),
                    &self.now_ms,
                ],
            )
            .await
            .map_err(postgres(self.url, "editing a memory"))?;
        self.log(
            id,
            MemoryAction::Changed,
            (actor, None),
            Some(&changes.join(", ")),
        )
        .await?;
        Ok(id)
    }

    pub(crate) async fn require(&self, id: u64) -> Result<StoredMemory> {
        let row = self
            .tx
            .query_opt(
                &format!(
                    "SELECT {MEMORY_COLUMNS} FROM mc_memories WHERE project_id = $1 AND id = $2"
                ),
                &[&self.project.as_str(), &pg_id(id)],
            )
            .await
            .map_err(postgres(self.url, "reading a memory"))?;
        match row {
            Some(row) => Ok(memory_of(&row)?.0),
            None => Err(StoreError::UnknownMemory {
                project: self.project.to_string(),
                id,
            }
            .into()),
        }
    }

    /// Refuses `content` for memory `id` when another live memory already states it.
    pub(crate) async fn refuse_repeat(&self, id: u64, content: &str) -> Result<()> {
        let key = key_of(content)?;
        match self.live_with_key(&key).await? {
            Some(existing) if existing != id => Err(StoreError::DuplicateMemory {
                project: self.project.to_string(),
                id,
                existing,
            }
            .into()),
            Some(_) | None => Ok(()),
        }
    }

    async fn live_with_key(&self, key: &str) -> Result<Option<u64>> {
        let row = self
            .tx
            .query_opt(
                "SELECT id FROM mc_memories
                 WHERE project_id = $1 AND content_key = $2 AND status <> 'archived'",
                &[&self.project.as_str(), &key],
            )
            .await
            .map_err(postgres(self.url, "looking up a memory by its key"))?;
        Ok(row.and_then(|row| u64::try_from(row.get::<_, i64>(0)).ok()))
    }

    pub(crate) async fn retire(&self, id: u64, by: Option<u64>) -> Result<()> {
        self.tx
            .execute(
                "UPDATE mc_memories SET status = 'archived', superseded_by = $2, updated_ms = $3,
                   version = nextval('mc_version') WHERE id = $1",
                &[&pg_id(id), &by.map(pg_id), &self.now_ms],
            )
            .await
            .map(|_| ())
            .map_err(postgres(self.url, "archiving a memory"))
    }

    /// Logs one change at a fresh version: who made it and, for the dreamer, which task.
    pub(crate) async fn log(
        &self,
        memory_id: u64,
        action: MemoryAction,
        (actor, task): (MemorySource, Option<&str>),
        detail: Option<&str>,
    ) -> Result<()> {
        self.tx
            .execute(
                "INSERT INTO mc_memory_log (version, project_id, memory_id, action, at_ms,
                   detail, actor, task)
                 VALUES (nextval('mc_version'), $1, $2, $3, $4, $5, $6, $7)",
                &[
                    &self.project.as_str(),
                    &pg_id(memory_id),
                    &action.as_str(),
                    &self.now_ms,
                    &detail,
                    &actor.as_str(),
                    &task,
                ],
            )
            .await
            .map(|_| ())
            .map_err(postgres(self.url, "logging a memory change"))
    }
}

pub(crate) fn refused(id: u64, reason: &'static str) -> TeamStoreError {
    StoreError::MemoryRefused { id, reason }.into()
}

pub(crate) fn key_of(content: &str) -> Result<String> {
    let key = fact_key(content);
    if key.is_empty() {
        return Err(StoreError::EmptyMemory.into());
    }
    Ok(key)
}
