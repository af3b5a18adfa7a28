//! Which model endpoints a historian run asks, from the configuration and the environment.
//!
//! Two callers share this: the proxy, whose runs fall back to the credentials of the call
//! that started them when no endpoint is configured, and the operator commands (`wrapup`,
//! `recomp`), which have no call to borrow from and read a provider key from the
//! environment instead. Environment reads come in as a function, so the choice is tested
//! without touching the process, and keys only ever travel as [`Secret`]s.

use mc_core::Secret;
use mc_core::config::{Config, HistorianConfig, HistorianWire};
use mc_llm::{ModelEndpoint, Wire};

use crate::error::{HistorianError, Result};

/// The small model the historian uses on Anthropic by default.
pub const ANTHROPIC_SMALL_MODEL: &str = "claude-haiku-4-5";
/// The small model the historian uses on OpenAI's own API by default. Other
/// OpenAI-compatible upstreams serve models of their own: there the session's model is used.
pub const OPENAI_SMALL_MODEL: &str = "gpt-5-mini";
/// The variable an operator command reads an Anthropic key from.
pub const ANTHROPIC_KEY_ENV: &str = "ANTHROPIC_API_KEY";
/// The variable an operator command reads an OpenAI key from.
pub const OPENAI_KEY_ENV: &str = "OPENAI_API_KEY";

/// Reads an environment variable; `None` when unset.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The chain of the configured endpoint (`historian.endpoint`), or `None` when none is
/// configured: `historian.model` then the fallbacks, each asked on `historian.wire` with the
/// key the variable `historian.api_key_env` names (none when it is unset, as local servers
/// expect). Without a configured model the session's own model is asked there.
pub fn configured_endpoints(
    config: &HistorianConfig,
    session_model: Option<&str>,
    env: EnvLookup<'_>,
) -> Option<Vec<ModelEndpoint>> {
    let base = config.endpoint.as_ref()?;
    let wire = match config.endpoint_wire() {
        HistorianWire::Anthropic => Wire::Anthropic,
        HistorianWire::OpenAi => Wire::OpenAiChat,
        HistorianWire::OpenAiResponses => Wire::OpenAiResponses,
    };
    let key = config
        .api_key_env
        .as_deref()
        .and_then(env)
        .filter(|key| !key.is_empty())
        .map(Secret::new);
    let mut models: Vec<&str> = config.model.iter().map(String::as_str).collect();
    models.extend(config.fallback_models.iter().map(String::as_str));
    if models.is_empty() {
        models.extend(session_model);
    }
    Some(
        distinct(models)
            .into_iter()
            .map(|model| ModelEndpoint::new(wire, base.clone(), model, key.clone()))
            .collect(),
    )
}

/// The chain of a run no client call started (an operator command): the configured
/// endpoint when there is one; else Anthropic (`proxy.upstream_anthropic`) when
/// `ANTHROPIC_API_KEY` is set, else OpenAI (`proxy.upstream_openai`) when `OPENAI_API_KEY`
/// is, on `historian.model` (default: the provider's small model) then the fallbacks.
/// Errors name the keys and variables that would fix it, never a key.
pub fn standalone_endpoints(
    config: &Config,
    session_model: Option<&str>,
    env: EnvLookup<'_>,
) -> Result<Vec<ModelEndpoint>> {
    let historian = &config.historian;
    if let Some(endpoints) = configured_endpoints(historian, session_model, env) {
        if endpoints.is_empty() {
            return Err(HistorianError::NoModelForEndpoint);
        }
        return Ok(endpoints);
    }
    let key_of = |name| env(name).filter(|key| !key.is_empty()).map(Secret::new);
    let upstream_openai = &config.proxy.upstream_openai;
    let (wire, base, small, key) = if let Some(key) = key_of(ANTHROPIC_KEY_ENV) {
        (
            Wire::Anthropic,
            &config.proxy.upstream_anthropic,
            ANTHROPIC_SMALL_MODEL,
            key,
        )
    } else if let Some(key) = key_of(OPENAI_KEY_ENV) {
        let small = if upstream_openai.contains("://api.openai.com") {
            OPENAI_SMALL_MODEL
        } else {
            session_model.unwrap_or(OPENAI_SMALL_MODEL)
        };
        (Wire::OpenAiChat, upstream_openai, small, key)
    } else {
        return Err(HistorianError::NoModel);
    };
    let mut models = vec![historian.model.as_deref().unwrap_or(small)];
    models.extend(historian.fallback_models.iter().map(String::as_str));
    Ok(distinct(models)
        .into_iter()
        .map(|model| ModelEndpoint::new(wire, base.clone(), model, Some(key.clone())))
        .collect())
}

