//! Historian runs an operator asks for now, rather than the background historian's one run
//! per trigger: `wrapup` summarises all the unsummarised history but the newest tags, and
//! `recomp` rebuilds every compartment from the raw log.
//!
//! Both run chunk after chunk, each run found, asked, validated and published exactly as in
//! the background (so the store holds the same rows and run records), until nothing is left
//! or a run fails. A rebuild publishes to the staging area and swaps it in only once it
//! reaches where the compartments in use end; stopped earlier, it resumes from the staged end
//! on the next call. Neither touches the prompt: the caller asks the engine to land the
//! result on the session's next pass.
//!
//! The loop is synchronous over the store; the model is asked through `ask`, which the
//! caller drives on its own runtime, so SQLite never runs on an async thread.

use mc_core::SessionId;
use mc_store::{Store, Swapped};

use crate::error::Result;
use crate::job::{Job, next_job, next_rebuild_job};
use crate::publish::{Published, publish};
use crate::run::RunReport;
use crate::settings::HistorianSettings;

/// Asks the model for one job with the given lookahead (typically `run_job` on a runtime).
pub type Ask<'a> = &'a mut dyn FnMut(&Job, u32) -> RunReport;

/// What on-demand runs work with.
pub struct OnDemand<'a> {
    /// The store read and published to.
    pub store: &'a Store,
    /// The session.
    pub session: &'a SessionId,
    /// Its historian settings ([`HistorianSettings::new`]); each command makes them
    /// on-demand itself.
    pub settings: HistorianSettings,
    /// Counts tokens the way the session's passes do (chunk sizes).
    pub count: &'a dyn Fn(&str) -> u64,
    /// The wall clock, unix milliseconds (run records).
    pub clock: &'a dyn Fn() -> i64,
}

/// Why a series of runs stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Nothing left to summarise.
    Done,
    /// A run failed (every model, or the answer twice); what it covered so far stays.
    Failed,
    /// A run's only compartment was held back: asking again would get the same answer.
    Held,
}

impl Ending {
    /// The word reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Held => "held",
        }
    }
}

/// What a series of runs did and cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runs {
    /// Runs made.
    pub runs: u32,
    /// Model calls they made (repair rounds and fallbacks included).
    pub calls: u32,
    /// Compartments they published (or staged).
    pub compartments: u32,
    /// The first and last ordinal those compartments cover.
    pub covered: Option<(u64, u64)>,
    /// Prompt tokens the provider reported.
    pub input_tokens: u64,
    /// Output tokens the provider reported.
    pub output_tokens: u64,
    /// The model of the last run.
    pub model: Option<String>,
    /// Why the last run failed, when it did.
    pub failure: Option<String>,
    /// Why the series stopped.
    pub ending: Ending,
}

/// What a rebuild did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rebuilt {
    /// Where this call started: the staged end an earlier, interrupted rebuild left.
    pub resumed_from: u64,
    /// The runs of this call.
    pub runs: Runs,
    /// The swap, once the staged set reached the end of the one in use.
    pub swapped: Option<Swapped>,
}

impl OnDemand<'_> {
    /// Summarises the session's unsummarised history, whatever its size, except the messages
    /// of the newest `keep_tags` tags.
    pub fn wrapup(&self, keep_tags: u32, ask: Ask<'_>) -> Result<Runs> {
        let settings = self.settings.on_demand(keep_tags);
        self.run_until_done(
            &mut || next_job(self.store, self.session, &settings, 0, self.count),
            ask,
        )
    }

    /// Rebuilds the session's compartments from the raw log into the staging area, resuming
    /// from its end, and swaps them in once they reach where the ones in use end. A session
    /// without compartments has nothing to rebuild: no run, no swap.
    pub fn recomp(&self, ask: Ask<'_>) -> Result<Rebuilt> {
        let settings = self.settings.on_demand(self.settings.live_tail_tags);
        let resumed_from = self.store.read(|tx| tx.staged_until(self.session))?;
        let runs = self.run_until_done(
            &mut || next_rebuild_job(self.store, self.session, &settings, self.count),
            ask,
        )?;
        let (staged, summarised) = self.store.read(|tx| {
            Ok((
                tx.staged_until(self.session)?,
                tx.summarised_until(self.session)?,
            ))
        })?;
        let swapped = if staged > 0 && staged >= summarised {
            Some(
                self.store
                    .write(|tx| tx.swap_staged_compartments(self.session))?,
            )
        } else {
            None
        };
        Ok(Rebuilt {
            resumed_from,
            runs,
            swapped,
        })
    }

    /// Runs the jobs `next` finds, one after another, until it finds none or a run makes no
    /// progress.
    fn run_until_done(
        &self,
        next: &mut dyn FnMut() -> Result<Option<Job>>,
        ask: Ask<'_>,
    ) -> Result<Runs> {
        let mut runs = Runs {
            runs: 0,
            calls: 0,
            compartments: 0,
            covered: None,
            input_tokens: 0,
            output_tokens: 0,
            model: None,
            failure: None,
            ending: Ending::Done,
        };
        while let Some(job) = next()? {
            let started_ms = (self.clock)();
            let report = ask(&job, self.settings.lookahead);
            let finished_ms = (self.clock)();
            let published = publish(self.store, &job, &report, started_ms, finished_ms)?;
            runs.runs += 1;
            runs.calls += report.calls;
            runs.input_tokens += report.input_tokens;
            runs.output_tokens += report.output_tokens;
            runs.model = report.model;
            match published {
                Published::Compartments {
                    count, covered_end, ..
                }
                | Published::Staged { count, covered_end } => {
                    runs.compartments += count;
                    let first = runs.covered.map_or(job.chunk.start, |(first, _)| first);
                    runs.covered = Some((first, covered_end));
                }
                // Another run published this chunk first; the next job starts after it.
                Published::Stale => {}
                Published::Held => {
                    runs.ending = Ending::Held;
                    break;
                }
                Published::Failed => {
                    runs.failure = report.failure;
                    runs.ending = Ending::Failed;
                    break;
                }
            }
        }
        Ok(runs)
    }
}
