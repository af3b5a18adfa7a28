//! The historian inside the `magic` replay: the real job finding, validation and publishing
//! of `mc-historian`, with the simulator playing the model on the simulated clock.
//!
//! After each pass the strategy asks for the session's next job, as the proxy does after each
//! managed call. The simulated model answers it at once, but the answer is published only
//! once the simulated latency has passed (at the first step at or after it): the steps in
//! between are planned without it, as requests that never wait for the historian are. The
//! call itself is priced like any other, on the historian's small model, at the step that
//! started it.

use std::borrow::Cow;
use std::sync::OnceLock;

use mc_core::historian::{HISTORIAN_SYSTEM, history_tool};
use mc_core::{Message, Part, Role, SessionId};
use mc_historian::{HistorianSettings, Job, Published, RunReport, accept, next_job, publish};
use mc_sim::ToolSpec;
use mc_sim::historian::{historian_answer, historian_latency_ms, historian_output_tokens};
use mc_sim::strategy::PreparedCall;
use mc_store::Store;

/// The model historian calls are priced on: Anthropic's small model, the proxy's default.
pub const HISTORIAN_MODEL: &str = "claude-haiku-4-5";

/// A run answered but not yet published.
struct InFlight {
    job: Job,
    report: RunReport,
    started_ms: u64,
    ready_ms: u64,
}

/// What the historian did over a replay.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HistorianCounts {
    /// Runs started (calls priced).
    pub runs: u64,
    /// Compartments published.
    pub compartments: u64,
    /// Runs whose answer did not pass validation, or that the store could not read or
    /// publish (a historian failure: the pass itself was managed).
    pub failed: u64,
}

/// The historian of one replayed recording.
#[derive(Default)]
pub struct ReplayHistorian {
    in_flight: Option<InFlight>,
    counts: HistorianCounts,
}

impl ReplayHistorian {
    /// What it did so far.
    pub fn counts(&self) -> HistorianCounts {
        self.counts
    }

    /// Publishes the run in flight once its answer has arrived by `now_ms`. A store error
    /// counts the run as failed; the run is dropped either way.
    pub fn publish_due(&mut self, store: &Store, now_ms: u64) {
        if self
            .in_flight
            .as_ref()
            .is_none_or(|run| run.ready_ms > now_ms)
        {
            return;
        }
        let Some(run) = self.in_flight.take() else {
            return;
        };
        match publish(
            store,
            &run.job,
            &run.report,
            clock_ms(run.started_ms),
            clock_ms(run.ready_ms),
        ) {
            Ok(Published::Compartments { count, .. }) => {
                self.counts.compartments += u64::from(count);
            }
            Ok(_) => {}
            Err(_) => self.counts.failed += 1,
        }
    }

    /// Starts a run for `session` when none is in flight and its history is due; returns the
    /// call to price at this step. A store that cannot be read counts a failed run.
    pub fn start<'a>(
        &mut self,
        store: &Store,
        session: &SessionId,
        settings: &HistorianSettings,
        usage_percent: u64,
        now_ms: u64,
        count: &dyn Fn(&str) -> u64,
    ) -> Option<PreparedCall<'a>> {
        if self.in_flight.is_some() {
            return None;
        }
        let job = match next_job(store, session, settings, usage_percent, count) {
            Ok(job) => job?,
            Err(_) => {
                self.counts.failed += 1;
                return None;
            }
        };
        let answer = historian_answer(&job.request.user).unwrap_or_default();
        let output_tokens = historian_output_tokens(&answer, count);
        let accepted = accept(&job, &answer, settings.lookahead);
        if accepted.is_err() {
            self.counts.failed += 1;
        }
        let call = PreparedCall {
            system: historian_system(),
            tools: historian_tools(),
            messages: Cow::Owned(vec![Message::new(
                Role::User,
                vec![Part::text(job.request.user.clone())],
            )]),
            model: Some(HISTORIAN_MODEL),
            label: Some("historian"),
            output_tokens: Some(output_tokens),
            cache_marks: None,
        };
        let report = RunReport {
            failure: accepted.as_ref().err().cloned(),
            accepted: accepted.ok(),
            model: Some(HISTORIAN_MODEL.to_owned()),
            calls: 1,
            input_tokens: count(&job.request.user) + count(HISTORIAN_SYSTEM),
            output_tokens,
        };
        self.counts.runs += 1;
        self.in_flight = Some(InFlight {
            job,
            report,
            started_ms: now_ms,
            ready_ms: now_ms + historian_latency_ms(output_tokens),
        });
        Some(call)
    }
}

/// Simulated milliseconds as the store's timestamps.
fn clock_ms(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

fn historian_system() -> &'static [String] {
    static SYSTEM: OnceLock<Vec<String>> = OnceLock::new();
    SYSTEM.get_or_init(|| vec![HISTORIAN_SYSTEM.to_owned()])
}

fn historian_tools() -> &'static [ToolSpec] {
    static TOOLS: OnceLock<Vec<ToolSpec>> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let tool = history_tool();
        let text = |key: &str| {
            tool.get(key)
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        vec![ToolSpec {
            name: text("name"),
            description: text("description"),
            input_schema: tool.get("input_schema").cloned().unwrap_or_default(),
        }]
    })
}
