//! The historian's models as `mc-llm` endpoints: the configured chain, asked in order.

use mc_llm::{LlmClient, LlmError, ModelEndpoint, StructuredAnswer, StructuredRequest};

use crate::run::HistorianModel;

/// A client and the endpoints it asks, primary first.
pub struct LlmChain {
    client: LlmClient,
    endpoints: Vec<ModelEndpoint>,
}

impl LlmChain {
    /// A chain over `endpoints` (fallbacks after the first).
    pub fn new(client: LlmClient, endpoints: Vec<ModelEndpoint>) -> Self {
        Self { client, endpoints }
    }
}

impl HistorianModel for LlmChain {
    fn endpoints(&self) -> usize {
        self.endpoints.len()
    }

    /// The model name alone: runs are priced by it, and a host can carry a private name.
    fn label(&self, index: usize) -> String {
        self.endpoints
            .get(index)
            .map_or_else(String::new, |endpoint| endpoint.model.clone())
    }

    async fn answer(
        &self,
        index: usize,
        request: &StructuredRequest,
    ) -> Result<StructuredAnswer, LlmError> {
        match self.endpoints.get(index) {
            Some(endpoint) => self.client.call_structured(endpoint, request).await,
            None => Err(LlmError::NoEndpoints),
        }
    }
}
