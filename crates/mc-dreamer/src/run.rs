//! One task on one project, from the lease to the run's record.
//!
//! The run takes its conflict domain's lease first (skipped, and recorded as skipped, when
//! another scheduler holds it), renews it before each write, releases it at the end, and
//! records what happened whatever it was, so `status` and `dream --list` can account for
//! every run. A killed process leaves its lease to lapse after [`Limits::lease_ms`]. With a
//! team store, the memory-changing tasks hold their lease there ([`TeamMemories`]); when it does
//! not answer they do not run, and the record says so.

use std::path::Path;

use mc_core::ProjectId;
use mc_store::{DreamerRun, RunOutcome, Store};

use crate::archive::archive_stale_memories;
use crate::batches::TaskContext;
use crate::consolidate::consolidate_memories;
use crate::error::{DreamerError, Result};
use crate::in_flight::InFlight;
use crate::maintain_docs::maintain_docs;
use crate::model::DreamerModel;
use crate::pin_key_files::pin_key_files;
use crate::project_folder::{DEFAULT_MAX_FILE_BYTES, ProjectFolder};
use crate::promote::promote_user_profile;
use crate::report::{Failure, TaskReport};
use crate::rewrite::rewrite_verbose_memories;
use crate::smart_notes::evaluate_smart_notes;
use crate::task::Task;
use crate::task_settings::TaskSettings;
use crate::team_memories::{LeaseAnswer, TeamMemories};
use crate::verify::verify_memories;

/// The bounds of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// How long a lease lasts unless renewed, milliseconds. Longer than one model call with
    /// its retries, so a live run renews it in time.
    pub lease_ms: i64,
    /// The most one run may take, milliseconds; it stops asking after that.
    pub run_ms: i64,
    /// Files larger than this are not read, bytes.
    pub max_file_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            lease_ms: 10 * 60 * 1000,
            run_ms: 15 * 60 * 1000,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
        }
    }
}

/// What runs a task: the store, the model, who this scheduler is and its clock.
pub struct Runner<'a> {
    /// The store.
    pub store: &'a Store,
    /// The model tasks ask.
    pub model: &'a dyn DreamerModel,
    /// The proxy's calls in flight: the scheduler defers a run while its project calls on
    /// the credential it would use, and each model call of a run waits for them
    /// (an empty [`crate::InFlightCalls`] where no proxy serves, as in `dream`).
    pub calls: &'a dyn InFlight,
    /// This scheduler's name on the leases it takes (unique per process).
    pub owner: &'a str,
    /// The wall clock, unix milliseconds.
    pub clock: &'a dyn Fn() -> i64,
    /// The bounds of each run.
    pub limits: Limits,
    /// What the configuration tells the tasks.
    pub settings: TaskSettings,
    /// Where the memory-changing tasks take their lease when the project's memories live in
    /// a team store (`None`: in the local store, as every other lease).
    pub team: Option<&'a TeamMemories>,
}