/// `models` without repeats, first occurrence kept: asking a failed model again as its own
/// fallback only doubles the wait.
pub fn distinct(models: Vec<&str>) -> Vec<&str> {
    let mut seen = Vec::new();
    for model in models {
        if !seen.contains(&model) {
            seen.push(model);
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_with(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(known, _)| *known == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    /// (wire, base, model, has key) of each endpoint: what a chain is judged by.
    fn shape(endpoints: &[ModelEndpoint]) -> Vec<(Wire, String, String, bool)> {
        endpoints
            .iter()
            .map(|endpoint| {
                (
                    endpoint.wire,
                    endpoint.base_url.clone(),
                    endpoint.model.clone(),
                    endpoint.api_key.is_some(),
                )
            })
            .collect()
    }

    #[test]
    fn a_configured_endpoint_wins_with_its_models_and_its_named_key() {
        let mut config = Config::default();
        config.historian.endpoint = Some("http://127.0.0.1:11434/v1".into());
        config.historian.model = Some("qwen3:8b".into());
        config.historian.fallback_models = vec!["qwen3:8b".into(), "llama3".into()];
        config.historian.api_key_env = Some("LOCAL_KEY".into());
        let env = env_with(&[("LOCAL_KEY", "k"), (ANTHROPIC_KEY_ENV, "a")]);
        let endpoints = standalone_endpoints(&config, Some("claude-sonnet-4-5"), &env).unwrap();
        let base = "http://127.0.0.1:11434/v1".to_owned();
        assert_eq!(
            shape(&endpoints),
            [
                (Wire::OpenAiChat, base.clone(), "qwen3:8b".to_owned(), true),
                (Wire::OpenAiChat, base, "llama3".to_owned(), true),
            ]
        );
    }

    #[test]
    fn a_configured_responses_endpoint_is_asked_on_the_responses_wire() {
        let mut config = Config::default();
        config.historian.endpoint = Some("https://gw.example/v1".into());
        config.historian.wire = Some(HistorianWire::OpenAiResponses);
        config.historian.model = Some("gpt-5-mini".into());
        let endpoints = standalone_endpoints(&config, None, &env_with(&[])).unwrap();
        assert_eq!(
            shape(&endpoints),
            [(
                Wire::OpenAiResponses,
                "https://gw.example/v1".to_owned(),
                "gpt-5-mini".to_owned(),
                false
            )]
        );
    }

    #[test]
    fn an_endpoint_without_a_model_asks_the_session_model_or_says_what_to_set() {
        let mut config = Config::default();
        config.historian.endpoint = Some("http://sim".into());
        config.historian.wire = Some(HistorianWire::Anthropic);
        let env = env_with(&[]);
        let endpoints = standalone_endpoints(&config, Some("claude-opus-4"), &env).unwrap();
        assert_eq!(
            shape(&endpoints),
            [(
                Wire::Anthropic,
                "http://sim".to_owned(),
                "claude-opus-4".to_owned(),
                false
            )]
        );
        let error = standalone_endpoints(&config, None, &env).unwrap_err();
        assert!(
            matches!(error, HistorianError::NoModelForEndpoint),
            "{error}"
        );
        assert!(error.to_string().contains("historian.model"), "{error}");
    }

    #[test]
    fn without_an_endpoint_the_environment_picks_the_provider_and_its_small_model() {
        let config = Config::default();
        let both = env_with(&[(ANTHROPIC_KEY_ENV, "a"), (OPENAI_KEY_ENV, "o")]);
        assert_eq!(
            shape(&standalone_endpoints(&config, None, &both).unwrap()),
            [(
                Wire::Anthropic,
                config.proxy.upstream_anthropic.clone(),
                ANTHROPIC_SMALL_MODEL.to_owned(),
                true
            )]
        );
        let openai = env_with(&[(ANTHROPIC_KEY_ENV, ""), (OPENAI_KEY_ENV, "o")]);
        assert_eq!(
            shape(&standalone_endpoints(&config, None, &openai).unwrap()),
            [(
                Wire::OpenAiChat,
                config.proxy.upstream_openai.clone(),
                OPENAI_SMALL_MODEL.to_owned(),
                true
            )]
        );
        let mut chosen = Config::default();
        chosen.historian.model = Some("claude-sonnet-4-5".into());
        let anthropic = env_with(&[(ANTHROPIC_KEY_ENV, "a")]);
        let models: Vec<String> = standalone_endpoints(&chosen, None, &anthropic)
            .unwrap()
            .into_iter()
            .map(|endpoint| endpoint.model)
            .collect();
        assert_eq!(models, ["claude-sonnet-4-5"]);
    }

    #[test]
    fn with_nothing_configured_the_error_names_every_way_out_and_no_secret() {
        let error = standalone_endpoints(&Config::default(), None, &env_with(&[])).unwrap_err();
        let text = error.to_string();
        for needed in [
            "historian.endpoint",
            "historian.model",
            "historian.api_key_env",
            ANTHROPIC_KEY_ENV,
            OPENAI_KEY_ENV,
        ] {
            assert!(text.contains(needed), "{text} lacks {needed}");
        }
    }
}
