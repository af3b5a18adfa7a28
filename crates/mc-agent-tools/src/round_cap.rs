//! What the client reads when the round limit ends an answer: a model that still calls our
//! tools after [`MAX_ROUNDS`] rounds has its answer cut there, and without a word the client
//! would get an empty turn that looks like success. The answer keeps the last round's text
//! and gains one short line saying the limit was reached, in the wire's own form (an
//! Anthropic text block, more Chat content, a Responses message item), live or whole.

use mc_wire::anthropic::ContentBlock;
use mc_wire::responses::{Content, ContentPart, Item, MessageItem, MessageRole, TextKind};
use mc_wire::sse::encode_event;
use serde_json::{Value, json};

use crate::round_driver::MAX_ROUNDS;

/// The line itself.
pub fn notice() -> String {
    format!(
        "[Magic Context stopped this answer: the model was still calling its context tools \
         after {MAX_ROUNDS} rounds, the most one answer may run. Ask again to go on.]"
    )
}

/// Logs the cut (the client reads [`notice`]); `wire` names the API for the log.
pub fn warn(rounds: usize, wire: &str) {
    tracing::warn!(
        rounds,
        wire,
        "the model kept calling the context tools past the round limit; the answer ends with a line saying so"
    );
}

/// The notice as an Anthropic content block.
pub fn anthropic_block() -> ContentBlock {
    ContentBlock::text(notice())
}

/// The notice as a live Anthropic block at the client's block `index`: its start, its text
/// and its stop.
pub fn anthropic_events(index: u64) -> String {
    let start = json!({"type": "content_block_start", "index": index,
        "content_block": {"type": "text", "text": ""}});
    let delta = json!({"type": "content_block_delta", "index": index,
        "delta": {"type": "text_delta", "text": notice()}});
    let stop = json!({"type": "content_block_stop", "index": index});
    [
        ("content_block_start", start),
        ("content_block_delta", delta),
        ("content_block_stop", stop),
    ]
    .iter()
    .map(|(name, data)| encode_event(Some(name), &data.to_string()))
    .collect()
}

/// What a Chat answer whose content so far is `before` gains: the notice, on a paragraph of
/// its own after any text.
pub fn chat_suffix(before: &str) -> String {
    if before.is_empty() {
        notice()
    } else {
        format!("\n\n{}", notice())
    }
}

/// The id of the notice's Responses item; a fixed one, so the client's copy sent back is
/// the same on every request.
const ITEM_ID: &str = "msg_magic_context_round_limit";

/// The notice as a completed Responses message item.
pub fn responses_item() -> Item {
    let mut part = ContentPart::text(TextKind::Output, notice());
    if let ContentPart::Text(text) = &mut part {
        text.rest.insert("annotations".to_owned(), json!([]));
    }
    let mut item = MessageItem::new(MessageRole::Assistant, Content::Parts(vec![part]));
    item.rest.insert("id".to_owned(), Value::from(ITEM_ID));
    item.rest
        .insert("status".to_owned(), Value::from("completed"));
    Item::Message(item)
}

/// The events of the notice item streamed at the client's `output_index`, each without its
/// sequence number: the caller numbers them in the stream's sequence.
pub fn responses_events(output_index: u64) -> Vec<Value> {
    let text = notice();
    let opened = json!({"type": "message", "role": "assistant", "content": [],
        "id": ITEM_ID, "status": "in_progress"});
    let done = serde_json::to_value(responses_item()).unwrap_or(Value::Null);
    let part = |text: &str| json!({"type": "output_text", "text": text, "annotations": []});
    let at = |kind: &str, key: &str, value: Value| {
        json!({"type": kind, "item_id": ITEM_ID, "output_index": output_index,
            "content_index": 0, key: value})
    };
    vec![
        json!({"type": "response.output_item.added", "output_index": output_index, "item": opened}),
        at("response.content_part.added", "part", part("")),
        at(
            "response.output_text.delta",
            "delta",
            Value::from(text.as_str()),
        ),
        at(
            "response.output_text.done",
            "text",
            Value::from(text.as_str()),
        ),
        at("response.content_part.done", "part", part(&text)),
        json!({"type": "response.output_item.done", "output_index": output_index, "item": done}),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notice_names_the_limit_and_what_to_do() {
        let line = notice();
        assert!(line.contains(&MAX_ROUNDS.to_string()), "{line}");
        assert!(line.contains("Ask again"), "{line}");
        assert_eq!(chat_suffix(""), line);
        assert_eq!(chat_suffix("Found it."), format!("\n\n{line}"));
    }

    #[test]
    fn the_responses_item_and_its_events_agree() {
        let item = serde_json::to_value(responses_item()).unwrap();
        let events = responses_events(3);
        assert_eq!(events.last().unwrap()["item"], item);
        assert!(events.iter().all(|event| event["output_index"] == 3));
        assert_eq!(events[2]["delta"], notice());
    }

    #[test]
    fn the_anthropic_events_are_one_text_block() {
        let events = anthropic_events(2);
        assert_eq!(events.matches("event: ").count(), 3);
        assert!(events.contains("\"index\":2"));
        assert!(events.contains(&notice()));
    }
}
