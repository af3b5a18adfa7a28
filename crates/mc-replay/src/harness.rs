//! Driving recordings through strategies on the simulated provider.
//!
//! Each strategy replays each recording on its own [`SimProvider`] (a fresh cache), step by
//! step on the simulated clock: the strategy prepares its calls for the step, each is
//! rendered as the client would send it and priced at the step's time (a strategy's extra
//! calls happen at the same instant), and the main call's prompt size goes back to the
//! strategy for its next decision. A prompt over the window is refused by the provider, and
//! there the recording ends for that strategy: a real client gets an error and its session
//! stops, so replaying the steps after it would price a session nobody could have had. The
//! refusal is counted (`over_window`) and the session as failed (`failed_sessions`), which
//! makes that strategy's totals cover less work than the others' (the report warns).
//!
//! A call that names its own model (a background summariser on a small model) is rendered and
//! priced as that model, with its prices and minimum cacheable length; its cache is its own,
//! so it is kept out of the bust tracking of the main model's prefix. Each step's main call
//! is checked for the earlier context its recorded answer used ([`StepReferences`]); once a
//! recording is done, the last request the strategy sent is checked for the user's words
//! ([`UserMessages`]) and the strategy's own counters are added to its totals.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use indicatif::ProgressBar;
use mc_sim::strategy::{
    Prepared, PreparedCall, StepView, Strategy, StrategyContext, StrategyKind,
    is_degenerate_trigger, message_tokens,
};
use mc_sim::{
    CountTokens, ModelSpec, O200kCounter, PRICES_AS_OF, Recording, SimProvider, TokenScale,
    model_spec,
};

use self::priced_call::{Priced, price, usage_of};
use crate::busts::{BustTracker, CacheOutcome};
use crate::error::ReplayError;
use crate::estimate::Estimate;
use crate::magic::Magic;
use crate::memo::MemoCounter;
use crate::progress::replay_bar;
use crate::recall_dropped::{RecallDropped, RecallProbe, SharedSemanticProbe};
use crate::references_kept::StepReferences;
use crate::stand_in::{self, StandIn};
use crate::totals::StrategyTotals;
use crate::user_words_kept::{LostWords, UserMessages};
use mc_core::config::Config;

/// What to replay and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayOptions {
    /// The model every call goes to; `None` replays each recording on its own model.
    pub model: Option<String>,
    /// The context window in tokens; `None` uses the model's.
    pub window_tokens: Option<u64>,
    /// The strategies, in report order.
    pub strategies: Vec<StrategyKind>,
    /// How many tokens the simulated provider counts per token of its calibrated count; the
    /// strategies keep estimating unscaled, so they must learn the difference from the usage
    /// the provider reports.
    pub token_scale: TokenScale,
    /// Pads stand-in system prompts and tools (Claude Code session files keep neither) to at
    /// least this many tokens, as the strategies estimate them; `None` keeps them as loaded.
    pub stand_in_tokens: Option<u64>,
    /// Draw a progress bar (only ever on a terminal).
    pub progress: bool,
    /// Ask `magic`'s store, wherever a request missed what its answer used, what
    /// `ctx_search` finds of it ([`crate::recall_dropped`]).
    pub probe_recall: bool,
    /// With [`Self::probe_recall`]: the semantic signal to ask each query with a second
    /// time (hybrid figures); `None` asks with full text alone.
    pub probe_semantic: Option<SharedSemanticProbe>,
    /// The configuration the `magic` strategy's engine and historian run with.
    pub engine_config: Config,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        Self {
            model: None,
            window_tokens: None,
            strategies: StrategyKind::ALL.to_vec(),
            token_scale: TokenScale::ONE,
            stand_in_tokens: None,
            progress: false,
            probe_recall: false,
            probe_semantic: None,
            engine_config: Config::default(),
        }
    }
}

/// The outcome of a replay: every strategy's totals and its per-step curve.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    /// The model replayed on (or `"per-recording"` when recordings kept different ones).
    pub model: String,
    /// The context window in tokens.
    pub window_tokens: u64,
    /// The provider's token scale (1 = counts as calibrated).
    pub token_scale: TokenScale,
    /// How many recordings were replayed.
    pub files: usize,
    /// The date of the list prices used.
    pub prices_as_of: &'static str,
    /// Whether `autocompact` ran with a trigger under half the window for some recording
    /// ([`is_degenerate_trigger`]): it then compacts far more often than Claude Code does, and
    /// ratios against it flatter the others.
    pub degenerate_baseline: bool,
    /// The stand-ins used for what recordings did not keep, if any.
    pub stand_in: Option<StandIn>,
    /// One run per strategy, in the order asked for.
    pub runs: Vec<StrategyRun>,
}