impl Runner<'_> {
    /// Runs `task` on `project`, whose folder is `folder` (`None` when unknown), and
    /// records the run. Errors only when the record itself cannot be written.
    pub fn run(
        &self,
        task: Task,
        project: &ProjectId,
        folder: Option<&Path>,
    ) -> Result<DreamerRun> {
        let started_ms = (self.clock)();
        let domain = task.domain(project);
        if task.needs_model() && !self.model.has_model(project) {
            let (outcome, report) = skipped(
                "no model to ask for this project: no session of it has called since the \
                 proxy started, and no historian.endpoint or provider key is set"
                    .to_owned(),
            );
            return self.record(task, project, started_ms, outcome, &report);
        }
        let team = self.team.filter(|_| task.changes_memories());
        let (outcome, report) = match self.take_lease(team, &domain) {
            Ok(LeaseAnswer::Granted) => {
                let report = self.run_holding(task, project, folder, started_ms);
                let released = match team {
                    Some(team) => team.release(&domain).map_err(|error| error.to_string()),
                    None => self
                        .store
                        .write(|tx| tx.release_dreamer_lease(&domain, self.owner))
                        .map_err(|error| error.to_string()),
                };
                if let Err(error) = released {
                    tracing::warn!(%error, domain, "dreamer: the lease could not be released; it lapses on its own");
                }
                report
            }
            Ok(LeaseAnswer::Held) if team.is_some() => skipped(format!(
                "another dreamer of the team holds {domain} in the team store"
            )),
            Ok(LeaseAnswer::Held) => skipped(format!("another dreamer holds {domain}")),
            Ok(LeaseAnswer::Unknown(reason)) => skipped(format!(
                "the team store could not be asked for the lease on {domain}, so the task does \
                 not change the team's memories: {reason}"
            )),
            Err(error) => failed(Failure::new("store", error.to_string())),
        };
        self.record(task, project, started_ms, outcome, &report)
    }

    /// Writes the run's record.
    fn record(
        &self,
        task: Task,
        project: &ProjectId,
        started_ms: i64,
        outcome: RunOutcome,
        report: &TaskReport,
    ) -> Result<DreamerRun> {
        let failure = report.failure.clone();
        let mut run = DreamerRun {
            id: 0,
            task: task.name().to_owned(),
            project: project.clone(),
            started_ms,
            finished_ms: (self.clock)(),
            outcome,
            model: report.model.clone(),
            model_calls: report.calls,
            input_tokens: report.input_tokens,
            output_tokens: report.output_tokens,
            cost_usd: report.cost_usd(),
            changes: report.changes,
            failure_class: failure.as_ref().map(|failure| failure.class.clone()),
            provider_error: failure
                .as_ref()
                .and_then(|failure| failure.provider_error.clone()),
            detail: Some(match &failure {
                Some(failure) if report.detail.is_empty() => failure.detail.clone(),
                Some(failure) => format!("{}; {}", report.detail, failure.detail),
                None => report.detail.clone(),
            }),
        };
        run.id = self.store.write(|tx| tx.record_dreamer_run(&run))?;
        Ok(run)
    }

    /// Takes or renews the lease on `domain`, in `team` when given, else in the store.
    fn take_lease(&self, team: Option<&TeamMemories>, domain: &str) -> Result<LeaseAnswer> {
        let ttl = self.limits.lease_ms;
        if let Some(team) = team {
            return Ok(team.take(domain, ttl));
        }
        let now_ms = (self.clock)();
        let granted = self
            .store
            .write(|tx| tx.take_dreamer_lease(domain, self.owner, now_ms, ttl))?;
        Ok(if granted {
            LeaseAnswer::Granted
        } else {
            LeaseAnswer::Held
        })
    }

    /// The task's run while this scheduler holds the lease.
    fn run_holding(
        &self,
        task: Task,
        project: &ProjectId,
        folder: Option<&Path>,
        started_ms: i64,
    ) -> (RunOutcome, TaskReport) {
        let folder = match folder.filter(|_| task.needs_folder()) {
            None if task.needs_folder() => {
                return skipped("the project's folder is not known".to_owned());
            }
            None => None,
            Some(root) => match ProjectFolder::open(root, self.limits.max_file_bytes) {
                Ok(folder) => Some(folder),
                Err(error) => return skipped(error.to_string()),
            },
        };
        let domain = task.domain(project);
        let team = self.team.filter(|_| task.changes_memories());
        let keep_lease = || match self.take_lease(team, &domain)? {
            LeaseAnswer::Granted => Ok(true),
            LeaseAnswer::Held => Ok(false),
            LeaseAnswer::Unknown(reason) => Err(DreamerError::TeamLease { reason }),
        };
        let ctx = TaskContext {
            store: self.store,
            project,
            folder: folder.as_ref(),
            settings: self.settings,
            model: self.model,
            calls: self.calls,
            clock: self.clock,
            keep_lease: &keep_lease,
            team,
            deadline_ms: started_ms.saturating_add(self.limits.run_ms),
            data_dir: self.store.path().parent().unwrap_or(Path::new(".")),
        };
        let result = match task {
            Task::VerifyMemories => verify_memories(&ctx),
            Task::ConsolidateMemories => consolidate_memories(&ctx),
            Task::ArchiveStaleMemories => archive_stale_memories(&ctx),
            Task::PromoteUserProfile => promote_user_profile(&ctx),
            Task::EvaluateSmartNotes => evaluate_smart_notes(&ctx),
            Task::RewriteVerboseMemories => rewrite_verbose_memories(&ctx),
            Task::MaintainDocs => maintain_docs(&ctx),
            Task::PinKeyFiles => pin_key_files(&ctx),
        };
        match result {
            Ok(report) if report.failure.is_some() => (RunOutcome::Failed, report),
            Ok(report) => (RunOutcome::Done, report),
            Err(error @ DreamerError::Store(_)) => failed(Failure::new("store", error.to_string())),
            Err(error @ (DreamerError::TeamLease { .. } | DreamerError::TeamQueue { .. })) => {
                failed(Failure::new("team_store", error.to_string()))
            }
            Err(error @ DreamerError::Proposal { .. }) => {
                failed(Failure::new("proposal", error.to_string()))
            }
            Err(error) => failed(Failure::new("project_folder", error.to_string())),
        }
    }
}

fn skipped(detail: String) -> (RunOutcome, TaskReport) {
    let report = TaskReport {
        detail,
        ..TaskReport::default()
    };
    (RunOutcome::Skipped, report)
}

fn failed(failure: Failure) -> (RunOutcome, TaskReport) {
    let report = TaskReport {
        failure: Some(failure),
        ..TaskReport::default()
    };
    (RunOutcome::Failed, report)
}
