//! The `magic` strategy: the transform engine itself, over a real SQLite store, driven step
//! by step like any baseline.
//!
//! Each recording gets a fresh store in a temporary directory and its own session. A request
//! whose history contradicts the stored one (the capture's compaction call) starts a new
//! session, as the proxy forks a branch. A request the engine refuses (even its minimal
//! rendering is over the window) is not sent, and the client's session ends there, as through
//! the proxy. Any other engine error falls back to sending the client's request unmanaged and
//! is counted, so a replay never hides a failure behind a figure.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::PathBuf;

use mc_core::breakpoints::{CacheTtlChoice, Ttl};
use mc_core::pass_plan::{BustCause, usable_window};
use mc_core::search::FusionWeights;
use mc_core::{Host, Message, Part, Role, SessionId};
use mc_engine::search::{HitPlace, SearchRequest, SemanticSearch, search};
use mc_engine::{Engine, EngineError, PassRequest};
use mc_historian::HistorianSettings;
use mc_sim::ToolSpec;
use mc_sim::strategy::{CacheMarks, Prepared, PreparedCall, StepView, Strategy, StrategyContext};
use mc_store::{SearchScope, Store};

use crate::magic_historian::ReplayHistorian;

/// The name of the engine's store file in its temporary directory.
const STORE_FILE: &str = "context.db";

/// The engine as a replay strategy.
pub struct Magic {
    engine: Option<Engine>,
    // Keeps the store's directory alive as long as the engine.
    _dir: Option<tempfile::TempDir>,
    branch: u32,
    /// The branch the current one continues, when the client compacted that one and went on
    /// with its summary ([`mc_core::continues_compacted`]).
    continues: Option<SessionId>,
    /// The branch of the last step that was the conversation itself, not the client asking
    /// for its summary ([`mc_core::asks_for_summary`]).
    conversation: Option<SessionId>,
    failures: u64,
    /// The pass the previous step's main call sent: the usage the next step reports is its.
    last_pass: Option<u64>,
    historian: ReplayHistorian,
}

impl Magic {
    /// A strategy with a fresh store and `config`; a store that cannot be created leaves the
    /// strategy passing requests through, counted as failures.
    pub fn new(config: mc_core::config::Config) -> Self {
        let opened = tempfile::tempdir().ok().and_then(|dir| {
            let store = Store::open(dir.path().join(STORE_FILE)).ok()?;
            Some((dir, Engine::new(store, config)))
        });
        match opened {
            Some((dir, engine)) => Self {
                engine: Some(engine),
                _dir: Some(dir),
                branch: 0,
                continues: None,
                conversation: None,
                failures: 0,
                last_pass: None,
                historian: ReplayHistorian::default(),
            },
            None => Self {
                engine: None,
                _dir: None,
                branch: 0,
                continues: None,
                conversation: None,
                failures: 0,
                last_pass: None,
                historian: ReplayHistorian::default(),
            },
        }
    }

    /// Passes where the engine failed and the request went through unmanaged.
    pub fn failures(&self) -> u64 {
        self.failures
    }

    fn session(&self) -> Option<SessionId> {
        SessionId::new(format!("replay-{}", self.branch)).ok()
    }

    /// The file of the engine's store, while there is one.
    pub fn store_path(&self) -> Option<PathBuf> {
        self._dir.as_ref().map(|dir| dir.path().join(STORE_FILE))
    }

    /// What `ctx_search` would answer the session now for `query`, with the semantic signal
    /// when given: the message range of each of its first `limit` hits, best first (`None`
    /// for a hit that is not messages). `None` without an engine or when the search fails.
    pub fn search_session(
        &self,
        query: &str,
        limit: usize,
        semantic: Option<&dyn SemanticSearch>,
    ) -> Option<Vec<Option<(u64, u64)>>> {
        let (engine, session) = (self.engine.as_ref()?, self.session()?);
        let request = SearchRequest {
            query: query.to_owned(),
            scope: SearchScope {
                session: Some(session.clone()),
                ..SearchScope::default()
            },
            viewer: Some(session),
            limit,
            shared: Vec::new(),
            knowledge: engine.knowledge_source(),
        };
        let hits = search(
            engine.store(),
            &request,
            semantic,
            &FusionWeights::default(),
        )
        .ok()?;
        Some(
            hits.iter()
                .map(|hit| match hit.place {
                    HitPlace::Messages { start, end, .. } => Some((start, end)),
                    HitPlace::Memory { .. } | HitPlace::Commit { .. } | HitPlace::Note { .. } => {
                        None
                    }
                })
                .collect(),
        )
    }
}

impl Default for Magic {
    fn default() -> Self {
        Self::new(mc_core::config::Config::default())
    }
}

