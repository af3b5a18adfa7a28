//! The failure rule between a proxy and its team store: the request path never waits on
//! PostgreSQL and never fails because of it.
//!
//! Reads on the request path come from the local cache ([`mc_store::TeamCache`]); [`TeamSync::pull`]
//! brings it up to date by version cursor, off the request path. A write is first queued
//! durably in SQLite under a fresh write id, then sent; when the server does not answer it
//! stays queued and [`TeamSync::replay`] sends it later, oldest first. The server records the
//! write ids it applied, so a write sent twice lands once. After a failure, writes are not
//! sent on the request path for [`RETRY_AFTER_MS`]: they queue at once, so an unreachable
//! server costs a request nothing, not a connect timeout per write. This machine's use of the
//! team's memories (searches, restatements) never travels on the request path: it is summed
//! in SQLite as it happens and sent in batches by [`TeamSync::replay`].

use std::sync::{Arc, Mutex, PoisonError};

use mc_core::ProjectId;
use mc_store::{Commit, QueuedTeamWrite, Store, TeamWrite};

use crate::client::TeamStore;
use crate::error::{Result, TeamStoreError};
use crate::writes::Applied;

/// How long after a failure the request path stops trying the server and queues directly.
pub const RETRY_AFTER_MS: i64 = 5_000;

/// How many queued writes one replay sends at most.
const REPLAY_BATCH: u32 = 500;

/// How many stored commits one message to the team store carries.
const COMMIT_BATCH: u32 = 500;

/// What this process last knew of the team store, for `status` and `doctor`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TeamHealth {
    /// When the server last answered, unix milliseconds.
    pub last_ok_ms: Option<i64>,
    /// When it last failed, and why (the password never appears: errors carry the
    /// redacted URL).
    pub last_failure: Option<(i64, String)>,
}

impl TeamHealth {
    /// Whether the last contact failed.
    pub fn is_down(&self) -> bool {
        match (&self.last_failure, self.last_ok_ms) {
            (Some((failed_ms, _)), Some(ok_ms)) => *failed_ms > ok_ms,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }
}

/// What became of a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// The team store applied it.
    Landed(Applied),
    /// The team store is unreachable; it waits in the local queue under this write id.
    Queued(String),
}

/// What one replay did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Replayed {
    /// Writes the server applied now or had applied before.
    pub landed: u64,
    /// Writes the server refused for good (the memory was archived or removed meanwhile),
    /// with the reason; they leave the queue.
    pub refused: Vec<(QueuedTeamWrite, String)>,
    /// Writes still queued because the server did not answer.
    pub left: u64,
    /// Batches of this machine's use of the team's memories the server counted (now or
    /// before); a batch it did not answer stays queued.
    pub use_batches: u64,
    /// Stored commits sent to the team's commit index (new there or not).
    pub commits: u64,
}

/// The local store and the team store of one process, kept in step.
#[derive(Debug, Clone)]
pub struct TeamSync {
    store: Arc<Store>,
    team: TeamStore,
    health: Arc<Mutex<TeamHealth>>,
}

impl TeamSync {
    /// Pairs a local store with a team store.
    pub fn new(store: Arc<Store>, team: TeamStore) -> Self {
        Self {
            store,
            team,
            health: Arc::default(),
        }
    }

    /// The team store.
    pub fn team(&self) -> &TeamStore {
        &self.team
    }

