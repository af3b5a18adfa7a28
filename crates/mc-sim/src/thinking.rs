//! Which thinking blocks of earlier assistant turns a Claude model reads, and so bills.
//!
//! Anthropic's extended-thinking documentation (platform.claude.com, "Building with extended
//! thinking", on preserving thinking blocks) sets the default per model family: Opus 4.5 and
//! later Opus models keep every earlier thinking block in context; Opus 4.1 and earlier,
//! Sonnet 4.5 and earlier, and every Haiku up to Haiku 4.5 keep only the last assistant
//! turn's, and drop the rest before the model reads the prompt. The context-editing page says
//! the same of those models' default (as if `clear_thinking_20251015` kept 1 thinking turn),
//! and the context-window page that the dropped blocks are not counted as input. Sonnet 4.6
//! and later keep them all, as do the families that came after these.
//!
//! A dropped block is not part of the prompt at all: it is neither counted nor part of the
//! cached prefix, so the request that first drops it (the next user turn) reads the cache
//! only up to where it was.

use mc_wire::anthropic::{BlockContent, ContentBlock, Message, MessageRole};

use mc_core::models::normalise;

/// Name fragments of the families that keep every earlier turn's thinking, checked before
/// [`DROPS`] so that `opus-4-5` is not taken for `opus-4`.
const KEEPS: &[&str] = &["opus-4-5", "opus-4-6", "opus-4-7", "opus-4-8", "sonnet-4-6"];

/// Name fragments of the families that keep only the last assistant turn's thinking.
const DROPS: &[&str] = &[
    "opus-4",
    "3-opus",
    "sonnet-4",
    "3-7-sonnet",
    "3-5-sonnet",
    "haiku",
];

/// Whether `model` drops the thinking blocks of assistant turns before the last one. An
/// unknown name keeps them: every family released after those listed does.
pub(crate) fn drops_earlier_thinking(model: &str) -> bool {
    let name = normalise(model);
    let has = |fragment: &&str| name.contains(fragment);
    !KEEPS.iter().any(has) && DROPS.iter().any(has)
}

/// Where the last assistant turn starts: just after the last user message that is not only
/// tool results, before the last assistant message. A turn runs through its tool calls and
/// their results, so an agent's tool loop is one turn. With no assistant message, nothing is
/// earlier than it.
pub(crate) fn last_turn_start(messages: &[Message]) -> usize {
    let Some(last_assistant) = messages
        .iter()
        .rposition(|message| message.role == MessageRole::Assistant)
    else {
        return 0;
    };
    messages[..last_assistant]
        .iter()
        .rposition(is_user_turn)
        .map_or(0, |index| index + 1)
}

/// Whether `block` is reasoning (`thinking` or `redacted_thinking`).
pub(crate) fn is_thinking(block: &ContentBlock) -> bool {
    matches!(
        block,
        ContentBlock::Thinking(_) | ContentBlock::RedactedThinking(_)
    )
}

/// A user message that says something, rather than only answering tool calls.
fn is_user_turn(message: &Message) -> bool {
    message.role == MessageRole::User
        && match &message.content {
            BlockContent::Text(_) => true,
            BlockContent::Blocks(blocks) => blocks
                .iter()
                .any(|block| !matches!(block, ContentBlock::ToolResult(_))),
        }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn follows_the_documented_families() {
        let cases = [
            ("claude-opus-4-8", false),
            ("claude-opus-4-6", false),
            ("claude-opus-4-5-20251101", false),
            ("anthropic/claude-opus-4.5", false),
            ("claude-sonnet-4-6", false),
            ("claude-opus-4-1-20250805", true),
            ("claude-opus-4-20250514", true),
            ("claude-sonnet-4-5-20250929", true),
            ("claude-sonnet-4-20250514", true),
            ("claude-3-7-sonnet-20250219", true),
            ("claude-haiku-4-5-20251001", true),
            ("claude-3-5-haiku-20241022", true),
            ("claude-opus-5", false),
            ("some-future-model", false),
        ];
        let found: Vec<(&str, bool)> = cases
            .iter()
            .map(|&(model, _)| (model, drops_earlier_thinking(model)))
            .collect();
        assert_eq!(found, cases);
    }

    #[test]
    fn the_last_turn_runs_through_its_tool_loop() {
        let messages: Vec<Message> = serde_json::from_value(json!([
            {"role": "user", "content": "fix it"},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
            {"role": "user", "content": [{"type": "text", "text": "and the test"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "a", "name": "Bash", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "ok"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "b", "name": "Bash", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "b", "content": "ok"}]},
        ]))
        .unwrap();
        assert_eq!(last_turn_start(&messages), 3);
        // Sent with a new user message, the last assistant turn is the one it answers.
        assert_eq!(last_turn_start(&messages[..3]), 1);
        assert_eq!(last_turn_start(&messages[..2]), 1);
        assert_eq!(last_turn_start(&messages[..1]), 0);
    }
}
