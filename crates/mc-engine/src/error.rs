//! Errors of the engine.

use mc_core::SessionId;

/// Why a pass could not run.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The store failed; the request must not go upstream unmanaged (DESIGN §7).
    #[error("the store failed")]
    Store(#[from] mc_store::StoreError),
    /// The client's history differs from the stored one before its end (a rewind or an
    /// edit): the caller forks a branch instead of corrupting the original.
    #[error(
        "session {session}: the request's history diverges from the stored one at message {common_prefix} of {stored}"
    )]
    Diverged {
        /// The session whose history was contradicted.
        session: SessionId,
        /// How many leading messages the request and the store share.
        common_prefix: u64,
        /// How many messages the store holds.
        stored: u64,
    },
    /// The stored engine state is not readable JSON of this version.
    #[error("session {session}: the stored engine state is unreadable: {reason}")]
    CorruptState {
        /// The session.
        session: SessionId,
        /// What was wrong.
        reason: String,
    },
    /// The session is not in the store.
    #[error(
        "no session `{session}` in the store (check the id; sessions are created by the proxy or a replay)"
    )]
    UnknownSession {
        /// The id asked for.
        session: SessionId,
    },
    /// A branch of the session cannot be named: its id would be over the length limit.
    #[error("session {parent}: cannot name a branch of it ({reason})")]
    BranchId {
        /// The session being forked.
        parent: SessionId,
        /// Why the branch id is invalid.
        reason: String,
    },
    /// A drop spec could not be parsed.
    #[error("{0}")]
    DropSpec(String),
    /// Drops were asked of a session whose window the host manages: nothing would ever
    /// land, so queueing them would only pretend.
    #[error(
        "compaction is off (`compaction.enabled: false`): the host's own compaction manages the window of session {session}, so nothing is dropped from it; set `compaction.enabled` to true to drop tagged parts"
    )]
    CompactionOff {
        /// The session the drops were asked of.
        session: SessionId,
    },
    /// The request is over the provider-proven window with nothing left to fold; sending it
    /// would only fail upstream.
    #[error("{message}")]
    Refused {
        /// The message for the provider-shaped error.
        message: String,
    },
}

impl mc_store::StoreFailure for EngineError {
    fn at_store_path(self, path: &std::path::Path) -> Self {
        let Self::Store(error) = self else {
            return self;
        };
        Self::Store(error.at_path(path))
    }
}

/// Result of the engine.
pub type Result<T> = std::result::Result<T, EngineError>;
