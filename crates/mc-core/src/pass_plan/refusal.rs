//! Refusing a request only when even its minimal rendering cannot fit.
//!
//! Everything short of that is sent, under the window: the engine drops what lanes may drop,
//! shows protected and oversized units as excerpts and clips tool inputs before it gives up
//! (`crate::window_fit`). The minimal rendering is the prompt with all of that applied: the
//! system prompt and tools, the head, the task and an excerpt of everything else. When it is
//! over the limit (the usable window, or a limit the provider proved), sending would fail
//! upstream after the client waited for the round trip, so the request is refused with a
//! message that says what is in the way and what the user can do.

use serde::Serialize;

use crate::config::{PassConfig, Tokens};

use super::inputs::PassInputs;

/// A request the engine must not send, with a message a provider-shaped error can carry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    /// The minimal rendering's size, in the provider's tokens (estimated).
    pub usage_tokens: Tokens,
    /// The limit it is over: the usable window, or the provider-proven window if smaller.
    pub limit_tokens: Tokens,
    /// The error text. It starts with "prompt is too long", the phrase clients such as
    /// Claude Code recognise to compact on their side.
    pub message: String,
}

/// Usage is at the refusal level of a proven window (`usage ≥ refusal_percent × proven`):
/// the next request may overflow, so landing work is an emergency. Never true without a
/// proven (non-zero) window.
pub fn at_refusal_level(inputs: &PassInputs, usage: Tokens, pass: &PassConfig) -> bool {
    inputs
        .proven_window
        .filter(|window| window.get() > 0)
        .is_some_and(|window| {
            u128::from(usage.get()) * 100
                >= u128::from(pass.refusal_percent.get()) * u128::from(window.get())
        })
}

/// The limit no request may exceed: the smaller of the usable window and a proven window.
pub fn prompt_limit(inputs: &PassInputs) -> Option<Tokens> {
    let usable = inputs.usable_window.filter(|window| window.get() > 0);
    let proven = inputs.proven_window.filter(|window| window.get() > 0);
    match (usable, proven) {
        (Some(usable), Some(proven)) => Some(usable.min(proven)),
        (usable, proven) => usable.or(proven),
    }
}

/// The refusal for a request whose minimal rendering exceeds the limit, else `None`. Without
/// a known limit, or without a minimal rendering (`0`: not computed), nothing is refused.
pub fn refusal(inputs: &PassInputs) -> Option<Refusal> {
    let limit = prompt_limit(inputs)?;
    let minimal = inputs.minimal_prompt_tokens;
    if minimal.get() == 0 || minimal <= limit {
        return None;
    }
    let window = match inputs.proven_window.filter(|window| window.get() > 0) {
        Some(proven) => format!(
            "the {} tokens left for the prompt under the {}-token limit the provider proved",
            limit.get(),
            proven.get()
        ),
        None => format!(
            "the {} tokens the model's window leaves for the prompt",
            limit.get()
        ),
    };
    let message = format!(
        "prompt is too long: even with every older part dropped and every recent one cut to an \
         excerpt, this request needs about {} tokens, more than {window} (the system prompt \
         and tools alone take about {} tokens, the summarised history {}). magic-context did \
         not send it. Use a model with a larger context window, turn off tools or MCP servers \
         you do not need, or start a new session.",
        minimal.get(),
        inputs.fixed_tokens.get(),
        inputs.m0_tokens.get() + inputs.m1_tokens.get(),
    );
    Some(Refusal {
        usage_tokens: minimal,
        limit_tokens: limit,
        message,
    })
}
