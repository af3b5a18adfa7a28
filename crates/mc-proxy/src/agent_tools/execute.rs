//! Running our tools for the model, and keeping what the client will not see.

use std::sync::Arc;

use mc_core::{ProjectId, SessionId};
use mc_engine::Engine;
use mc_engine::tools::{ToolAnswer, ToolContext, call_tool};
use serde_json::Value;

use crate::app::App;
use crate::clock::now_ms;

/// Runs `calls` (id, name, arguments) off the runtime, bound to the pass's session and
/// project; one answer per call, in order. A call that cannot run answers with an error,
/// which the model reads as the tool's result.
pub async fn execute(
    app: &App,
    project: &Option<ProjectId>,
    session: &Option<SessionId>,
    calls: &[(String, String, Value)],
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
        .map(|(_, name, input)| (name.clone(), input.clone()))
        .collect();
    tokio::task::spawn_blocking(move || run_blocking(&engine, project, session, calls))
        .await
        .unwrap_or_else(|error| {
            vec![ToolAnswer::error(format!("the tool stopped unexpectedly: {error}")); count]
        })
}

fn run_blocking(
    engine: &Engine,
    project: Option<ProjectId>,
    session: Option<SessionId>,
    calls: Vec<(String, Value)>,
) -> Vec<ToolAnswer> {
    let ctx = ToolContext {
        engine,
        project,
        session,
        semantic: None,
        now_ms: now_ms(),
    };
    calls
        .into_iter()
        .map(|(name, input)| {
            let answer = call_tool(&ctx, &name, input);
            tracing::debug!(tool = %name, is_error = answer.is_error, "ran an agent tool for the model");
            answer
        })
        .collect()
}

/// A call's JSON arguments as the wire carries them (a string), or the string itself when
/// it is not JSON: the tool then answers what it expected.
pub fn call_arguments(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// An answer as the text of a result on a wire with no error flag on tool results (Chat,
/// Responses): the text says it failed.
pub fn flagged_text(answer: ToolAnswer) -> String {
    if answer.is_error {
        format!("error: {}", answer.text)
    } else {
        answer.text
    }
}

/// Stores a splice before the client gets the answer, so its next request finds it. A
/// failure is logged: the client still gets its answer, and its next request, missing the
/// exchange, forks from the stored history rather than sending calls without results.
///
/// The same transaction deletes the exchanges no request has put back for
/// `tools.hidden_exchange_max_age_days`: storing one is the only thing that grows the
/// table, so the table stays bounded by use without a task of its own.
pub async fn keep<T: serde::Serialize>(app: &App, anchor: String, splice: &T) {
    let Ok(engine) = app.engine() else {
        return;
    };
    let text = match serde_json::to_string(splice) {
        Ok(text) => text,
        Err(error) => {
            tracing::warn!(%error, "could not encode a hidden exchange");
            return;
        }
    };
    let engine = Arc::clone(engine);
    let stored_at = anchor.clone();
    let now_ms = now_ms();
    let cutoff_ms = engine.config().tools.hidden_exchange_cutoff_ms(now_ms);
    let stored = tokio::task::spawn_blocking(move || {
        engine.store().write(|tx| {
            tx.put_hidden_exchange(&anchor, &text, now_ms)?;
            tx.delete_hidden_exchanges_unused_since(cutoff_ms)
        })
    })
    .await;
    // A remembered walk that found nothing at this anchor would now find the exchange.
    app.recent_walks.forget_anchor(&stored_at);
    match stored {
        Ok(Ok(0)) => {}
        Ok(Ok(deleted)) => {
            tracing::debug!(
                deleted,
                "deleted hidden exchanges no request used for their age"
            );
        }
        Ok(Err(_)) | Err(_) => {
            tracing::warn!("could not store a hidden exchange; the next request will fork");
        }
    }
}
