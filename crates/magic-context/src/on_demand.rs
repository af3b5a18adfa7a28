//! What `wrapup` and `recomp` share: the session, its store and configuration, the
//! historian's models, and asking them.
//!
//! No client call lends its credentials here, so the models come from the configuration
//! (`historian.endpoint`), else from a provider key in the environment
//! ([`mc_historian::standalone_endpoints`], shared with the proxy's configured endpoint).
//! The configuration is the one `reduce` and `config show` load (the user file, then the
//! project's). The model is asked on a runtime of this command's own, one run at a time;
//! the store is read and written outside it.

use std::path::PathBuf;

use anyhow::{Context, bail};
use mc_config::{ConfigSources, find_project_root, load};
use mc_core::SessionId;
use mc_engine::Engine;
use mc_historian::{
    Ask, EnvLookup, HistorianSettings, Job, LlmChain, OnDemand, Runs, run_job, standalone_endpoints,
};
use mc_llm::{LlmClient, RetryPolicy};
use mc_proxy::TokenEstimator;
use mc_replay::thousands;
use mc_store::{KnowledgeSource, LocationEnv, Platform, Store, StoreOptions, resolve_data_dir};
use serde_json::{Value, json};

use crate::clock::now_ms;
use crate::session_choice::choose;

/// A session ready for on-demand historian runs.
pub struct Operation {
    /// The engine over the session's store, configured as the proxy would be.
    pub engine: Engine,
    /// The session.
    pub session: SessionId,
    settings: HistorianSettings,
    /// The session's model, whose tokenizer sizes the chunks.
    count_model: String,
    tokens: TokenEstimator,
    chain: LlmChain,
    runtime: tokio::runtime::Runtime,
}

impl Operation {
    /// Opens the store and the configuration for `session` (by default the most recently
    /// seen of the project's sessions, [`choose`]) and picks the models; fails with what to
    /// do when the session is unknown or no model can be asked.
    pub fn open(session: Option<&str>, project: Option<&PathBuf>) -> anyhow::Result<Self> {
        let root = match project {
            Some(dir) => dir.clone(),
            None => find_project_root(
                &std::env::current_dir().context("cannot read the current directory")?,
            ),
        };
        let loaded = load(&ConfigSources::discover(Some(&root)));
        for diagnostic in &loaded.diagnostics {
            tracing::warn!(%diagnostic, "configuration value ignored");
        }
        let config = loaded.config;
        let location = resolve_data_dir(&LocationEnv::from_process(), Platform::current())
            .context("cannot find the data directory")?;
        let store = Store::open_location(&location, StoreOptions::default())
            .with_context(|| format!("cannot open the store {}", location.db_path().display()))?;
        let session = choose(&store, session, &root)?;
        let found = store
            .read(|tx| {
                let Some(status) = tx.session_status(&session)? else {
                    return Ok(None);
                };
                let model = tx
                    .calls(&session, 1)?
                    .into_iter()
                    .next()
                    .map(|call| call.model);
                Ok(Some((status.context.and_then(|c| c.usable_window), model)))
            })
            .context("cannot read the session")?;
        let Some((usable_window, session_model)) = found else {
            bail!(
                "no session `{session}` in the store {}; run `magic-context status` to list the \
                 sessions it knows",
                store.path().display()
            );
        };
        let env: EnvLookup<'_> = &|name| std::env::var(name).ok();
        if let (Some(_), Some(name)) = (&config.historian.endpoint, &config.historian.api_key_env)
            && env(name).is_none()
        {
            tracing::warn!(
                variable = %name,
                "historian.api_key_env names a variable that is not set; the endpoint is asked without a key"
            );
        }
        let endpoints = standalone_endpoints(&config, session_model.as_deref(), env)?;
        let client = LlmClient::new(RetryPolicy::default())
            .context("cannot build the historian's HTTP client")?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        Ok(Self {
            // With a team store the project's facts are queued for it (the running proxy's
            // sync sends them), never promoted into the local table it no longer reads.
            settings: HistorianSettings::new(&config, usable_window).with_knowledge(
                match config.team_store.url {
                    Some(_) => KnowledgeSource::TeamCache,
                    None => KnowledgeSource::Local,
                },
            ),
            engine: Engine::new(store, config),
            session,
            count_model: session_model.unwrap_or_default(),
            tokens: TokenEstimator::new(),
            chain: LlmChain::new(client, endpoints),
            runtime,
        })
    }

    /// Runs `work` with the session's on-demand historian and a way to ask its models.
    pub fn with_historian<T>(&self, work: impl FnOnce(&OnDemand<'_>, Ask<'_>) -> T) -> T {
        let count = |text: &str| self.tokens.count(&self.count_model, text);
        let clock = || now_ms().unwrap_or(0);
        let on_demand = OnDemand {
            store: self.engine.store(),
            session: &self.session,
            settings: self.settings,
            count: &count,
            clock: &clock,
        };
        let mut ask =
            |job: &Job, lookahead: u32| self.runtime.block_on(run_job(job, &self.chain, lookahead));
        work(&on_demand, &mut ask)
    }
}

/// The runs' part of a `--json` report: `runs`, `calls`, `compartments`, `covered`
/// (`[first, last]` ordinal, or null), `input_tokens`, `output_tokens`, `model`, `ending`
/// (`done`, `failed` or `held`) and `failure` (or null).
pub fn runs_json(runs: &Runs) -> Value {
    json!({
        "runs": runs.runs,
        "calls": runs.calls,
        "compartments": runs.compartments,
        "covered": runs.covered.map(|(first, last)| [first, last]),
        "input_tokens": runs.input_tokens,
        "output_tokens": runs.output_tokens,
        "model": runs.model,
        "ending": runs.ending.as_str(),
        "failure": runs.failure,
    })
}

/// One line on what the runs did (`verb`: "summarised", "rebuilt"), then why they stopped
/// short, if they did.
pub fn runs_text(runs: &Runs, verb: &str) -> String {
    let plural = |n: u32| if n == 1 { "" } else { "s" };
    let mut text = format!(
        "{} historian run{}: {} {} compartment{}",
        runs.runs,
        plural(runs.runs),
        verb,
        runs.compartments,
        plural(runs.compartments)
    );
    if let Some((first, last)) = runs.covered {
        text.push_str(&format!(" covering messages {first}-{last}"));
    }
    if runs.runs > 0 {
        text.push_str(&format!(
            " ({} in / {} out tokens on {})",
            thousands(runs.input_tokens),
            thousands(runs.output_tokens),
            runs.model.as_deref().unwrap_or("no model")
        ));
    }
    text.push('\n');
    match runs.ending {
        mc_historian::Ending::Done => {}
        mc_historian::Ending::Failed => text.push_str(&format!(
            "stopped: the last run failed: {}\n",
            runs.failure.as_deref().unwrap_or("no reason given")
        )),
        mc_historian::Ending::Held => text.push_str(
            "stopped: the model's only compartment of the last chunk was held back for more \
             history; run again once the session has gone on\n",
        ),
    }
    text
}

/// Adds `more`'s fields to `report` (both objects), in their order.
pub fn merge(report: &mut Value, more: Value) {
    if let (Value::Object(report), Value::Object(more)) = (report, more) {
        report.extend(more);
    }
}
