//! The scheduler: every task on its cron, over every project that had a session, one
//! run at a time.
//!
//! [`Scheduler::tick`] is synchronous and takes the time as an argument: the async shell
//! ([`crate::service`]) calls it once a minute on a blocking thread, and tests call it on a
//! simulated clock. A due task sweeps the projects the proxy has seen (their folders are
//! recorded when a session arrives), each run under its domain's lease. A rate limit or an
//! overload ends the sweep and retries it after a backoff; the same failure class
//! `stop_after_identical_failures` times in a row stops the task until the process restarts.
//!
//! A project with a call in flight on the credential its run would use is deferred, not
//! dropped: the task stays due for it (the rest of the sweep runs), and the next tick, which
//! the service makes as soon as a call ends, tries it again. A run whose session started
//! calling after it began, and kept calling until the run's time ran out
//! ([`crate::SESSION_BUSY`]), is deferred the same way: it is neither a failure the task
//! backs off from nor one that counts toward stopping it. The sweep's end (clean, or its
//! last failure) is kept across those ticks, so the task's next time and its failure count
//! follow the whole sweep.

use std::collections::HashMap;
use std::path::Path;

use mc_core::ProjectId;
use mc_core::config::DreamerConfig;
use mc_store::{DreamerRun, RunOutcome};

use crate::error::Result;
use crate::model::is_transient;
use crate::model_turn::SESSION_BUSY;
use crate::run::Runner;
use crate::schedule::Schedule;
use crate::task::Task;
use crate::task_clock::{SweepEnd, TaskClock};

/// One scheduled task and its timing.
struct Scheduled {
    task: Task,
    schedule: Schedule,
    clock: TaskClock,
    /// Projects of an interrupted or deferred sweep still to run, in order.
    remaining: Vec<ProjectId>,
    /// How the sweep in progress has gone so far.
    end: SweepEnd,
    /// The last tick left projects of this task waiting for their calls to end.
    deferred: bool,
}

/// The dreamer's schedule of tasks.
pub struct Scheduler {
    tasks: Vec<Scheduled>,
    stop_after: u32,
}

impl Scheduler {
    /// The tasks of `config` that are not off, each first due at its cron's next time
    /// after `now_ms`.
    pub fn new(config: &DreamerConfig, now_ms: i64) -> Result<Self> {
        let mut tasks = Vec::new();
        for task in Task::ALL {
            if let Some(schedule) = Schedule::of(task.name(), task.schedule(&config.schedules))? {
                tasks.push(Scheduled {
                    task,
                    clock: TaskClock::new(schedule.next_after(now_ms)),
                    schedule,
                    remaining: Vec::new(),
                    end: SweepEnd::Clean,
                    deferred: false,
                });
            }
        }
        Ok(Self {
            tasks,
            stop_after: config.stop_after_identical_failures,
        })
    }

    /// The earliest time a task is due, unix milliseconds; `None` when none ever will be.
    pub fn next_due_ms(&self) -> Option<i64> {
        self.tasks.iter().filter_map(|task| task.clock.due_ms).min()
    }

    /// The tasks stopped after identical failures, with the failure class.
    pub fn stopped(&self) -> Vec<(Task, String)> {
        self.tasks
            .iter()
            .filter(|task| task.clock.stopped)
            .map(|task| {
                let class = task
                    .clock
                    .streak
                    .as_ref()
                    .map_or_else(String::new, |(class, _)| class.clone());
                (task.task, class)
            })
            .collect()
    }

    /// Whether a due task holds projects back until a call of theirs ends.
    pub fn has_deferred(&self) -> bool {
        self.tasks.iter().any(|task| task.deferred)
    }

    /// Runs every task due at `now_ms` over the projects in `folders` (each project's last
    /// folder), deferring a project while the runner's calls in flight hold one of its
    /// calls on the credential its run would use; returns the runs, recorded.
    pub fn tick(
        &mut self,
        runner: &Runner<'_>,
        folders: &HashMap<ProjectId, String>,
        now_ms: i64,
    ) -> Result<Vec<DreamerRun>> {
        let mut runs = Vec::new();
        let stop_after = self.stop_after;
        for scheduled in &mut self.tasks {
            if !scheduled.clock.is_due(now_ms) {
                continue;
            }
            if scheduled.remaining.is_empty() {
                let mut projects: Vec<ProjectId> = folders.keys().cloned().collect();
                projects.sort();
                scheduled.remaining = projects;
            }
            let transient = sweep(scheduled, runner, folders, &mut runs)?;
            scheduled.deferred = !transient && !scheduled.remaining.is_empty();
            if scheduled.deferred {
                // The task stays due and its sweep goes on at the next tick.
                continue;
            }
            let end = std::mem::replace(&mut scheduled.end, SweepEnd::Clean);
            let finished_ms = (runner.clock)();
            let next = scheduled.schedule.next_after(finished_ms);
            scheduled.clock = scheduled
                .clock
                .after_sweep(&end, finished_ms, next, stop_after);
            if scheduled.clock.stopped {
                tracing::warn!(
                    task = scheduled.task.name(),
                    failures = stop_after,
                    "dreamer: the task failed the same way repeatedly and stops until restart"
                );
            }
        }
        Ok(runs)
    }
}

/// Runs the task on its remaining projects until they are done or a transient failure
/// ends the sweep early (the failed project stays first in line for the retry); a project
/// whose call competes for the credential, before its run or until the run's time ran
/// out, stays in line, deferred. Returns whether a
/// transient failure ended the sweep.
fn sweep(
    scheduled: &mut Scheduled,
    runner: &Runner<'_>,
    folders: &HashMap<ProjectId, String>,
    runs: &mut Vec<DreamerRun>,
) -> Result<bool> {
    let mut next = 0;
    while let Some(project) = scheduled.remaining.get(next).cloned() {
        if is_competing(runner, &project) {
            tracing::debug!(
                task = scheduled.task.name(),
                project = %project,
                "dreamer: deferred while the project's session is calling on the same credential"
            );
            next += 1;
            continue;
        }
        let folder = folders.get(&project).map(Path::new);
        let run = runner.run(scheduled.task, &project, folder)?;
        let failure = (run.outcome == RunOutcome::Failed)
            .then(|| run.failure_class.clone().unwrap_or_default());
        runs.push(run);
        if failure.as_deref() == Some(SESSION_BUSY) {
            next += 1;
            continue;
        }
        if let Some(class) = failure {
            let transient = is_transient(&class);
            scheduled.end = SweepEnd::Failed { class, transient };
            if transient {
                return Ok(true);
            }
        }
        scheduled.remaining.remove(next);
    }
    Ok(false)
}

/// Whether a run for `project` would compete with one of its calls in flight: its model
/// asks on a credential that call is using.
fn is_competing(runner: &Runner<'_>, project: &ProjectId) -> bool {
    runner
        .model
        .credential(project)
        .is_some_and(|credential| runner.calls.is_calling(project, &credential))
}
