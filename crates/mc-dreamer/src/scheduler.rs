//! The scheduler: every built task on its cron, over every project that had a session, one
//! run at a time.
//!
//! [`Scheduler::tick`] is synchronous and takes the time as an argument: the async shell
//! ([`crate::service`]) calls it once a minute on a blocking thread, and tests call it on a
//! simulated clock. A due task sweeps the projects the proxy has seen (their folders are
//! recorded when a session arrives), each run under its domain's lease. A rate limit or an
//! overload ends the sweep and retries it after a backoff; the same failure class
//! `stop_after_identical_failures` times in a row stops the task until the process restarts.

use std::collections::HashMap;
use std::path::Path;

use mc_core::ProjectId;
use mc_core::config::DreamerConfig;
use mc_store::{DreamerRun, RunOutcome};

use crate::error::Result;
use crate::model::is_transient;
use crate::run::Runner;
use crate::schedule::Schedule;
use crate::task::Task;
use crate::task_clock::{SweepEnd, TaskClock};

/// One scheduled task and its timing.
struct Scheduled {
    task: Task,
    schedule: Schedule,
    clock: TaskClock,
    /// Projects of an interrupted sweep still to run, in order.
    remaining: Vec<ProjectId>,
}

/// The dreamer's schedule of tasks.
pub struct Scheduler {
    tasks: Vec<Scheduled>,
    stop_after: u32,
}

impl Scheduler {
    /// The built tasks of `config` that are not off, each first due at its cron's next time
    /// after `now_ms`.
    pub fn new(config: &DreamerConfig, now_ms: i64) -> Result<Self> {
        let mut tasks = Vec::new();
        for task in Task::BUILT {
            if let Some(schedule) = Schedule::of(task.name(), task.schedule(&config.schedules))? {
                tasks.push(Scheduled {
                    task,
                    clock: TaskClock::new(schedule.next_after(now_ms)),
                    schedule,
                    remaining: Vec::new(),
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

    /// Runs every task due at `now_ms` over the projects in `folders` (each project's last
    /// folder); returns the runs, recorded.
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
            let end = sweep(scheduled, runner, folders, &mut runs)?;
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
/// ends the sweep early (the failed project stays first in line for the retry).
fn sweep(
    scheduled: &mut Scheduled,
    runner: &Runner<'_>,
    folders: &HashMap<ProjectId, String>,
    runs: &mut Vec<DreamerRun>,
) -> Result<SweepEnd> {
    let mut end = SweepEnd::Clean;
    while let Some(project) = scheduled.remaining.first().cloned() {
        let folder = folders.get(&project).map(Path::new);
        let run = runner.run(scheduled.task, &project, folder)?;
        let failure = (run.outcome == RunOutcome::Failed)
            .then(|| run.failure_class.clone().unwrap_or_default());
        runs.push(run);
        if let Some(class) = failure {
            let transient = is_transient(&class);
            end = SweepEnd::Failed { class, transient };
            if transient {
                return Ok(end);
            }
        }
        scheduled.remaining.remove(0);
    }
    Ok(end)
}