    /// What this process last knew of the server.
    pub fn health(&self) -> TeamHealth {
        self.health
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Queues `write` durably, then sends it unless the server failed in the last
    /// [`RETRY_AFTER_MS`]. A refusal by the server (unknown memory, duplicate wording) is
    /// returned and nothing stays queued; an unreachable server leaves it queued.
    pub async fn write(
        &self,
        project: &ProjectId,
        write: TeamWrite,
        now_ms: i64,
    ) -> Result<Written> {
        let write_id = new_write_id()?;
        let queued = QueuedTeamWrite {
            seq: 0,
            write_id: write_id.clone(),
            project: project.clone(),
            write,
            queued_ms: now_ms,
            attempts: 0,
        };
        let to_queue = queued.clone();
        self.blocking(move |store| {
            store.write(|tx| {
                tx.queue_team_write(
                    &to_queue.write_id,
                    &to_queue.project,
                    &to_queue.write,
                    now_ms,
                )
            })
        })
        .await?;
        let health = self.health();
        let recently_down = health.is_down()
            && health
                .last_failure
                .is_some_and(|(failed_ms, _)| now_ms - failed_ms < RETRY_AFTER_MS);
        if recently_down {
            return Ok(Written::Queued(write_id));
        }
        match self.send(&queued, now_ms).await {
            Ok(applied) => Ok(Written::Landed(applied)),
            Err(error) if error.is_retryable() => Ok(Written::Queued(write_id)),
            Err(error) => Err(error),
        }
    }

    /// Sends every queued write, oldest first, until the server stops answering; when all
    /// of them went, the queued changes to the team's smart notes, then this machine's use
    /// of the team's memories (after the writes, so use of a memory added meanwhile finds
    /// it), then the commits it stored that the team's index has not had from it.
    pub async fn replay(&self, now_ms: i64) -> Result<Replayed> {
        let queued = self
            .blocking(|store| store.read(|tx| tx.queued_team_writes(REPLAY_BATCH)))
            .await?;
        let mut replayed = self.send_in_order(queued, now_ms).await?;
        if replayed.left == 0 {
            self.send_notes(&mut replayed, now_ms).await?;
        }
        if replayed.left == 0 {
            replayed.use_batches = self.send_use(now_ms).await?;
        }
        if replayed.left == 0 {
            replayed.commits = self.send_commits(now_ms).await?;
        }
        Ok(replayed)
    }

    /// Sends the stored commits the team's index has not had from this machine, a batch per
    /// project at a time, oldest first, until none is left or the server stops answering;
    /// returns how many it took. Each batch is marked sent once the server answered (a batch
    /// it refused too: it would refuse it again).
    async fn send_commits(&self, now_ms: i64) -> Result<u64> {
        let mut sent = 0;
        loop {
            let unsent = self
                .blocking(|store| store.read(|tx| tx.unsent_team_commits(COMMIT_BATCH)))
                .await?;
            let Some(project) = unsent.first().map(|first| first.project.clone()) else {
                return Ok(sent);
            };
            let (rows, commits): (Vec<i64>, Vec<Commit>) = unsent
                .into_iter()
                .filter(|unsent| unsent.project == project)
                .map(|unsent| (unsent.row, unsent.commit))
                .unzip();
            match self.team.add_commits(&project, &commits).await {
                Err(error) if error.is_retryable() => {
                    self.note(now_ms, Err(&error));
                    return Ok(sent);
                }
                Err(error) => tracing::warn!(
                    %error,
                    count = commits.len(),
                    "the team store refused stored commits; they stay searchable here only"
                ),
                Ok(_) => sent += commits.len() as u64,
            }
            self.note(now_ms, Ok(()));
            self.blocking(move |store| store.write(|tx| tx.mark_team_commits_sent(&rows)))
                .await?;
        }
    }

    /// Sends the queued changes to the team's smart notes, oldest first, until the server
    /// stops answering; each it answered leaves the queue, counted in `replayed`.
    async fn send_notes(&self, replayed: &mut Replayed, now_ms: i64) -> Result<()> {
        let queued = self
            .blocking(|store| store.read(|tx| tx.queued_team_note_writes(REPLAY_BATCH)))
            .await?;
        for queued in queued {
            let result = self
                .team
                .apply_note(&queued.write_id, &queued.project, &queued.write, now_ms)
                .await;
            match result {
                Err(error) if error.is_retryable() => {
                    self.note(now_ms, Err(&error));
                    let left = self
                        .blocking(|store| store.read(|tx| tx.team_note_queue()))
                        .await?;
                    replayed.left += left;
                    return Ok(());
                }
                Ok(_) => replayed.landed += 1,
                Err(error) => tracing::warn!(
                    write_id = %queued.write_id,
                    %error,
                    "the team store refused a queued smart note change; it was dropped"
                ),
            }
            self.note(now_ms, Ok(()));
            let write_id = queued.write_id;
            self.blocking(move |store| store.write(|tx| tx.forget_team_note_write(&write_id)))
                .await?;
        }
        Ok(())
    }

    /// Seals the use gathered since the last batch, one batch per project, and sends every
    /// sealed batch, oldest first, until the server stops answering; returns how many it
    /// answered. A batch it refused (its ids are no memory of the project) is forgotten too:
    /// use of a memory the team does not hold has nothing to keep alive.
    async fn send_use(&self, now_ms: i64) -> Result<u64> {
        let open = self
            .blocking(|store| store.read(|tx| tx.team_use_to_seal()))
            .await?;
        if !open.is_empty() {
            let sealed = open
                .into_iter()
                .map(|project| Ok((project, new_write_id()?)))
                .collect::<Result<Vec<_>>>()?;
            self.blocking(move |store| store.write(|tx| tx.seal_team_use(&sealed)))
                .await?;
        }
        let batches = self
            .blocking(|store| store.read(|tx| tx.sealed_team_use()))
            .await?;
        let mut answered = 0;
        for batch in batches {
            let result = self
                .team
                .record_use(&batch.write_id, &batch.project, &batch.uses, now_ms)
                .await;
            match result {
                Err(error) if error.is_retryable() => {
                    self.note(now_ms, Err(&error));
                    break;
                }
                Ok(_) | Err(_) => {
                    self.note(now_ms, Ok(()));
                    answered += 1;
                    let write_id = batch.write_id;
                    self.blocking(move |store| store.write(|tx| tx.forget_team_use(&write_id)))
                        .await?;
                }
            }
        }
        Ok(answered)
    }

    /// Sends `queued`, writes already in the durable queue (queued in a transaction of the
    /// caller's), in order, until the server stops answering; what is left stays queued for
    /// [`Self::replay`].
    pub async fn send_in_order(
        &self,
        queued: Vec<QueuedTeamWrite>,
        now_ms: i64,
    ) -> Result<Replayed> {
        let mut replayed = Replayed::default();
        let total = queued.len() as u64;
        for write in queued {
            match self.send(&write, now_ms).await {
                Ok(_) => replayed.landed += 1,
                Err(error) if error.is_retryable() => break,
                Err(error) => replayed.refused.push((write, error.to_string())),
            }
        }
        replayed.left = total - replayed.landed - replayed.refused.len() as u64;
        Ok(replayed)
    }

    /// Copies what changed in the project since the cache's cursor into the cache;
    /// returns how many log entries arrived.
    pub async fn pull(&self, project: &ProjectId, now_ms: i64) -> Result<usize> {
        let owned = project.clone();
        let cursor = self
            .blocking(move |store| store.read(|tx| tx.team_cursor(&owned)))
            .await?
            .map_or(0, |(version, _)| version);
        let changes = match self.team.changes_since(project, cursor).await {
            Ok(changes) => changes,
            Err(error) => {
                self.note(now_ms, Err(&error));
                return Err(error);
            }
        };
        self.note(now_ms, Ok(()));
        let arrived = changes.log.len();
        let project = project.clone();
        self.blocking(move |store| {
            store.write(|tx| {
                tx.cache_team_changes(
                    &project,
                    &changes.memories,
                    &changes.log,
                    changes.head,
                    now_ms,
                )?;
                tx.cache_team_use(&project, &changes.uses)?;
                tx.cache_team_notes(&project, &changes.notes)?;
                tx.cache_team_commits(&project, &changes.commits)
                    .map(|_| ())
            })
        })
        .await?;
        Ok(arrived)
    }

    /// The projects whose knowledge this process caches.
    pub async fn projects(&self) -> Result<Vec<ProjectId>> {
        self.blocking(|store| store.read(|tx| tx.knowledge_projects()))
            .await
    }

    /// Records a failure met outside a write or a pull (a migration).
    pub fn note_failure(&self, now_ms: i64, error: &TeamStoreError) {
        self.note(now_ms, Err(error));
    }

    /// Sends one queued write; on an answer, forgets it (applied or refused for good).
    async fn send(&self, write: &QueuedTeamWrite, now_ms: i64) -> Result<Applied> {
        let result = self
            .team
            .apply(&write.write_id, &write.project, &write.write, now_ms)
            .await;
        let write_id = write.write_id.clone();
        match &result {
            Err(error) if error.is_retryable() => {
                self.note(now_ms, Err(error));
                let message = error.to_string();
                self.blocking(move |store| {
                    store.write(|tx| tx.note_team_write_failure(&write_id, &message))
                })
                .await?;
            }
            Ok(_) | Err(_) => {
                self.note(now_ms, Ok(()));
                self.blocking(move |store| store.write(|tx| tx.forget_team_write(&write_id)))
                    .await?;
            }
        }
        result
    }

    fn note(&self, now_ms: i64, outcome: std::result::Result<(), &TeamStoreError>) {
        let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        match outcome {
            Ok(()) => health.last_ok_ms = Some(now_ms),
            Err(error) => health.last_failure = Some((now_ms, error.to_string())),
        }
    }

    /// Runs SQLite work off the async runtime's threads.
    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Store) -> mc_store::Result<T> + Send + 'static,
    ) -> Result<T> {
        let store = Arc::clone(&self.store);
        tokio::task::spawn_blocking(move || work(&store))
            .await
            .map_err(|_| TeamStoreError::Interrupted)?
            .map_err(TeamStoreError::Local)
    }
}

/// 128 random bits, hex: unique across every proxy of the team without coordination.
pub fn new_write_id() -> Result<String> {
    let mut bytes = [0_u8; 16];
    getrandom::fill(&mut bytes).map_err(|error| TeamStoreError::Random(error.to_string()))?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}
