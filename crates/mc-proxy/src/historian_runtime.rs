//! The historian service over the proxy's store, built when the store opens; its runs are
//! started per managed call by [`crate::historian_start`].

use std::sync::Arc;

use mc_engine::Engine;
use mc_historian::{Historian, StoreAccess};
use mc_llm::{LlmClient, RetryPolicy};
use mc_store::Store;

use crate::clock::unix_ms;

/// The engine's store, for the historian.
pub struct EngineStore(pub Arc<Engine>);

impl StoreAccess for EngineStore {
    fn store(&self) -> &Store {
        self.0.store()
    }
}

/// The historian service and the client its runs ask models with.
pub struct HistorianRuntime {
    /// The service, one run per session at a time.
    pub historian: Arc<Historian<EngineStore>>,
    /// The HTTP client its runs ask models with.
    pub client: LlmClient,
}

impl HistorianRuntime {
    /// The runtime over `engine`'s store, its model calls timed and retried by `retry`;
    /// `None` when the historian is off or its HTTP client cannot be built (then sessions go
    /// on with drops alone, as with it off).
    pub fn new(engine: &Arc<Engine>, retry: RetryPolicy) -> Option<Self> {
        if !engine.config().historian.enabled {
            return None;
        }
        let client = match LlmClient::new(retry) {
            Ok(client) => client,
            Err(error) => {
                tracing::error!(%error, "the historian's HTTP client cannot be built; history will not be summarised");
                return None;
            }
        };
        Some(Self {
            historian: Historian::new(Arc::new(EngineStore(Arc::clone(engine))), Arc::new(unix_ms)),
            client,
        })
    }
}
