//! What follows a provider's success: the call's messages may be found, and its session
//! summarised.
//!
//! A request's messages are stored before it goes upstream, and anything that reaches the
//! proxy's port can send one. Until a provider answers a call carrying them with a success
//! status, they stay in the raw log, unsearchable, and no historian run starts for the call:
//! a request refused for its credentials (a web page's, a stranger's) leaves nothing that
//! search, the agent's tools or the project's memories would show.

use std::sync::Arc;

use axum::http::HeaderMap;

use crate::app::App;
use crate::historian_start;
use crate::pass_run::Planned;
use crate::provider::Provider;

/// Records that a provider answered `planned` with a success status (its first byte is on
/// its way), then starts the historian for its session when one may start: off the request
/// path, in that order, so the run reads the messages this call carried.
pub fn accepted(app: &App, provider: Provider, headers: &HeaderMap, planned: &Planned) {
    let run = historian_start::ready(app, provider, headers, planned);
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
        if let Some(run) = run {
            run.start();
        }
    });
}
