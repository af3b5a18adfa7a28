//! Queued reduction from outside a pass: `ctx_reduce` and the operator's `reduce` command.
//!
//! Queueing never changes what the provider sees; the drops land on the next pass the bust
//! permission allows (DESIGN §5), so this is safe to call at any time.

use mc_core::SessionId;
use mc_core::reduction::{QueueOutcome, parse_drop_spec, queue_drops};
use mc_core::tags::TagIndex;

use crate::error::{EngineError, Result};
use crate::pass::{Engine, load_drops};
use crate::state::load_state;

impl Engine {
    /// Validates `spec` (`"3-5,12"`) against the session's tags and queues what it may.
    ///
    /// `source` names who asked (`ctx_reduce`, `operator`). Unknown sessions, bad specs and
    /// sessions whose window the host manages (compaction off) are errors; per-tag refusals
    /// come back in the outcome's notes.
    pub fn queue_drops(
        &self,
        session: &SessionId,
        spec: &str,
        source: &str,
        now_ms: i64,
    ) -> Result<QueueOutcome> {
        let spec =
            parse_drop_spec(spec).map_err(|error| EngineError::DropSpec(error.to_string()))?;
        if !self.config().compaction.enabled {
            return Err(EngineError::CompactionOff {
                session: session.clone(),
            });
        }
        self.store().write_with(|tx| {
            if tx.get_session(session)?.is_none() {
                return Err(EngineError::UnknownSession {
                    session: session.clone(),
                });
            }
            let tags = TagIndex::new(tx.tags(session)?);
            let state = load_drops(tx, session)?;
            let boundary = load_state(tx, session)?.map_or(0, |state| state.boundary);
            let outcome = queue_drops(
                &state,
                &spec,
                &tags,
                boundary,
                self.config().reduction.protected_tags,
            );
            for &tag in &outcome.accepted {
                tx.queue_drop(session, tag, source, now_ms)?;
            }
            Ok(outcome)
        })
    }
}
