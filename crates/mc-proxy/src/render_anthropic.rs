//! The upstream Anthropic request for a pass: the client's request with the engine's
//! conversation and the engine's cache breakpoints.
//!
//! Everything the engine does not own goes up as the client sent it (model, `max_tokens`,
//! `thinking`, `metadata`, tools, system, unknown fields, in their order). The client's own
//! `cache_control` markers are all removed and the breakpoint plan's markers placed: the
//! provider allows four, and markers the client put on messages the engine rewrote would
//! point at bytes that no longer exist. A client that used a 1-hour TTL anywhere gets 1-hour
//! markers (the planner keeps that choice).

use std::collections::BTreeMap;
use std::sync::Arc;

use mc_core::breakpoints::BreakpointPlan;
use mc_engine::PassOutcome;
use mc_wire::anthropic::{BlockContent, MessagesRequest};
use serde_json::Value;

use crate::chunked_body::ChunkedBody;
use crate::encoded_head::EncodedHeads;
use crate::encoded_messages::EncodedMessages;
use crate::head_edits::{HeadEdits, marker};

/// How many system blocks the upstream request carries (a bare string is sent as one).
pub fn system_blocks(request: &MessagesRequest) -> usize {
    match &request.system {
        None => 0,
        Some(BlockContent::Text(_)) => 1,
        Some(BlockContent::Blocks(blocks)) => blocks.len(),
    }
}

/// Bytes per token assumed when bounding the answer's room: fewer than any tokenizer gives
/// on prompts (JSON and code run 3.5–4 bytes a token), so the input is over-estimated and the
/// bound errs toward fitting.
const BYTES_PER_TOKEN_FLOOR: u64 = 3;

/// The least answer room a clamp leaves; a request that cannot keep it goes as sent and the
/// provider's answer (an overflow, retried once) decides.
const MIN_ANSWER_TOKENS: u64 = 4_096;

/// The lowered `max_tokens` that makes input + `max_tokens` fit `window`, which Anthropic
/// requires ("input length and `max_tokens` exceed context limit"); `None` when the client's
/// value fits or cannot be lowered. Claude Code asks for up to 64K output tokens whatever the
/// prompt's size, while the engine only keeps 20K of the window free, so near the ceiling the
/// client's own value would be refused. `input_tokens` is an upper bound of the prompt: the
/// encoded body's length over [`BYTES_PER_TOKEN_FLOOR`], or what the provider counted when it
/// refused a larger prompt. `max_tokens` is not part of the cached prefix, so lowering it
/// never busts the cache; it is a pure function of the request, so a retried request is
/// lowered the same way.
pub fn fitted_max_tokens(request: &MessagesRequest, window: u64, input_tokens: u64) -> Option<u64> {
    let asked = request.rest.get("max_tokens").and_then(Value::as_u64)?;
    let room = window.saturating_sub(input_tokens);
    if asked <= room {
        return None;
    }
    let thinking_budget = request
        .rest
        .get("thinking")
        .and_then(|thinking| thinking.get("budget_tokens"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    (room >= MIN_ANSWER_TOKENS && room > thinking_budget).then_some(room)
}

/// An upper bound of a body's tokens from its length.
pub fn input_bound(body_len: usize) -> u64 {
    (body_len as u64).div_ceil(BYTES_PER_TOKEN_FLOOR)
}

/// The upstream request for a pass: the client's request (its messages not used) with the
/// pass's conversation and breakpoints. Messages the session's `previous` request encoded
/// are copied from it where the engine returned the same message ([`EncodedMessages`]), and
/// the rest of the request is encoded once per client head and edits ([`EncodedHeads`]).
/// With the context `window` known, `max_tokens` is lowered where input + `max_tokens` would
/// not fit it ([`fitted_max_tokens`]); `input_hint` is what the provider counted when it
/// refused this request's previous, larger rendering.
pub fn render(
    request: &Arc<MessagesRequest>,
    outcome: &PassOutcome,
    previous: Option<EncodedMessages>,
    heads: &EncodedHeads,
    window: Option<u64>,
    input_hint: Option<u64>,
) -> (ChunkedBody, EncodedMessages) {
    let plan = &outcome.breakpoints;
    let mut edits = HeadEdits {
        system_marker: plan.system.then_some(plan.ttl),
        max_tokens: None,
    };
    let head = heads.encode(request, edits);
    let (body, encoded) = EncodedMessages::write(
        ChunkedBody::from(head.before.clone()),
        ChunkedBody::from(head.after.clone()),
        &outcome.messages,
        &message_marks(plan),
        previous,
    );
    let fitted = window.and_then(|window| {
        let bound = input_bound(body.len());
        let input = input_hint.map_or(bound, |hint| hint.min(bound));
        fitted_max_tokens(request, window, input)
    });
    let Some(max_tokens) = fitted else {
        return (body, encoded);
    };
    // Rare: near the window's end the answer's room is lowered, which changes the head.
    edits.max_tokens = Some(max_tokens);
    let lowered = heads.encode(request, edits);
    let list = head.before.len()..body.len() - head.after.len();
    let mut rebuilt = ChunkedBody::from(lowered.before.clone());
    rebuilt.append(body.slice(list).unwrap_or_default());
    rebuilt.push(lowered.after.clone());
    let shift = lowered.before.len() as isize - head.before.len() as isize;
    (rebuilt.clone(), encoded.moved(rebuilt, shift))
}

/// The plan's message markers: per message index, its marked blocks.
fn message_marks(plan: &BreakpointPlan) -> BTreeMap<usize, Vec<(usize, Value)>> {
    let mut marks: BTreeMap<usize, Vec<(usize, Value)>> = BTreeMap::new();
    for &(slot, ttl) in &plan.slots {
        marks
            .entry(slot.message)
            .or_default()
            .push((slot.part, marker(ttl)));
    }
    marks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::head_edits::edit_head;

    fn request(max_tokens: u64, thinking: Option<u64>) -> MessagesRequest {
        let mut body = serde_json::json!({"model": "claude-opus-4-8", "max_tokens": max_tokens, "messages": []});
        if let Some(budget) = thinking {
            body["thinking"] = serde_json::json!({"type": "enabled", "budget_tokens": budget});
        }
        MessagesRequest::decode(body.to_string().as_bytes(), usize::MAX).unwrap()
    }

    #[test]
    fn max_tokens_shrinks_only_when_input_plus_answer_would_overflow() {
        assert_eq!(
            fitted_max_tokens(&request(32_000, None), 200_000, 150_000),
            None
        );

        let mut near = request(64_000, None);
        let lowered = fitted_max_tokens(&near, 200_000, 178_959);
        assert_eq!(lowered, Some(21_041));
        let edits = HeadEdits {
            system_marker: None,
            max_tokens: lowered,
        };
        edit_head(&mut near, edits);
        let encoded = String::from_utf8(near.encode()).unwrap();
        assert!(
            encoded.starts_with(r#"{"model":"claude-opus-4-8","max_tokens":21041,"#),
            "{encoded}"
        );
    }

    #[test]
    fn no_clamp_below_the_floor_or_the_thinking_budget() {
        assert_eq!(
            fitted_max_tokens(&request(32_000, None), 200_000, 198_000),
            None
        );
        let thinking = request(32_000, Some(16_000));
        assert_eq!(fitted_max_tokens(&thinking, 200_000, 186_000), None);
        assert_eq!(fitted_max_tokens(&thinking, 200_000, 180_000), Some(20_000));
    }
}
