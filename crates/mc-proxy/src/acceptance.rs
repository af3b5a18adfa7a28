//! Recording a provider's success: the messages a call carried may now be found.
//!
//! A request's messages are stored before it goes upstream, and anything that reaches the
//! proxy's port can send one. Until a provider answers a call carrying them with a success
//! status, they stay in the raw log, unsearchable, and the historian does not summarise them
//! (its runs stop at the accepted messages): a request refused for its credentials (a web
//! page's, a stranger's) leaves nothing that search, the agent's tools or the project's
//! memories would show.

use std::sync::Arc;

use crate::app::App;
use crate::planned::Planned;

/// Records, off the request path, that a provider answered `planned` with a success status
/// (its first byte is on its way).
pub fn accepted(app: &App, planned: &Planned) {
    let (Some(session), Some(pass), Ok(store)) = (
        planned.session.clone(),
        planned.pass.as_ref(),
        app.store.get(),
    ) else {
        return;
    };
    let (engine, messages) = (Arc::clone(&store.engine), pass.messages);
    tokio::task::spawn_blocking(move || {
        if let Err(error) = engine
            .store()
            .write(|tx| tx.accept_messages(&session, messages))
        {
            tracing::warn!(%session, %error, "could not record a call's messages as accepted; they stay unsearchable until a later call's are");
        }
    });
}
