//! What can go wrong around a historian run (the model's own failures are part of the run's
//! report, not errors: a failed run is recorded and retried later).

/// A historian error.
#[derive(Debug, thiserror::Error)]
pub enum HistorianError {
    /// The store could not be read or written.
    #[error(transparent)]
    Store(#[from] mc_store::StoreError),
}

/// The crate's result.
pub type Result<T, E = HistorianError> = std::result::Result<T, E>;