/// One strategy over every recording.
#[derive(Debug, Clone, PartialEq)]
pub struct StrategyRun {
    /// Which strategy.
    pub kind: StrategyKind,
    /// Its totals over all recordings.
    pub totals: StrategyTotals,
    /// One point per step (the step's main call), recordings one after another.
    pub steps: Vec<StepPoint>,
    /// Its totals for each recording, in the order replayed: a regression on one kind of
    /// session shows here where the sums hide it.
    pub per_recording: Vec<RecordingRun>,
    /// For `magic` with [`ReplayOptions::probe_recall`]: what search found of what its
    /// requests missed.
    pub recall_dropped: Option<RecallDropped>,
}

/// One strategy over one recording.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordingRun {
    /// The recording's name.
    pub name: String,
    /// Its totals.
    pub totals: StrategyTotals,
    /// The user's messages its last request no longer held.
    pub lost_user_words: Vec<LostWords>,
}

/// What the main call of one step did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepPoint {
    /// Index of the recording in the replayed list.
    pub recording: usize,
    /// Index of the step in its recording.
    pub step: usize,
    /// The prompt the main call sent (counted by the provider, refused or not).
    pub prompt_tokens: u64,
    /// Tokens it read from the cache (0 when refused).
    pub cache_read: u64,
    /// Tokens it wrote to the cache (0 when refused).
    pub cache_write: u64,
    /// Whether the provider refused it for exceeding the window (then it is the recording's
    /// last point for this strategy, and it may be an extra call refused before the main one).
    pub over_window: bool,
    /// Cost of every call so far in this strategy's run, this step's extra calls included.
    pub cumulative_cost_usd: f64,
}

/// Replays `recordings` through every strategy of `options`.
pub fn replay(recordings: &[Recording], options: &ReplayOptions) -> Result<Replay, ReplayError> {
    let Some(first) = recordings.first() else {
        return Err(ReplayError::NoRecordings);
    };
    let o200k: Arc<dyn CountTokens + Send + Sync> = Arc::new(O200kCounter::load()?);
    let counter = Arc::new(MemoCounter::new(o200k));
    let model = options.model.as_deref();
    let recordings = &*match options.stand_in_tokens {
        Some(target_tokens) => stand_in::pad(recordings, target_tokens, model, &counter),
        None => Cow::Borrowed(recordings),
    };
    let stand_in = stand_in::measure(
        recordings,
        model,
        &counter,
        options.stand_in_tokens.is_some(),
    );
    let user_messages: Vec<UserMessages> = recordings.iter().map(UserMessages::of).collect();
    let references: Vec<StepReferences> = recordings.iter().map(StepReferences::of).collect();
    let first_model = options.model.clone().unwrap_or_else(|| first.model.clone());
    let same_model = options.model.is_some()
        || recordings
            .iter()
            .all(|recording| recording.model == first.model);
    let bar = replay_bar(
        (recordings.len() * options.strategies.len()) as u64,
        options.progress,
    );
    let runs = std::thread::scope(|scope| {
        let handles: Vec<_> = options
            .strategies
            .iter()
            .map(|&kind| {
                let inputs = Inputs {
                    recordings,
                    user_messages: &user_messages,
                    references: &references,
                    options,
                    counter: &counter,
                    bar: &bar,
                };
                scope.spawn(move || replay_strategy(kind, &inputs))
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap_or(Err(ReplayError::Panicked)))
            .collect::<Result<Vec<_>, _>>()
    })?;
    bar.finish_and_clear();
    Ok(Replay {
        window_tokens: options
            .window_tokens
            .unwrap_or_else(|| model_spec(&first_model).window_tokens),
        model: if same_model {
            first_model
        } else {
            "per-recording".to_owned()
        },
        token_scale: options.token_scale,
        files: recordings.len(),
        prices_as_of: PRICES_AS_OF,
        degenerate_baseline: has_degenerate_baseline(recordings, options),
        stand_in,
        runs,
    })
}

/// Whether `autocompact` is in the run and its trigger is degenerate for some recording at
/// the window it is replayed at.
fn has_degenerate_baseline(recordings: &[Recording], options: &ReplayOptions) -> bool {
    options.strategies.contains(&StrategyKind::Autocompact)
        && recordings.iter().any(|recording| {
            let spec = model_spec(options.model.as_deref().unwrap_or(&recording.model));
            let window_tokens = options.window_tokens.unwrap_or(spec.window_tokens);
            is_degenerate_trigger(window_tokens, spec.max_output_tokens)
        })
}

/// What every strategy's run reads: the recordings, their user messages and their steps'
/// references (one each per recording), the options, the shared counter and the progress
/// bar.
struct Inputs<'r> {
    recordings: &'r [Recording],
    user_messages: &'r [UserMessages],
    references: &'r [StepReferences],
    options: &'r ReplayOptions,
    counter: &'r Arc<MemoCounter>,
    bar: &'r ProgressBar,
}

