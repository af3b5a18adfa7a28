//! Refusing a request that would hit a provider-proven limit with nothing left to fold.
//!
//! Sending it would fail upstream after the client waited for the round trip, or worse,
//! succeed with no room for the answer. A refusal is only ever based on a limit the provider
//! proved, never on an advertised window, so a wrong model table cannot block a session.

use serde::Serialize;

use crate::config::{PassConfig, Tokens};

use super::inputs::PassInputs;

/// A request the engine must not send, with a message a provider-shaped error can carry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    /// Usage of the request (the larger of the last response's and this request's estimate).
    pub usage_tokens: Tokens,
    /// The provider-proven window.
    pub limit_tokens: Tokens,
    /// The error text. It starts with "prompt is too long", the phrase clients such as
    /// Claude Code recognise to compact on their side.
    pub message: String,
}

/// The refusal level of the proven window is reached: `usage ≥ refusal_percent × proven`.
/// Without a proven (non-zero) window this is never true.
pub fn at_refusal_level(inputs: &PassInputs, usage: Tokens, pass: &PassConfig) -> bool {
    inputs
        .proven_window
        .filter(|window| window.get() > 0)
        .is_some_and(|window| {
            u128::from(usage.get()) * 100
                >= u128::from(pass.refusal_percent.get()) * u128::from(window.get())
        })
}

/// The refusal for a request at the refusal level with nothing left to fold, else `None`.
pub fn refusal(
    inputs: &PassInputs,
    usage: Tokens,
    pass: &PassConfig,
    nothing_to_fold: bool,
) -> Option<Refusal> {
    let limit = inputs.proven_window?;
    if !nothing_to_fold || !at_refusal_level(inputs, usage, pass) {
        return None;
    }
    let message = format!(
        "prompt is too long: about {} tokens, at or above {} of the {}-token limit the provider \
         enforces for this model, and magic-context has nothing left to drop or fold in this \
         session, so the request was not sent. Compact the conversation or start a new session.",
        usage.get(),
        pass.refusal_percent,
        limit.get()
    );
    Some(Refusal {
        usage_tokens: usage,
        limit_tokens: limit,
        message,
    })
}
