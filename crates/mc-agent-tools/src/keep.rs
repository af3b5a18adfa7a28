//! Keeping an exchange the client will not see, so its next request finds it
//! ([`crate::splice`]).

use mc_engine::Engine;
use mc_store::StoreError;
use serde::Serialize;

/// Why an exchange was not kept.
#[derive(Debug, thiserror::Error)]
pub enum KeepError {
    /// The splice did not encode.
    #[error("the exchange did not encode ({0})")]
    Encode(serde_json::Error),
    /// The store refused the write.
    #[error("the store refused it ({0})")]
    Store(StoreError),
}

/// Stores `splice` under `anchor`, and in the same transaction deletes the exchanges no
/// request has put back for `tools.hidden_exchange_max_age_days`: storing one is the only
/// thing that grows the table, so the table stays bounded by use without a task of its
/// own. Returns how many were deleted. It writes the store, so it blocks.
pub fn keep_exchange<T: Serialize>(
    engine: &Engine,
    anchor: &str,
    splice: &T,
    now_ms: i64,
) -> Result<usize, KeepError> {
    let text = serde_json::to_string(splice).map_err(KeepError::Encode)?;
    let cutoff_ms = engine.config().tools.hidden_exchange_cutoff_ms(now_ms);
    engine
        .store()
        .write(|tx| {
            tx.put_hidden_exchange(anchor, &text, now_ms)?;
            tx.delete_hidden_exchanges_unused_since(cutoff_ms)
        })
        .map_err(KeepError::Store)
}