fn replay_strategy(kind: StrategyKind, inputs: &Inputs<'_>) -> Result<StrategyRun, ReplayError> {
    let options = inputs.options;
    let mut run = StrategyRun {
        kind,
        totals: StrategyTotals::default(),
        steps: Vec::new(),
        per_recording: Vec::new(),
        recall_dropped: None,
    };
    let mut probe = (options.probe_recall && kind == StrategyKind::Magic)
        .then(|| RecallProbe::new(options.probe_semantic.clone()));
    for (index, ((recording, user_messages), references)) in inputs
        .recordings
        .iter()
        .zip(inputs.user_messages)
        .zip(inputs.references)
        .enumerate()
    {
        let model = options.model.as_deref().unwrap_or(&recording.model);
        let spec = model_spec(model);
        let session = Session {
            index,
            recording,
            user_messages,
            references,
            window_tokens: options.window_tokens.unwrap_or(spec.window_tokens),
            spec,
            counter: Arc::clone(inputs.counter),
            token_scale: options.token_scale,
        };
        let mut driven = Driven::new(kind, &options.engine_config);
        run.replay_recording(&session, &mut driven, probe.as_mut())?;
        inputs.bar.inc(1);
    }
    run.recall_dropped = probe.map(|probe| probe.figures());
    Ok(run)
}

/// One recording on one model, with the counters its calls use.
struct Session<'r> {
    index: usize,
    recording: &'r Recording,
    user_messages: &'r UserMessages,
    references: &'r StepReferences,
    spec: ModelSpec,
    window_tokens: u64,
    counter: Arc<MemoCounter>,
    token_scale: TokenScale,
}

impl Session<'_> {
    /// Whether `call` goes to the session's model, whose cache line busts are tracked on.
    fn is_main_model(&self, call: &PreparedCall<'_>) -> bool {
        call.model.is_none_or(|model| model == self.spec.name)
    }

    /// The model `call` goes to: its own, or the session's.
    fn spec_of<'s>(&'s self, call: &PreparedCall<'_>) -> Cow<'s, ModelSpec> {
        match call.model {
            Some(model) if model != self.spec.name => Cow::Owned(model_spec(model)),
            Some(_) | None => Cow::Borrowed(&self.spec),
        }
    }
}

