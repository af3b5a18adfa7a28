//! What can go wrong around a historian run (the model's own failures are part of the run's
//! report, not errors: a failed run is recorded and retried later).

/// A historian error.
#[derive(Debug, thiserror::Error)]
pub enum HistorianError {
    /// The store could not be read or written.
    #[error(transparent)]
    Store(#[from] mc_store::StoreError),
    /// No model to ask: no endpoint configured and no provider key in the environment.
    #[error(
        "no historian model to ask: set `historian.endpoint` in the configuration (with \
         `historian.model`, and `historian.wire` and `historian.api_key_env` as the server \
         needs), or export ANTHROPIC_API_KEY or OPENAI_API_KEY"
    )]
    NoModel,
    /// An endpoint is configured, but no model to ask there.
    #[error(
        "`historian.endpoint` is set but `historian.model` is not, and the session has no \
         model of its own to ask there: set `historian.model`"
    )]
    NoModelForEndpoint,
}

/// The crate's result.
pub type Result<T, E = HistorianError> = std::result::Result<T, E>;
