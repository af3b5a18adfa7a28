//! The scheduler inside `serve`: a task that wakes once a minute (cron's resolution) and
//! runs what is due on a blocking thread, off the request path. While a run waits for a
//! project's call to end ([`crate::InFlight`]), the service also wakes when a call ends, so
//! the deferred run follows the call instead of the next minute.
//!
//! Store work and model calls both happen on that blocking thread (the model's async chain
//! is driven on the runtime's handle from there), so no SQLite call runs on a runtime
//! thread and a request never waits for the dreamer. Stopping the service (aborting its
//! handle) leaves a run in flight to finish on its thread; its lease lapses if the process
//! ends first.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mc_core::config::DreamerConfig;
use mc_store::Store;
use tokio::task::JoinHandle;

use crate::in_flight::InFlightCalls;
use crate::model::DreamerModel;
use crate::run::{Limits, Runner};
use crate::scheduler::Scheduler;
use crate::task_settings::TaskSettings;
use crate::team_memories::TeamMemories;

/// How often the service looks for due tasks.
const WAKE_EVERY: Duration = Duration::from_secs(60);

/// Where the service finds the store (the proxy's engine holds it, once it is open).
pub trait StoreHandle: Send + Sync + 'static {
    /// The store, or `None` while it is not open (the tick is skipped).
    fn store(&self) -> Option<&Store>;
}

/// What the service runs with.
pub struct Service {
    /// The store.
    pub store: Arc<dyn StoreHandle>,
    /// The model tasks ask.
    pub model: Arc<dyn DreamerModel>,
    /// The dreamer's settings.
    pub config: DreamerConfig,
    /// This process's name on the leases.
    pub owner: String,
    /// The wall clock, unix milliseconds.
    pub clock: Arc<dyn Fn() -> i64 + Send + Sync>,
    /// The team store holding the memory-changing tasks' leases, when memories live there.
    pub team: Option<TeamMemories>,
    /// The proxy's calls in flight, which a run on the same credential waits for.
    pub calls: Arc<InFlightCalls>,
}

impl Service {
    /// Starts the scheduler on the current runtime; abort the handle to stop it. A schedule
    /// the scheduler cannot read is logged and nothing runs.
    pub fn start(self) -> JoinHandle<()> {
        tokio::spawn(async move {
            let scheduler = match Scheduler::new(&self.config, (self.clock)()) {
                Ok(scheduler) => Arc::new(Mutex::new(scheduler)),
                Err(error) => {
                    tracing::error!(%error, "dreamer: not started");
                    return;
                }
            };
            let this = Arc::new(self);
            loop {
                let deferred = scheduler.lock().is_ok_and(|it| it.has_deferred());
                if deferred {
                    // Either wake is fine: a timeout only means no call ended this minute.
                    let _ = tokio::time::timeout(WAKE_EVERY, this.calls.call_ended()).await;
                } else {
                    tokio::time::sleep(WAKE_EVERY).await;
                }
                let (this, scheduler) = (Arc::clone(&this), Arc::clone(&scheduler));
                let ticked = tokio::task::spawn_blocking(move || this.tick(&scheduler)).await;
                if let Err(error) = ticked {
                    tracing::warn!(%error, "dreamer: a scheduler tick stopped; the next one runs as usual");
                }
            }
        })
    }

    fn tick(&self, scheduler: &Mutex<Scheduler>) {
        let Ok(mut scheduler) = scheduler.lock() else {
            return;
        };
        let now_ms = (self.clock)();
        if scheduler.next_due_ms().is_none_or(|due| due > now_ms) {
            return;
        }
        let Some(store) = self.store.store() else {
            return;
        };
        let folders = match store.read(|tx| tx.project_folders()) {
            Ok(folders) => folders,
            Err(error) => {
                tracing::warn!(%error, "dreamer: cannot list projects; trying again next minute");
                return;
            }
        };
        let clock = || (self.clock)();
        let runner = Runner {
            store,
            model: self.model.as_ref(),
            calls: self.calls.as_ref(),
            owner: &self.owner,
            clock: &clock,
            limits: Limits::default(),
            settings: TaskSettings::of(&self.config),
            team: self.team.as_ref(),
        };
        match scheduler.tick(&runner, &folders, now_ms) {
            Ok(runs) => {
                for run in runs {
                    tracing::info!(
                        task = run.task,
                        project = %run.project,
                        outcome = run.outcome.as_str(),
                        changes = run.changes,
                        calls = run.model_calls,
                        failure = run.failure_class.as_deref().unwrap_or(""),
                        "dreamer: run recorded"
                    );
                }
            }
            Err(error) => tracing::warn!(%error, "dreamer: a run could not be recorded"),
        }
    }
}
