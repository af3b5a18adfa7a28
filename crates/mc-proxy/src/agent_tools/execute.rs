//! Running our tools for the model, and keeping what the client will not see: the store
//! work of [`mc_agent_tools`] moved off the async threads.

use std::sync::Arc;

use mc_agent_tools::hidden_rounds::OurCall;
use mc_agent_tools::keep::keep_exchange;
use mc_agent_tools::run::run_calls;
use mc_core::{ProjectId, SessionId};
use mc_engine::tools::ToolAnswer;
use serde_json::Value;

use crate::app::App;
use crate::clock::now_ms;

/// Runs `calls` off the runtime, bound to the pass's session and project; one answer per
/// call, in order. A call that cannot run answers with an error, which the model reads as
/// the tool's result.
pub async fn execute(
    app: &App,
    project: &Option<ProjectId>,
    session: &Option<SessionId>,
    calls: &[OurCall],
) -> Vec<ToolAnswer> {
    let count = calls.len();
    let engine = match app.engine() {
        Ok(engine) => Arc::clone(engine),
        Err(reason) => {
            let answer = ToolAnswer::error(format!("the context store is unavailable ({reason})"));
            return vec![answer; count];
        }
    };
    let (project, session) = (project.clone(), session.clone());
    let calls: Vec<(String, Value)> = calls
        .iter()
        .map(|call| (call.name.clone(), call.arguments.clone()))
        .collect();
    tokio::task::spawn_blocking(move || run_calls(&engine, project, session, calls, now_ms()))
        .await
        .unwrap_or_else(|error| {
            vec![ToolAnswer::error(format!("the tool stopped unexpectedly: {error}")); count]
        })
}

/// Stores a splice before the client gets the answer, so its next request finds it
/// ([`keep_exchange`]). A failure is logged: the client still gets its answer, and its next
/// request, missing the exchange, forks from the stored history rather than sending calls
/// without results.
pub async fn keep<T: serde::Serialize + Send + 'static>(app: &App, anchor: String, splice: T) {
    let Ok(engine) = app.engine() else {
        return;
    };
    let engine = Arc::clone(engine);
    let stored_at = anchor.clone();
    let stored =
        tokio::task::spawn_blocking(move || keep_exchange(&engine, &anchor, &splice, now_ms()))
            .await;
    // A remembered walk that found nothing at this anchor would now find the exchange.
    app.recent_walks.forget_anchor(&stored_at);
    app.chat_walks.forget_anchor(&stored_at);
    app.responses_walks.forget_anchor(&stored_at);
    match stored {
        Ok(Ok(0)) => {}
        Ok(Ok(deleted)) => {
            tracing::debug!(
                deleted,
                "deleted hidden exchanges no request used for their age"
            );
        }
        Ok(Err(error)) => {
            tracing::warn!(%error, "could not store a hidden exchange; the next request will fork");
        }
        Err(_) => {
            tracing::warn!("could not store a hidden exchange; the next request will fork");
        }
    }
}
