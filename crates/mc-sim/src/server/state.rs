//! The provider's state shared by every connection, and the one path every call takes
//! through it.
//!
//! Calls are serialised: the cache model is a sequence of states, and a real provider's cache
//! also sees one request after another per prefix. The lock is a std mutex taken only inside
//! `spawn_blocking` (token counting is CPU work) and never held across an `.await`.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::response::Response;
use mc_core::Message;
use tokio::sync::watch;
use tokio::task::JoinError;

use super::historian::BackgroundModes;
use super::reply::Reply;
use super::responder::{Planned, Playing};
use crate::clock::Clock;
use crate::{CallRecord, ProviderError, SimProvider, Wire};

/// The provider and the responder, mutated together.
#[derive(Debug)]
pub(crate) struct SimState {
    pub(crate) provider: SimProvider,
    pub(crate) playing: Playing,
    /// How the historian's and the dreamer's calls are answered.
    pub(crate) background: BackgroundModes,
    /// A scripted dreamer's agent-loop steps, answered in order before the honest ones.
    pub(crate) dreamer_steps: std::collections::VecDeque<serde_json::Value>,
    /// Whether a streamed Responses overflow is refused inside the stream.
    pub(crate) overflow_in_stream: bool,
}

/// A priced answer.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) reply: Reply,
    pub(crate) record: CallRecord,
}

impl SimState {
    /// Answers `conversation` with `given`, or else the responder's answer; prices the call
    /// with `price` (given the output tokens, counted as `model` on `wire` would), and only if
    /// the provider accepts it moves the responder on.
    pub(crate) fn answer(
        &mut self,
        conversation: &[Message],
        given: Option<Reply>,
        (model, wire): (&str, Wire),
        price: impl FnOnce(&mut SimProvider, u64) -> Result<CallRecord, ProviderError>,
    ) -> Result<Answer, ProviderError> {
        let planned = match given {
            Some(reply) => Planned::given(reply),
            None => self.playing.plan(conversation),
        };
        let output_tokens = match planned.reply.output_tokens {
            Some(tokens) => tokens,
            None => self
                .provider
                .count_text_for(model, wire, &planned.reply.generated_text())
                .max(1),
        };
        let record = price(&mut self.provider, output_tokens)?;
        self.playing.commit(&planned);
        Ok(Answer {
            reply: planned.reply,
            record,
        })
    }
}

/// What a call's work under the lock decided.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Send this.
    Respond(Response),
    /// Send nothing until the server stops (a stalled historian call); waiting happens after
    /// the lock is released, so other calls go on.
    Stall,
    /// Send this after [`super::historian::SLOW_HISTORIAN`] (a slow historian call); the wait
    /// also happens after the lock is released.
    Later(Response),
}

impl From<Response> for Outcome {
    fn from(response: Response) -> Self {
        Self::Respond(response)
    }
}

/// What every handler holds.
#[derive(Debug, Clone)]
pub(crate) struct App {
    state: Arc<Mutex<SimState>>,
    clock: Arc<dyn Clock>,
    /// Closed when the server stops: what stalled calls wait for.
    stopping: watch::Receiver<()>,
}

impl App {
    pub(crate) fn new(
        state: SimState,
        clock: Arc<dyn Clock>,
        stopping: watch::Receiver<()>,
    ) -> Self {
        Self {
            state: Arc::new(Mutex::new(state)),
            clock,
            stopping,
        }
    }

    /// Waits until the server stops (or is dropped), for a call that must never be answered
    /// in time; a graceful shutdown is not held up by it.
    pub(crate) async fn stall(&self) {
        let mut stopping = self.stopping.clone();
        // Nothing is ever sent: this returns once the sender is gone.
        while stopping.changed().await.is_ok() {}
    }

    /// Runs `work` on a blocking thread with the state locked and the current time.
    pub(crate) async fn run<T, F>(&self, work: F) -> Result<T, JoinError>
    where
        T: Send + 'static,
        F: FnOnce(&mut SimState, u64) -> T + Send + 'static,
    {
        let app = self.clone();
        tokio::task::spawn_blocking(move || {
            let now_ms = app.clock.now_ms();
            work(&mut app.lock(), now_ms)
        })
        .await
    }

    /// The state, locked. A panic in another call cannot leave the state half-written in a
    /// way that matters more than losing the server, so poisoning is ignored.
    pub(crate) fn lock(&self) -> MutexGuard<'_, SimState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The clock the calls are timed by.
    pub(crate) fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }
}
