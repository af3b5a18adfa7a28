//! The team store as the dreamer's memory tasks use it when a project's memories live there:
//! the project's lease, the memories they read, and the path their changes take.
//!
//! The local lease (`dreamer_leases` in SQLite) keeps apart the proxies sharing one store
//! file; a team's proxies each have their own file, so with `team_store.url` set the
//! memory-changing tasks take their project's lease in PostgreSQL instead, and one dreamer
//! at a time changes a project's memories across the team. The other domains keep their
//! local lease: the user profile stays on the machine, and a team's smart note surfaced by
//! two machines' dreamers surfaces once (the team store applies a surface only while the note
//! still waits on the condition judged).
//!
//! The tasks read the team's memories from the local cache, and their changes go the way
//! every change of the team's knowledge goes: queued durably in the task's write transaction
//! ([`mc_store::TeamMaintenance`]), then sent ([`TeamMemories::deliver`]), the cache
//! refreshed so the next batch reads what landed. A change the server does not take now
//! waits in the queue, and the sync replays it; one it refuses (the memory changed on
//! another machine meanwhile) is dropped and said so in the log.
//!
//! When the server does not answer, no lease can be known: the run is skipped and its record
//! says why, and a run already going stops before its next write. It never waits longer than
//! the team store's connect timeout, and never on a request's path (the dreamer runs on its
//! own blocking thread).

use mc_core::ProjectId;
use mc_store::{QueuedTeamWrite, TeamWrite};
use mc_team_store::{TeamStoreError, TeamSync, lease_holder};
use tokio::runtime::Handle;

/// What asking for a lease found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LeaseAnswer {
    /// This holder has it (taken or renewed).
    Granted,
    /// Another holder's lease runs.
    Held,
    /// The holder could not be asked; why.
    Unknown(String),
}

/// What became of a batch of changes sent to the team store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Delivered {
    /// Applied by the team store.
    pub landed: u32,
    /// Still queued: the server stopped answering; the sync sends them later.
    pub queued: u32,
    /// Memories the refused changes named (a merge names several): the team store refused
    /// them because a memory changed or went meanwhile.
    pub refused: u32,
}

/// The team store the memory-changing tasks lease, read and write.
#[derive(Debug, Clone)]
pub struct TeamMemories {
    sync: TeamSync,
    runtime: Handle,
    owner: String,
}

impl TeamMemories {
    /// The team store of `sync`, asked on `runtime` (from a thread that is not one of its
    /// workers), its leases held under `process` (`serve-<pid>`) with random bits that tell
    /// machines apart.
    pub fn new(sync: TeamSync, runtime: Handle, process: &str) -> Result<Self, TeamStoreError> {
        Ok(Self {
            sync,
            runtime,
            owner: lease_holder(process)?,
        })
    }

    /// This process's name on the team's leases.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// Takes or renews the lease on `domain` for `ttl_ms`.
    pub(crate) fn take(&self, domain: &str, ttl_ms: i64) -> LeaseAnswer {
        match self.runtime.block_on(self.sync.team().take_dreamer_lease(
            domain,
            &self.owner,
            ttl_ms,
        )) {
            Ok(true) => LeaseAnswer::Granted,
            Ok(false) => LeaseAnswer::Held,
            Err(error) => LeaseAnswer::Unknown(error.to_string()),
        }
    }

    /// Gives the lease on `domain` back; a failure leaves it to lapse.
    pub(crate) fn release(&self, domain: &str) -> Result<(), TeamStoreError> {
        self.runtime
            .block_on(self.sync.team().release_dreamer_lease(domain, &self.owner))
    }

    /// Brings the project's cache up to date before a task reads it; a failure leaves the
    /// cache as it was (the task then reads what the last sync brought).
    pub(crate) fn refresh(&self, project: &ProjectId, now_ms: i64) {
        if let Err(error) = self.runtime.block_on(self.sync.pull(project, now_ms)) {
            tracing::info!(%error, "dreamer: the team cache could not be refreshed");
        }
    }

    /// Sends `queued`, changes already in the durable queue, in order, then refreshes the
    /// project's cache so what landed is read back.
    pub(crate) fn deliver(
        &self,
        project: &ProjectId,
        queued: Vec<QueuedTeamWrite>,
        now_ms: i64,
    ) -> Result<Delivered, TeamStoreError> {
        if queued.is_empty() {
            return Ok(Delivered::default());
        }
        let replayed = self
            .runtime
            .block_on(self.sync.send_in_order(queued, now_ms))?;
        for (write, reason) in &replayed.refused {
            tracing::info!(
                write = write.write_id,
                reason,
                "dreamer: the team store refused a change; not applied"
            );
        }
        self.refresh(project, now_ms);
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let named = replayed
            .refused
            .iter()
            .map(|(write, _)| match &write.write {
                TeamWrite::Maintain(maintenance) => maintenance.seen.len(),
                TeamWrite::Add { .. }
                | TeamWrite::Edit { .. }
                | TeamWrite::Archive { .. }
                | TeamWrite::Supersede { .. } => 1,
            })
            .sum();
        Ok(Delivered {
            landed: u32::try_from(replayed.landed).unwrap_or(u32::MAX),
            queued: u32::try_from(replayed.left).unwrap_or(u32::MAX),
            refused: count(named),
        })
    }
}
