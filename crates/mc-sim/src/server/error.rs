//! Why the simulated provider could not start or stop.

use std::net::SocketAddr;

use crate::TokenizerError;

/// A failure of the server itself (never of a request: requests get provider error bodies).
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The address could not be bound.
    #[error("cannot listen on {addr} (pick another port, or port 0 for any free one)")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The tokenizer tables failed to load.
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
    /// Serving connections failed.
    #[error("the simulator's server failed")]
    Serve {
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// The server task panicked or was cancelled.
    #[error("the simulator's server task ended abnormally")]
    Task {
        /// The join failure.
        #[source]
        source: tokio::task::JoinError,
    },
}

/// A historian mode (`--historian`) that is not one of the four.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown historian mode `{given}`; use honest, garbage, overloaded, stall or slow")]
pub struct InvalidHistorianMode {
    /// What was given, as written.
    pub given: String,
}
