//! A run's model call, taken in turn with the project's session.
//!
//! The scheduler holds a run back while its project has a call in flight on the credential
//! the run borrows, but a run lasts minutes and the user keeps working: a session call may
//! start at any step of it. So every model call of a run (a batch, an agent-loop step)
//! first waits while such a call is in flight, blocking the run's own thread. The wait is
//! bounded by the time the run (or its loop) has left, so it counts toward the run's
//! wall-clock cap; a session that stays busy until then ends the run as
//! [`SESSION_BUSY`] instead of making it compete for the key's rate limit, and the
//! scheduler tries the project again once its calls end.
//!
//! A session call that starts while the run's own call is in flight is not held: the user
//! never waits for the dreamer.

use std::time::Duration;

use mc_llm::{StructuredAnswer, StructuredRequest};

use crate::batches::TaskContext;
use crate::report::{Failure, TaskReport};

/// The failure class of a run that ended because its project's session kept calling on
/// the credential it would ask on.
pub const SESSION_BUSY: &str = "session_busy";

/// Why a model call was not answered; the report already says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unanswered {
    /// The session kept calling on the same credential until `until_ms`; nothing was asked.
    SessionBusy,
    /// The model failed.
    Failed,
}

impl TaskContext<'_> {
    /// Asks `request` once the project's session has no call in flight on the credential
    /// the model asks on, waiting at most until `until_ms` (unix milliseconds, on the run's
    /// clock). A call made is counted in `report`, answered or not; a failure is noted
    /// there.
    pub(crate) fn ask(
        &self,
        request: &StructuredRequest,
        until_ms: i64,
        report: &mut TaskReport,
    ) -> Result<StructuredAnswer, Unanswered> {
        if let Some(credential) = self.model.credential(self.project) {
            let now_ms = (self.clock)();
            let left_ms = u64::try_from(until_ms.saturating_sub(now_ms)).unwrap_or(0);
            if self.calls.is_calling(self.project, &credential) {
                tracing::debug!(
                    project = %self.project,
                    "dreamer: waiting for the session's call on the same credential to end"
                );
            }
            if !self
                .calls
                .wait_free(self.project, &credential, Duration::from_millis(left_ms))
            {
                report.failure = Some(Failure::new(
                    SESSION_BUSY,
                    format!(
                        "the project's session kept calling on the same credential for the \
                         {} s the run had left; stopped rather than compete with it",
                        left_ms.div_ceil(1000)
                    ),
                ));
                return Err(Unanswered::SessionBusy);
            }
        }
        match self.model.ask(self.project, request) {
            Ok(answer) => {
                report.count_answer(&answer);
                Ok(answer)
            }
            Err(error) => {
                report.count_failure(
                    self.model.first_model(self.project),
                    Failure::of_model(&error),
                );
                Err(Unanswered::Failed)
            }
        }
    }
}
