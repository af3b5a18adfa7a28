//! What every pass does last, whatever the session's mode: the rendering starts with the
//! head's two messages, and the session's state notes the call, is stored, and the pass is
//! recorded, all in the pass's transaction.

use std::sync::Arc;

use mc_core::pass_plan::PassPlan;
use mc_core::{Message, Part, Role};
use mc_store::{PassRow, WriteTx};

use crate::error::Result;
use crate::pass::PassRequest;
use crate::state::{EngineState, store_state};

/// The head's two messages (m0, the session's history and memory; m1, what changed since),
/// the first of every rendering.
pub(crate) fn head_messages(state: &EngineState) -> Vec<Arc<Message>> {
    vec![
        Arc::new(Message::new(Role::User, vec![Part::text(state.m0.clone())])),
        Arc::new(Message::new(Role::User, vec![Part::text(state.m1.clone())])),
    ]
}

/// Ends pass `seq` of `session`: the state keeps the call's model, prefix and time and is
/// stored, and the pass (its kind, cause and the tokens it removed) is recorded.
pub(crate) fn finish_pass(
    tx: &WriteTx<'_>,
    state: &mut EngineState,
    request: &PassRequest<'_>,
    plan: &PassPlan,
    seq: u64,
    tokens_removed: u64,
) -> Result<()> {
    let session = request.session;
    state.model = Some(request.model.to_owned());
    state.prefix_hash = Some(request.prefix_identity.to_owned());
    state.last_call_ms = Some(request.now_ms);
    store_state(tx, session, state)?;
    tx.record_pass(
        session,
        &PassRow {
            seq,
            at_ms: i64::try_from(request.now_ms).unwrap_or(i64::MAX),
            kind: plan.kind.as_str().to_owned(),
            cause: plan.cause.map(|cause| cause.as_str().to_owned()),
            tokens_removed,
        },
    )?;
    Ok(())
}
