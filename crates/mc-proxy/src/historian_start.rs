//! Starting the historian for a managed call's session, off the request path; the same
//! endpoints are lent to the dreamer for the session's project
//! ([`crate::dreamer_credentials`]).
//!
//! By default the historian asks the session's own upstream, on the wire the session arrived
//! on (a Responses session's upstream may serve nothing else), with the credentials of the
//! call (held in memory for the run only, never stored or logged), on that provider's small
//! model, then the configured fallbacks, then the session's own model (which the credentials
//! are known to reach). A configured endpoint replaces all of that: its wire, its models, and
//! a key read from the environment variable the config names.

use std::sync::Arc;

use axum::http::HeaderMap;
use mc_core::Secret;
use mc_core::config::HistorianConfig;
use mc_historian::{
    ANTHROPIC_SMALL_MODEL, HistorianSettings, LlmChain, OPENAI_SMALL_MODEL, RunRequest,
    configured_endpoints, distinct,
};
use mc_llm::{ModelEndpoint, Wire};

use crate::app::App;
use crate::planned::Planned;
use crate::provider::Provider;

/// Starts a historian run for `planned`'s session when one may start; never waits for it.
pub fn start(app: &App, provider: Provider, headers: &HeaderMap, planned: &Planned) {
    let (Ok(store), Some(session), Some(pass)) = (
        app.store.get(),
        planned.session.as_ref(),
        planned.pass.as_ref(),
    ) else {
        return;
    };
    let engine = &store.engine;
    let config = &engine.config().historian;
    let upstream = app.settings.upstream(provider);
    let endpoints = endpoints(config, provider, upstream, headers, &planned.model);
    if let Some(project) = &planned.project {
        app.dreamer_credentials.remember(project, &endpoints);
    }
    // A subagent's history is read by nobody later, and with compaction off the host keeps
    // the window: neither is summarised.
    if !pass.mode.runs_historian() {
        return;
    }
    let Some(runtime) = store.historian.as_ref() else {
        return;
    };
    let settings = HistorianSettings::new(engine.config(), planned.usable_window)
        .with_knowledge(engine.knowledge_source());
    let usage_percent = planned
        .usable_window
        .filter(|&usable| usable > 0)
        .map_or(0, |usable| {
            pass.estimated_prompt_tokens.saturating_mul(100) / usable
        });
    let tokens = Arc::clone(&app.tokens);
    let model = planned.model.clone();
    runtime.historian.start(RunRequest {
        session: session.clone(),
        model: Arc::new(LlmChain::new(runtime.client.clone(), endpoints)),
        settings,
        usage_percent,
        prompt_tokens: pass.estimated_prompt_tokens,
        count: Arc::new(move |text: &str| tokens.count(&model, text)),
    });
}

/// The endpoints a run asks, in order (see the module docs).
fn endpoints(
    config: &HistorianConfig,
    provider: Provider,
    upstream: &str,
    headers: &HeaderMap,
    session_model: &str,
) -> Vec<ModelEndpoint> {
    let env = |name: &str| std::env::var(name).ok();
    if let Some(endpoints) = configured_endpoints(config, Some(session_model), &env) {
        return endpoints;
    }
    let small = match provider {
        Provider::Anthropic => ANTHROPIC_SMALL_MODEL,
        Provider::OpenAi | Provider::OpenAiResponses if upstream.contains("://api.openai.com") => {
            OPENAI_SMALL_MODEL
        }
        Provider::OpenAi | Provider::OpenAiResponses => session_model,
    };
    let mut models: Vec<&str> = vec![config.model.as_deref().unwrap_or(small)];
    models.extend(config.fallback_models.iter().map(String::as_str));
    models.push(session_model);
    let session = session_endpoint(provider, upstream, headers, session_model);
    distinct(models)
        .into_iter()
        .map(|model| ModelEndpoint {
            model: model.to_owned(),
            ..session.clone()
        })
        .collect()
}

/// The call's own upstream, wire and credentials, on `model`: what the session's calls draw
/// on, and what the historian and the dreamer borrow unless an endpoint is configured.
pub fn session_endpoint(
    provider: Provider,
    upstream: &str,
    headers: &HeaderMap,
    model: &str,
) -> ModelEndpoint {
    let wire = match provider {
        Provider::Anthropic => Wire::Anthropic,
        Provider::OpenAi => Wire::OpenAiChat,
        Provider::OpenAiResponses => Wire::OpenAiResponses,
    };
    let credentials = Credentials::of(provider, headers);
    let mut endpoint = ModelEndpoint::new(wire, upstream.to_owned(), model, credentials.key);
    endpoint.extra_headers = credentials.headers;
    endpoint
}

/// The call's credentials as the historian re-sends them, each a [`Secret`] from the moment
/// it leaves the client's headers until `mc-llm` puts it in a sensitive upstream header, so
/// no `Debug` of an endpoint, run or error on the way can print one.
struct Credentials {
    key: Option<Secret>,
    headers: Vec<(String, Secret)>,
}

impl Credentials {
    /// Anthropic: `x-api-key` as the key; an OAuth bearer token and its `oauth-*` beta flag
    /// as headers. OpenAI: the bearer token as the key.
    fn of(provider: Provider, headers: &HeaderMap) -> Self {
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        };
        match provider {
            Provider::Anthropic => {
                let mut extra = Vec::new();
                if let Some(authorization) = header("authorization") {
                    extra.push(("authorization".to_owned(), Secret::new(authorization)));
                }
                let oauth: Vec<&str> = headers
                    .get_all("anthropic-beta")
                    .iter()
                    .filter_map(|value| value.to_str().ok())
                    .flat_map(|value| value.split(','))
                    .map(str::trim)
                    .filter(|flag| flag.starts_with("oauth-"))
                    .collect();
                if !oauth.is_empty() {
                    extra.push(("anthropic-beta".to_owned(), Secret::new(oauth.join(","))));
                }
                Self {
                    key: header("x-api-key").map(Secret::new),
                    headers: extra,
                }
            }
            Provider::OpenAi | Provider::OpenAiResponses => Self {
                key: header("authorization")
                    .and_then(|value| value.strip_prefix("Bearer ").map(str::to_owned))
                    .map(Secret::new),
                headers: Vec::new(),
            },
        }
    }
}
