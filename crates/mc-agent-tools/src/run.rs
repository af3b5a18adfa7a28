//! Running our tools for the model, bound to the session and project of the pass.

use mc_core::{ProjectId, SessionId};
use mc_engine::Engine;
use mc_engine::tools::{ToolAnswer, ToolContext, call_tool};
use serde_json::Value;

/// Runs `calls` (name, arguments) in order, one answer per call. A call that cannot run
/// answers with an error, which the model reads as the tool's result. It reads and writes
/// the store, so it blocks.
pub fn run_calls(
    engine: &Engine,
    project: Option<ProjectId>,
    session: Option<SessionId>,
    calls: Vec<(String, Value)>,
    now_ms: i64,
) -> Vec<ToolAnswer> {
    let ctx = ToolContext {
        engine,
        project,
        session,
        semantic: None,
        now_ms,
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
