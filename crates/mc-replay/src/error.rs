//! What can stop a replay.

use mc_sim::{ProviderError, TokenizerError};

/// Why a replay could not finish. A prompt over the window is not an error of the replay: it
/// ends that recording for that strategy and is counted (`over_window`, `failed_sessions`).
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// Nothing was given to replay.
    #[error("no recordings to replay; check the path and --format")]
    NoRecordings,
    /// The tokenizer tables failed to load.
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
    /// A strategy's call could not be rendered as a request.
    #[error("could not render the request of {recording} step {step}")]
    Render {
        /// The recording's name.
        recording: String,
        /// The step's index.
        step: usize,
        /// The codec's complaint.
        #[source]
        source: mc_wire::WireError,
    },
    /// The simulated provider refused a call for a reason other than its size, which means a
    /// strategy or the renderer built an invalid request (a bug to report).
    #[error("the simulated provider refused {recording} step {step}")]
    Rejected {
        /// The recording's name.
        recording: String,
        /// The step's index.
        step: usize,
        /// The provider's error.
        #[source]
        source: ProviderError,
    },
    /// A replay thread panicked.
    #[error("a replay thread panicked; rerun with RUST_BACKTRACE=1 and report it")]
    Panicked,
}
