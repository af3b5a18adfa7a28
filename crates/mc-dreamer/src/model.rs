//! The model a task asks, and how its failures are classed.
//!
//! Tasks are synchronous over the store, so the model is asked through a synchronous trait;
//! [`LlmJudge`] drives `mc-llm`'s async chain on a runtime handle from the blocking thread a
//! task runs on. The endpoints are chosen by the caller with the historian's rules
//! (`mc_historian::standalone_endpoints` or the proxy's per-call choice), so both background
//! agents ask the same models with the same credentials.

use mc_core::ProjectId;
use mc_llm::{LlmClient, LlmError, ModelEndpoint, StructuredAnswer, StructuredRequest};

use crate::in_flight::CredentialId;

/// A model that answers a task's structured questions about a project.
///
/// The project is an argument because the proxy may ask each project's model with the
/// credentials its own sessions last called with.
pub trait DreamerModel: Send + Sync {
    /// Asks `request` about `project`, retries and fallbacks included. Called from a
    /// blocking thread.
    fn ask(
        &self,
        project: &ProjectId,
        request: &StructuredRequest,
    ) -> Result<StructuredAnswer, LlmError>;

    /// The model asked first for `project`, for runs that fail before any answer names one.
    fn first_model(&self, project: &ProjectId) -> Option<String>;

    /// Whether there is a model to ask about `project`; a run without one is skipped, not
    /// failed, so a project nobody can pay for does not stop the task for the others.
    fn has_model(&self, project: &ProjectId) -> bool {
        self.first_model(project).is_some()
    }

    /// The credential asked first for `project`, so the scheduler can hold a run back while
    /// a call of that project is in flight on it ([`crate::InFlight`]); `None` for a model
    /// that shares no rate limit with the proxy's calls.
    fn credential(&self, _project: &ProjectId) -> Option<CredentialId> {
        None
    }
}

/// The historian's chain of endpoints over `mc-llm`.
pub struct LlmJudge {
    client: LlmClient,
    endpoints: Vec<ModelEndpoint>,
    runtime: tokio::runtime::Handle,
}

impl LlmJudge {
    /// A judge asking `endpoints` in order, on `runtime`. [`DreamerModel::ask`] blocks on
    /// it, so it must be called off that runtime's worker threads (a `spawn_blocking`
    /// thread, or a thread of its own).
    pub fn new(
        client: LlmClient,
        endpoints: Vec<ModelEndpoint>,
        runtime: tokio::runtime::Handle,
    ) -> Self {
        Self {
            client,
            endpoints,
            runtime,
        }
    }
}

impl LlmJudge {
    /// Asks `endpoints` in order on this judge's client and runtime (for a model that
    /// chooses its endpoints per project).
    pub fn ask_endpoints(
        &self,
        endpoints: &[ModelEndpoint],
        request: &StructuredRequest,
    ) -> Result<StructuredAnswer, LlmError> {
        self.runtime
            .block_on(self.client.call_with_fallbacks(endpoints, request))
    }
}

impl DreamerModel for LlmJudge {
    fn ask(
        &self,
        _project: &ProjectId,
        request: &StructuredRequest,
    ) -> Result<StructuredAnswer, LlmError> {
        self.ask_endpoints(&self.endpoints, request)
    }

    fn first_model(&self, _project: &ProjectId) -> Option<String> {
        self.endpoints
            .first()
            .map(|endpoint| endpoint.model.clone())
    }

    fn credential(&self, _project: &ProjectId) -> Option<CredentialId> {
        self.endpoints.first().map(CredentialId::of)
    }
}

/// The failure class of a model error: the key identical failures are counted by, so a
/// task failing the same way all night stops.
pub fn failure_class(error: &LlmError) -> &'static str {
    match error {
        LlmError::Provider {
            status, error_type, ..
        } => match status {
            429 => "rate_limited",
            503 | 529 => "overloaded",
            _ if error_type.as_deref() == Some("overloaded_error") => "overloaded",
            401 | 403 => "unauthorized",
            500..=599 => "server_error",
            _ => "rejected",
        },
        LlmError::Timeout { .. } => "timeout",
        LlmError::Connection { .. } => "unreachable",
        LlmError::MalformedAnswer { .. }
        | LlmError::NoToolCall { .. }
        | LlmError::ArgumentsNotJson { .. }
        | LlmError::NoStructuredOutput { .. }
        | LlmError::OutputNotJson { .. } => "invalid_answer",
        LlmError::InvalidBaseUrl { .. }
        | LlmError::InvalidHeader { .. }
        | LlmError::InvalidTool { .. }
        | LlmError::ClientSetup { .. }
        | LlmError::NoEndpoints => "misconfigured",
        LlmError::AllFailed { failures } => failures.last().map_or("misconfigured", failure_class),
    }
}

/// Whether waiting may cure a failure of `class`: a rate limit or an overload passes, a bad
/// answer or a wrong key does not.
pub fn is_transient(class: &str) -> bool {
    matches!(class, "rate_limited" | "overloaded")
}

/// The provider's own words, when a provider answered with an error.
pub fn provider_message(error: &LlmError) -> Option<String> {
    match error {
        LlmError::Provider {
            status, message, ..
        } => Some(format!("HTTP {status}: {message}")),
        LlmError::AllFailed { failures } => failures.iter().rev().find_map(provider_message),
        LlmError::InvalidBaseUrl { .. }
        | LlmError::InvalidHeader { .. }
        | LlmError::InvalidTool { .. }
        | LlmError::ClientSetup { .. }
        | LlmError::Timeout { .. }
        | LlmError::Connection { .. }
        | LlmError::MalformedAnswer { .. }
        | LlmError::NoToolCall { .. }
        | LlmError::ArgumentsNotJson { .. }
        | LlmError::NoStructuredOutput { .. }
        | LlmError::OutputNotJson { .. }
        | LlmError::NoEndpoints => None,
    }
}

#[cfg(test)]
mod tests {
    use mc_llm::EndpointLabel;

    use super::*;

    fn provider(status: u16, error_type: Option<&str>) -> LlmError {
        LlmError::Provider {
            endpoint: EndpointLabel {
                model: "m".into(),
                host: "h".into(),
            },
            status,
            error_type: error_type.map(str::to_owned),
            message: "busy".into(),
        }
    }

    #[test]
    fn statuses_class_by_what_waiting_can_cure() {
        let classes: Vec<&str> = [
            provider(429, None),
            provider(529, Some("overloaded_error")),
            provider(500, Some("overloaded_error")),
            provider(401, None),
            provider(400, None),
        ]
        .iter()
        .map(failure_class)
        .collect();
        assert_eq!(
            classes,
            [
                "rate_limited",
                "overloaded",
                "overloaded",
                "unauthorized",
                "rejected"
            ]
        );
        let chain = LlmError::AllFailed {
            failures: vec![provider(400, None), provider(429, None)],
        };
        assert_eq!(failure_class(&chain), "rate_limited");
        assert!(is_transient(failure_class(&chain)));
        assert_eq!(provider_message(&chain).as_deref(), Some("HTTP 429: busy"));
    }
}
