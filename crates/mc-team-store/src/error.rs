//! What can go wrong talking to the team store, and whether waiting helps.

/// A failure of the team store.
#[derive(Debug, thiserror::Error)]
pub enum TeamStoreError {
    /// `team_store.url` is not a PostgreSQL URL this build can use.
    #[error("team_store.url is not usable: {reason}")]
    BadUrl {
        /// What is wrong with it.
        reason: String,
    },
    /// The server could not be reached or the pool gave no connection in time.
    #[error(
        "the team store at {url} is unreachable while {doing}; local work continues and queued writes replay when it returns"
    )]
    Unreachable {
        /// The URL with its password redacted.
        url: String,
        /// What was being done.
        doing: &'static str,
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A statement failed on a reachable server.
    #[error("the team store failed while {doing}")]
    Postgres {
        /// What was being done.
        doing: &'static str,
        /// The cause.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The server holds a team schema this binary does not know.
    #[error(
        "team store schema v{found} is newer than this binary (max v{supported}); upgrade magic-context on every machine of the team"
    )]
    SchemaTooNew {
        /// The version found.
        found: i32,
        /// The newest this binary knows.
        supported: i32,
    },
    /// A row holds a name this binary does not know (written by a newer one).
    #[error(
        "the team store holds a row this binary cannot read ({what} `{value}`); upgrade magic-context"
    )]
    CorruptRow {
        /// Which column.
        what: &'static str,
        /// The value found.
        value: String,
    },
    /// A change names a smart note the team store does not hold.
    #[error("the team store holds no smart note {origin}; the change was dropped")]
    UnknownNote {
        /// The note's name across the team.
        origin: String,
    },
    /// The system gave no random bytes for a write id.
    #[error("no randomness for a write id: {0}")]
    Random(String),
    /// A local store task stopped before it finished (the process is shutting down).
    #[error("a local store task was interrupted; the write stays queued")]
    Interrupted,
    /// The change was refused by the same rules the local store applies.
    #[error(transparent)]
    Refused(#[from] mc_store::StoreError),
    /// The local SQLite store (its cache or write queue) failed.
    #[error("the local store failed beside the team store")]
    Local(#[source] mc_store::StoreError),
}

impl TeamStoreError {
    /// Whether the write should stay queued and be tried again later: the server was
    /// unreachable or failed, not the write itself.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Unreachable { .. } | Self::Postgres { .. } | Self::Interrupted => true,
            Self::BadUrl { .. }
            | Self::Random(_)
            | Self::SchemaTooNew { .. }
            | Self::CorruptRow { .. }
            | Self::Refused(_)
            | Self::UnknownNote { .. }
            | Self::Local(_) => false,
        }
    }
}

/// The crate's result.
pub type Result<T> = std::result::Result<T, TeamStoreError>;

/// Maps a `tokio_postgres` error while `doing`: a closed or refused connection is
/// unreachability, anything else a failed statement.
pub(crate) fn postgres<'u>(
    url: &'u str,
    doing: &'static str,
) -> impl FnOnce(tokio_postgres::Error) -> TeamStoreError + 'u {
    move |source| {
        if source.is_closed() || source.code().is_none() {
            TeamStoreError::Unreachable {
                url: url.to_owned(),
                doing,
                source: Box::new(source),
            }
        } else {
            TeamStoreError::Postgres { doing, source }
        }
    }
}
