//! The historian in the background: at most one run per session at a time, started from a
//! request's pass but never awaited by it, and backing off after a failed run.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use mc_core::SessionId;
use mc_store::Store;
use tokio::task::JoinHandle;

use crate::job::next_job;
use crate::publish::{Published, publish};
use crate::run::{HistorianModel, run_job};
use crate::settings::HistorianSettings;

/// The first wait after a failed run; it doubles with each failure in a row.
const FAILURE_BACKOFF_MS: u64 = 60_000;
/// The longest wait after failures.
const MAX_BACKOFF_MS: u64 = 15 * 60_000;

/// Whatever holds the store the historian reads and publishes to.
pub trait StoreAccess: Send + Sync + 'static {
    /// The store.
    fn store(&self) -> &Store;
}

impl StoreAccess for Store {
    fn store(&self) -> &Store {
        self
    }
}

/// Counts tokens the way the session's passes do.
pub type Counter = Arc<dyn Fn(&str) -> u64 + Send + Sync>;
/// The wall clock, unix milliseconds.
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// What a session needs for one run.
pub struct RunRequest<M> {
    /// The session.
    pub session: SessionId,
    /// The models to ask.
    pub model: Arc<M>,
    /// Its settings.
    pub settings: HistorianSettings,
    /// Its latest usage of the usable window, percent.
    pub usage_percent: u64,
    /// The estimated prompt of the call that asks for the run, in tokens.
    pub prompt_tokens: u64,
    /// Its token counter.
    pub count: Counter,
}

/// The background historian over one store.
pub struct Historian<S> {
    host: Arc<S>,
    clock: Clock,
    running: Mutex<HashSet<SessionId>>,
    /// Per session: failures in a row, and when the next run may start.
    backoff: Mutex<HashMap<SessionId, (u32, u64)>>,
    /// Per session: the prompt size at which the latest check found nothing to summarise.
    /// Another check waits until the prompt has grown by a quarter of the trigger since:
    /// reading the session's log for nothing on every call is wasted work beside requests.
    idle: Mutex<HashMap<SessionId, u64>>,
}

impl<S: StoreAccess> Historian<S> {
    /// A historian over `host`'s store.
    pub fn new(host: Arc<S>, clock: Clock) -> Arc<Self> {
        Arc::new(Self {
            host,
            clock,
            running: Mutex::new(HashSet::new()),
            backoff: Mutex::new(HashMap::new()),
            idle: Mutex::new(HashMap::new()),
        })
    }

    /// Starts a run for the request's session in the background, unless one is running or
    /// a recent failure asks to wait; returns at once. The handle resolves to what was
    /// published (`None`: nothing to do, or the store failed).
    pub fn start<M: HistorianModel + 'static>(
        self: &Arc<Self>,
        request: RunRequest<M>,
    ) -> Option<JoinHandle<Option<Published>>> {
        let now = (self.clock)();
        let waiting = self
            .backoff
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&request.session)
            .is_some_and(|&(_, until)| now < until);
        if waiting || self.grew_too_little(&request) {
            return None;
        }
        let guard = RunGuard::take(self, &request.session)?;
        let historian = Arc::clone(self);
        Some(tokio::spawn(async move {
            let published = historian.run(request).await;
            drop(guard);
            published
        }))
    }

    /// Whether the session's prompt grew too little since a check found nothing to do (a
    /// bust that shrank it sets the new baseline).
    fn grew_too_little<M>(&self, request: &RunRequest<M>) -> bool {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(at) = idle.get_mut(&request.session) else {
            return false;
        };
        if request.prompt_tokens < *at {
            *at = request.prompt_tokens;
            return true;
        }
        request.prompt_tokens < at.saturating_add(request.settings.trigger_tokens / 4)
    }

    /// Whether a run of `session` is in flight.
    pub fn is_running(&self, session: &SessionId) -> bool {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(session)
    }

    async fn run<M: HistorianModel + 'static>(
        self: &Arc<Self>,
        request: RunRequest<M>,
    ) -> Option<Published> {
        let RunRequest {
            session,
            model,
            settings,
            usage_percent,
            prompt_tokens,
            count,
        } = request;
        let host = Arc::clone(&self.host);
        let for_job = session.clone();
        let job = tokio::task::spawn_blocking(move || {
            next_job(host.store(), &for_job, &settings, usage_percent, &*count)
        })
        .await;
        let job = match job {
            Ok(Ok(Some(job))) => {
                self.idle
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&session);
                job
            }
            Ok(Ok(None)) => {
                self.idle
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(session, prompt_tokens);
                return None;
            }
            Ok(Err(error)) => {
                tracing::warn!(session = %session, %error, "historian could not read the session");
                return None;
            }
            Err(error) => {
                tracing::warn!(session = %session, %error, "historian task failed");
                return None;
            }
        };
        let started = (self.clock)();
        let report = run_job(&job, &*model, settings.lookahead).await;
        let finished = (self.clock)();
        let host = Arc::clone(&self.host);
        let published = tokio::task::spawn_blocking(move || {
            publish(
                host.store(),
                &job,
                &report,
                i64::try_from(started).unwrap_or(i64::MAX),
                i64::try_from(finished).unwrap_or(i64::MAX),
            )
            .map(|published| (published, report.failure))
        })
        .await;
        match published {
            Ok(Ok((published, failure))) => {
                self.note_outcome(&session, published, finished);
                match published {
                    Published::Failed => tracing::warn!(
                        session = %session,
                        reason = failure.as_deref().unwrap_or(""),
                        "historian run failed; the session goes on unsummarised and it is retried later"
                    ),
                    _ => {
                        tracing::info!(session = %session, outcome = published.as_str(), "historian run")
                    }
                }
                Some(published)
            }
            Ok(Err(error)) => {
                tracing::warn!(session = %session, %error, "historian could not publish");
                None
            }
            Err(error) => {
                tracing::warn!(session = %session, %error, "historian task failed");
                None
            }
        }
    }

    fn note_outcome(&self, session: &SessionId, published: Published, now: u64) {
        let mut backoff = self.backoff.lock().unwrap_or_else(PoisonError::into_inner);
        if published == Published::Failed {
            let failures = backoff.get(session).map_or(0, |&(failures, _)| failures) + 1;
            let wait = FAILURE_BACKOFF_MS
                .saturating_mul(1 << failures.min(10).saturating_sub(1))
                .min(MAX_BACKOFF_MS);
            backoff.insert(session.clone(), (failures, now.saturating_add(wait)));
        } else {
            backoff.remove(session);
        }
    }
}

/// Marks a session's run in flight for as long as it lives, so a run that panics or is
/// cancelled still frees its session.
struct RunGuard<S: StoreAccess> {
    historian: Arc<Historian<S>>,
    session: SessionId,
}

impl<S: StoreAccess> RunGuard<S> {
    fn take(historian: &Arc<Historian<S>>, session: &SessionId) -> Option<Self> {
        let inserted = historian
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(session.clone());
        inserted.then(|| Self {
            historian: Arc::clone(historian),
            session: session.clone(),
        })
    }
}

impl<S: StoreAccess> Drop for RunGuard<S> {
    fn drop(&mut self) {
        self.historian
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.session);
    }
}
