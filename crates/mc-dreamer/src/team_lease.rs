//! The dreamer's lease on a project's memories when they live in a team store.
//!
//! The local lease (`dreamer_leases` in SQLite) keeps apart the proxies sharing one store
//! file; a team's proxies each have their own file, so with `team_store.url` set the
//! memory-changing tasks take their project's lease in PostgreSQL instead, and one dreamer
//! at a time changes a project's memories across the team. The other domains (smart notes,
//! the user profile) hold knowledge that stays on the machine, so their leases stay local.
//!
//! When the server does not answer, no lease can be known: the run is skipped and its record
//! says why, and a run already going stops before its next write. It never waits longer than
//! the team store's connect timeout, and never on a request's path (the dreamer runs on its
//! own blocking thread).

use mc_team_store::{TeamStore, TeamStoreError, lease_holder};
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

/// The team store the memory-changing tasks take their lease in.
#[derive(Debug, Clone)]
pub struct TeamLeases {
    team: TeamStore,
    runtime: Handle,
    owner: String,
}

impl TeamLeases {
    /// Leases in `team`, asked on `runtime` (from a thread that is not one of its workers),
    /// held under `process` (`serve-<pid>`) with random bits that tell machines apart.
    pub fn new(team: TeamStore, runtime: Handle, process: &str) -> Result<Self, TeamStoreError> {
        Ok(Self {
            team,
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
        match self
            .runtime
            .block_on(self.team.take_dreamer_lease(domain, &self.owner, ttl_ms))
        {
            Ok(true) => LeaseAnswer::Granted,
            Ok(false) => LeaseAnswer::Held,
            Err(error) => LeaseAnswer::Unknown(error.to_string()),
        }
    }

    /// Gives the lease on `domain` back; a failure leaves it to lapse.
    pub(crate) fn release(&self, domain: &str) -> Result<(), TeamStoreError> {
        self.runtime
            .block_on(self.team.release_dreamer_lease(domain, &self.owner))
    }
}
