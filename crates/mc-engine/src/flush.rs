//! `flush` from outside a pass: the operator asks that the session's next pass bust and land
//! its queued work, instead of waiting for a pass that busts anyway (DESIGN §5: an operator
//! flush is one of the bust permissions).
//!
//! Only a flag is stored: nothing the provider sees changes until the session's next request,
//! which the client sends when it next calls the model.

use mc_core::SessionId;
use mc_core::reduction::land_drops;
use mc_core::tags::TagIndex;

use crate::error::{EngineError, Result};
use crate::pass::{Engine, load_drops};
use crate::state::{EngineState, load_state, store_state};

impl Engine {
    /// Marks `session` so that its next pass busts and lands what may land; returns how many
    /// queued drops will land then (protected ones keep waiting). A window the provider
    /// proved is forgotten: the operator flushes when something is stuck, and a wrong limit
    /// is one way to be.
    pub fn request_flush(&self, session: &SessionId) -> Result<usize> {
        self.mark(session, |state| {
            state.flush_requested = true;
            state.proven_window = None;
            state.proven_window_ms = None;
        })
    }

    /// Like [`Self::request_flush`], and that bust re-renders `m[0]` (a hard fold): for when
    /// the compartments it was rendered from were replaced (`recomp`), which a soft bust
    /// would not show, since it only renders the compartments past `m[0]` into `m[1]`.
    pub fn request_head_rebuild(&self, session: &SessionId) -> Result<usize> {
        self.mark(session, |state| {
            state.flush_requested = true;
            state.head_rebuild_requested = true;
        })
    }

    /// Applies `change` to the session's stored state; returns the drops that will land.
    fn mark(&self, session: &SessionId, change: impl FnOnce(&mut EngineState)) -> Result<usize> {
        self.store().write_with(|tx| {
            if tx.get_session(session)?.is_none() {
                return Err(EngineError::UnknownSession {
                    session: session.clone(),
                });
            }
            let mut state = load_state(tx, session)?.unwrap_or_default();
            change(&mut state);
            store_state(tx, session, &state)?;
            let tags = TagIndex::new(tx.tags(session)?);
            let drops = load_drops(tx, session)?;
            Ok(land_drops(&drops, &tags, self.config().reduction.protected_tags).len())
        })
    }
}