impl StrategyRun {
    fn replay_recording<'r>(
        &mut self,
        session: &Session<'r>,
        driven: &mut Driven,
        mut probe: Option<&mut RecallProbe>,
    ) -> Result<(), ReplayError> {
        let recording = session.recording;
        let spec = &session.spec;
        let shared: Arc<dyn CountTokens + Send + Sync> = session.counter.clone();
        let mut provider = SimProvider::new(shared)
            .with_window(session.window_tokens)
            .with_token_scale(session.token_scale);
        // The strategies estimate as the provider counts, o200k with the model's correction,
        // but without the token scale: that difference they can only learn from the usage
        // the provider reports (`last_prompt_tokens`).
        let estimate = Estimate::new(&session.counter, spec);
        let ctx = StrategyContext {
            model: &spec.name,
            wire: spec.wire,
            window_tokens: session.window_tokens,
            max_output_tokens: spec.max_output_tokens,
            counter: &estimate,
        };
        let mut busts = BustTracker::new();
        let mut totals = StrategyTotals::default();
        let mut cumulative_cost_usd = self
            .steps
            .last()
            .map_or(0.0, |point| point.cumulative_cost_usd);
        let mut last_prompt_tokens = None;
        // The last main call the provider accepted: where the user's words are looked for.
        let mut last_sent: Option<PreparedCall<'r>> = None;
        for (step_index, step) in recording.steps.iter().enumerate() {
            let (system, tools) = recording.context_of(step);
            let view = StepView {
                at_ms: step.at_ms,
                system,
                tools,
                messages: step.request_messages(),
                last_prompt_tokens,
            };
            let started = Instant::now();
            let mut prepared: Prepared<'r> = driven.strategy().prepare(&view, &ctx);
            totals.add_strategy_time(started.elapsed());
            if prepared.refused {
                // The client gets the strategy's error and its session ends, as after a
                // request the provider refuses.
                totals.add_failed_session();
                break;
            }
            let step_output = step
                .output_tokens
                .unwrap_or_else(|| message_tokens(&estimate, spec.wire, &step.response));
            let mut main = None;
            for call in &prepared.calls {
                let output = call.output_tokens.unwrap_or(step_output);
                let call_spec = session.spec_of(call);
                let priced = price(&mut provider, &call_spec, call, output, step.at_ms)
                    .map_err(|source| source.at(&recording.name, step_index))?;
                let point = match priced {
                    Priced::Accepted(record) => {
                        let outcome = CacheOutcome {
                            at_ms: step.at_ms,
                            cache_read: record.cache_read,
                            cache_write: record.cache_write_5m + record.cache_write_1h,
                        };
                        // Another model's cache is a line of its own: its fresh writes
                        // say nothing about the main prefix.
                        let bust = if session.is_main_model(call) {
                            busts.observe(outcome, prepared.bust_cause)
                        } else {
                            None
                        };
                        if let Some(cause) = bust {
                            totals.add_bust(cause);
                        }
                        let usage = usage_of(&record, &call_spec.price);
                        totals.add_call(&usage, call.label);
                        cumulative_cost_usd += usage.cost_usd;
                        StepPoint {
                            recording: session.index,
                            step: step_index,
                            prompt_tokens: usage.prompt_tokens,
                            cache_read: outcome.cache_read,
                            cache_write: outcome.cache_write,
                            over_window: false,
                            cumulative_cost_usd,
                        }
                    }
                    Priced::OverWindow { prompt_tokens } => {
                        totals.add_over_window(prompt_tokens);
                        StepPoint {
                            recording: session.index,
                            step: step_index,
                            prompt_tokens,
                            cache_read: 0,
                            cache_write: 0,
                            over_window: true,
                            cumulative_cost_usd,
                        }
                    }
                };
                main = Some(point);
                if point.over_window {
                    break;
                }
            }
            let Some(point) = main else {
                continue;
            };
            self.steps.push(point);
            if point.over_window {
                // The client gets an error here and its session ends: nothing after this step
                // is replayed for this strategy, and the session counts as failed.
                totals.add_failed_session();
                break;
            }
            last_prompt_tokens = Some(point.prompt_tokens);
            // Every call was accepted, the main one last.
            last_sent = prepared.calls.pop();
            if let Some(sent) = &last_sent {
                let (kept, used) = session.references.kept_in(step_index, sent);
                totals.add_references(kept, used);
                if let (Some(probe), Driven::Magic(magic)) = (probe.as_deref_mut(), &*driven) {
                    let missed = session.references.missed_in(step_index, sent);
                    let history = step.request_messages();
                    probe.ask(magic, &recording.name, &missed, history, &step.response);
                }
            }
        }
        if let Some(failures) = driven.engine_failures() {
            totals.add_engine_failures(failures);
        }
        let user_messages = session.user_messages;
        let lost_user_words = user_messages.lost_in(last_sent.as_ref());
        totals.add_user_words(
            user_messages.len() - lost_user_words.len() as u64,
            user_messages.len(),
        );
        totals.add_counters(driven.strategy().counters());
        self.totals.merge(&totals);
        self.per_recording.push(RecordingRun {
            name: recording.name.clone(),
            totals,
            lost_user_words,
        });
        Ok(())
    }
}

/// The strategy one recording is driven through. The engine is kept as itself so that its
/// failures (passes it could not manage and sent as the client's request) can be reported.
enum Driven {
    Baseline(Box<dyn Strategy>),
    Magic(Box<Magic>),
}

impl Driven {
    /// A fresh strategy of `kind`, with a fresh store for the engine (configured by
    /// `config`).
    fn new(kind: StrategyKind, config: &Config) -> Self {
        match kind.build() {
            Some(strategy) => Self::Baseline(strategy),
            None => Self::Magic(Box::new(Magic::new(config.clone()))),
        }
    }

    fn strategy(&mut self) -> &mut dyn Strategy {
        match self {
            Self::Baseline(strategy) => strategy.as_mut(),
            Self::Magic(magic) => magic.as_mut(),
        }
    }

    /// The engine's failures; `None` for a baseline, which has no engine to fail.
    fn engine_failures(&self) -> Option<u64> {
        match self {
            Self::Baseline(_) => None,
            Self::Magic(magic) => Some(magic.failures()),
        }
    }
}

mod priced_call;

#[cfg(test)]
mod tests;