impl Strategy for Magic {
    fn name(&self) -> &'static str {
        "magic"
    }

    fn counters(&self) -> BTreeMap<&'static str, u64> {
        let counts = self.historian.counts();
        BTreeMap::from([
            ("historian_runs", counts.runs),
            ("historian_failed", counts.failed),
            ("compartments", counts.compartments),
        ])
    }

    fn prepare<'a>(&mut self, step: &StepView<'a>, ctx: &StrategyContext<'_>) -> Prepared<'a> {
        let passthrough =
            || Prepared::single(PreparedCall::client(step, Cow::Borrowed(step.messages)));
        let prefix_identity = prefix_identity(step);
        let count = |text: &str| ctx.counter.count_tokens(text);
        let usable_window = usable_window(ctx.window_tokens, Some(ctx.max_output_tokens), 0);
        let fixed_tokens = fixed_tokens(step, &count);
        if let Some(engine) = self.engine.as_ref() {
            self.historian.publish_due(engine.store(), step.at_ms);
        }
        for _attempt in 0..2 {
            let (Some(engine), Some(session)) = (self.engine.as_ref(), self.session()) else {
                break;
            };
            let request = PassRequest {
                session: &session,
                host: Host::Other,
                mode: mc_core::SessionMode::Primary,
                spawned_by: None,
                continues: self.continues.as_ref(),
                project: None,
                model: ctx.model,
                prefix_identity: &prefix_identity,
                system_blocks: step.system.len(),
                messages: step.messages,
                chain: None,
                now_ms: step.at_ms,
                usable_window: Some(usable_window),
                fixed_tokens,
                last_usage_tokens: step.last_prompt_tokens,
                last_usage_pass: self.last_pass.filter(|_| step.last_prompt_tokens.is_some()),
                operator_flush: false,
                reduce_tool: false,
                project_docs: &[],
                client_ttl: CacheTtlChoice::Default,
                count_text: &count,
            };
            match engine.pass(&request) {
                Ok(outcome) => {
                    self.last_pass = Some(outcome.seq);
                    if !mc_core::asks_for_summary(step.messages) {
                        self.conversation = Some(session.clone());
                    }
                    let settings = HistorianSettings::new(engine.config(), Some(usable_window));
                    let usage_percent =
                        outcome.estimated_prompt_tokens * 100 / usable_window.max(1);
                    let historian_call = if engine.config().historian.enabled {
                        self.historian.start(
                            engine.store(),
                            &session,
                            &settings,
                            usage_percent,
                            step.at_ms,
                            &count,
                        )
                    } else {
                        None
                    };
                    let marks = CacheMarks {
                        system: outcome.breakpoints.system,
                        slots: outcome
                            .breakpoints
                            .slots
                            .iter()
                            .map(|(slot, _)| (slot.message, slot.part))
                            .collect(),
                        one_hour: outcome.breakpoints.ttl == Ttl::OneHour,
                    };
                    // The historian's call goes first: the step's main call is the last.
                    let mut calls: Vec<PreparedCall<'_>> = historian_call.into_iter().collect();
                    calls.push(PreparedCall {
                        system: step.system,
                        tools: step.tools,
                        messages: Cow::Owned(
                            outcome.messages.iter().map(|m| Message::clone(m)).collect(),
                        ),
                        model: None,
                        label: None,
                        output_tokens: None,
                        cache_marks: Some(marks),
                    });
                    return Prepared {
                        calls,
                        bust_cause: outcome.plan.cause.map(cause_name),
                        refused: false,
                    };
                }
                // The proxy answers this request with an error and sends nothing; the
                // client's session ends here (not a failure of the engine).
                Err(EngineError::Refused { .. }) => return Prepared::refused(),
                // A rewind or a compaction call: a new branch, as the proxy forks one.
                Err(EngineError::Diverged { .. }) => {
                    self.continues = mc_core::continues_compacted(step.messages)
                        .then(|| self.conversation.clone())
                        .flatten();
                    self.branch += 1;
                    self.last_pass = None;
                }
                Err(_) => break,
            }
        }
        self.failures += 1;
        passthrough()
    }
}

/// The estimated tokens of the system prompt and tools, as the tool definitions render.
fn fixed_tokens(step: &StepView<'_>, count: &dyn Fn(&str) -> u64) -> u64 {
    let system: u64 = step.system.iter().map(|text| count(text)).sum();
    let tools: u64 = step.tools.iter().map(|tool| count(&tool_text(tool))).sum();
    system + tools
}

/// A stable identity of the system prompt and tools: the content hash of a message holding
/// them, so any change to either reads as a changed prefix.
fn prefix_identity(step: &StepView<'_>) -> String {
    let mut parts: Vec<Part> = step
        .system
        .iter()
        .map(|text| Part::text(text.clone()))
        .collect();
    parts.extend(step.tools.iter().map(|tool| Part::text(tool_text(tool))));
    Message::new(Role::System, parts).content_hash().to_string()
}

/// The ledger name of a bust cause.
fn cause_name(cause: BustCause) -> &'static str {
    match cause {
        BustCause::ExecuteThreshold => "execute-threshold",
        BustCause::CacheExpired => "cache-expired",
        BustCause::OperatorFlush => "operator-flush",
        BustCause::ForceBand => "force-band",
        BustCause::FirstRender => "first-render",
        BustCause::ModelChanged => "model-changed",
        BustCause::SystemChanged => "system-changed",
        BustCause::StructuralEdit => "structural-edit",
        BustCause::M1Backstop => "m1-backstop",
        BustCause::Emergency => "emergency",
        BustCause::WorkingSet => "working-set",
    }
}

/// A tool definition as one text: what its identity hashes and its size is counted from.
fn tool_text(tool: &ToolSpec) -> String {
    format!("{}\n{}\n{}", tool.name, tool.description, tool.input_schema)
}
