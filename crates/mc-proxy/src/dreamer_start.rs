//! Starting the dreamer inside `serve`, off the request path, as the daily prune is started.
//!
//! The dreamer asks the historian's models: for a project, the endpoints its newest call
//! used ([`crate::dreamer_credentials`]: the session's upstream and credentials, the small
//! model first), else the chain an operator command would use (`historian.endpoint`, else a
//! provider key in the proxy's environment). A project with neither is skipped, and said so
//! in its run's record. With the dreamer off, nothing starts. A run on a project's borrowed
//! credentials waits while a call of that project is in flight on them
//! ([`crate::call_in_flight`]).

use std::sync::Arc;

use mc_core::ProjectId;
use mc_dreamer::{CredentialId, DreamerModel, LlmJudge, Service, StoreHandle, TeamMemories};
use mc_historian::{EnvLookup, standalone_endpoints};
use mc_llm::{LlmClient, LlmError, ModelEndpoint, StructuredAnswer, StructuredRequest};
use mc_store::Store;
use tokio::task::JoinHandle;

use crate::app::App;
use crate::clock::now_ms;
use crate::dreamer_credentials::DreamerCredentials;

impl StoreHandle for App {
    fn store(&self) -> Option<&Store> {
        self.store.engine().ok().map(|engine| engine.store())
    }
}

/// The dreamer's model in the proxy: each project's borrowed endpoints, else the standalone
/// chain.
struct SessionJudge {
    judge: LlmJudge,
    standalone: Vec<ModelEndpoint>,
    credentials: Arc<DreamerCredentials>,
}

impl SessionJudge {
    fn endpoints(&self, project: &ProjectId) -> Vec<ModelEndpoint> {
        self.credentials
            .of(project)
            .unwrap_or_else(|| self.standalone.clone())
    }
}

impl DreamerModel for SessionJudge {
    fn ask(
        &self,
        project: &ProjectId,
        request: &StructuredRequest,
    ) -> Result<StructuredAnswer, LlmError> {
        self.judge.ask_endpoints(&self.endpoints(project), request)
    }

    fn first_model(&self, project: &ProjectId) -> Option<String> {
        self.endpoints(project)
            .first()
            .map(|endpoint| endpoint.model.clone())
    }

    fn credential(&self, project: &ProjectId) -> Option<CredentialId> {
        self.endpoints(project).first().map(CredentialId::of)
    }
}

/// Starts the dreamer's scheduler when it is on; abort the handle to stop it.
pub fn start(app: &Arc<App>) -> Option<JoinHandle<()>> {
    let Ok(engine) = app.store.engine() else {
        tracing::info!("dreamer: not started, the store is not open");
        return None;
    };
    let config = engine.config();
    if !config.dreamer.enabled {
        return None;
    }
    let env: EnvLookup<'_> = &|name| std::env::var(name).ok();
    // Without a configured endpoint or a key, projects still have their sessions' models.
    let standalone = standalone_endpoints(config, None, env).unwrap_or_default();
    let client = match LlmClient::new(app.settings.historian_retry) {
        Ok(client) => client,
        Err(error) => {
            tracing::error!(%error, "dreamer: not started");
            return None;
        }
    };
    let judge = SessionJudge {
        judge: LlmJudge::new(client, Vec::new(), tokio::runtime::Handle::current()),
        standalone,
        credentials: Arc::clone(&app.dreamer_credentials),
    };
    let owner = format!("serve-{}", std::process::id());
    // With a team store, one dreamer of the whole team changes a project's memories.
    let team = engine.team_store().and_then(|link| {
        TeamMemories::new(
            link.sync().clone(),
            tokio::runtime::Handle::current(),
            &owner,
        )
        .inspect_err(|error| {
            tracing::error!(%error, "dreamer: no name for the team store's leases could be drawn; memory tasks hold this store's lease only");
        })
        .ok()
    });
    let service = Service {
        store: Arc::clone(app) as Arc<dyn StoreHandle>,
        model: Arc::new(judge),
        config: config.dreamer.clone(),
        owner,
        clock: Arc::new(now_ms),
        team,
        calls: Arc::clone(&app.dreamer_calls),
    };
    Some(service.start())
}
