//! A Responses request as the prefix cache sees it: the tool definitions, the
//! `instructions`, then one segment per input item, each with its template tokens. The
//! hash covers each item's whole JSON, so any change to an item, counted or not, ends the
//! shared prefix there.

use mc_wire::responses::{Content, ContentPart, Input, Item, ResponsesRequest};

use super::{ChatPrompt, ChatSegment, link, seed};
use crate::calibration::Calibration;
use crate::tokens::CountTokens;

/// Splits `request` into its segments, counting with `counter` (raw o200k) corrected by
/// `calibration`.
pub fn linearise_responses(
    request: &ResponsesRequest,
    counter: &dyn CountTokens,
    calibration: Calibration,
) -> ChatPrompt {
    let mut chain = seed(&request.model, request.prompt_cache_key());
    let mut segments = Vec::new();
    let mut push = |chain: &mut [u8; 32], tag: &[u8], text: &str, raw: u64, per_item: u64| {
        *chain = link(chain, tag, text);
        segments.push(ChatSegment {
            tokens: calibration.scale_tokens(raw).saturating_add(per_item),
            prefix: *chain,
        });
    };
    if let Some(tools) = request.tools.as_ref().filter(|tools| !tools.is_empty()) {
        let text = serde_json::to_string(tools).unwrap_or_default();
        push(&mut chain, b"tools", &text, counter.count_tokens(&text), 0);
    }
    if let Some(instructions) = request.instructions() {
        let raw = counter.count_tokens(instructions);
        push(
            &mut chain,
            b"instructions",
            instructions,
            raw,
            calibration.per_message_tokens,
        );
    }
    match &request.input {
        Some(Input::Text(text)) => {
            let raw = counter.count_tokens(text);
            push(
                &mut chain,
                b"text",
                text,
                raw,
                calibration.per_message_tokens,
            );
        }
        Some(Input::Items(items)) => {
            for item in items {
                let text = serde_json::to_string(item).unwrap_or_default();
                let raw = item_tokens(item, &text, counter);
                push(
                    &mut chain,
                    item.type_name().as_bytes(),
                    &text,
                    raw,
                    calibration.per_message_tokens,
                );
            }
        }
        None => {}
    }
    ChatPrompt {
        segments,
        reply_tokens: calibration.per_request_tokens,
    }
}

/// The raw count of what the model reads of `item` (`json` is its encoding): text as text,
/// calls as their name and arguments, anything else (reasoning, opaque items, media) as its
/// JSON.
fn item_tokens(item: &Item, json: &str, counter: &dyn CountTokens) -> u64 {
    match item {
        Item::Message(message) => content_tokens(&message.content, counter),
        Item::FunctionCall(call) => {
            counter.count_tokens(&call.name) + counter.count_tokens(&call.arguments)
        }
        Item::CustomToolCall(call) => {
            counter.count_tokens(&call.name) + counter.count_tokens(&call.input)
        }
        Item::ToolOutput(output) => content_tokens(&output.output, counter),
        Item::Reasoning(_) | Item::Other(_) => counter.count_tokens(json),
    }
}

fn content_tokens(content: &Content, counter: &dyn CountTokens) -> u64 {
    match content {
        Content::Text(text) => counter.count_tokens(text),
        Content::Parts(parts) => parts
            .iter()
            .map(|part| match part {
                ContentPart::Text(part) => counter.count_tokens(&part.text),
                ContentPart::Refusal(part) => counter.count_tokens(&part.refusal),
                ContentPart::Other(raw) => crate::tokens::json_tokens(raw, counter),
            })
            .sum(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::openai_cache::OpenAiCache;

    /// Counts `~` characters, so an item's size is exactly what the test wrote.
    struct Tildes;

    impl CountTokens for Tildes {
        fn count_tokens(&self, text: &str) -> u64 {
            text.matches('~').count() as u64
        }
    }

    fn prompt(body: Value) -> ChatPrompt {
        let request =
            ResponsesRequest::decode(&serde_json::to_vec(&body).unwrap(), 1 << 24).unwrap();
        linearise_responses(&request, &Tildes, Calibration::OPENAI)
    }

    fn user(tokens: usize, tag: &str) -> Value {
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": format!("{tag}{}", "~".repeat(tokens))}]})
    }

    #[test]
    fn segments_are_tools_instructions_then_items() {
        let prompt = prompt(json!({
            "model": "gpt-5",
            "instructions": "~~~",
            "tools": [{"type": "function", "name": "~~", "parameters": {}}],
            "input": [
                {"type": "function_call", "call_id": "c", "name": "~", "arguments": "{\"a\":\"~~\"}"},
                {"type": "function_call_output", "call_id": "c", "output": "~~~~"},
                {"type": "reasoning", "summary": [], "encrypted_content": "~~~~~"}
            ]
        }));
        let tokens: Vec<u64> = prompt.segments.iter().map(|s| s.tokens).collect();
        assert_eq!(tokens, vec![2, 3 + 3, 3 + 3, 4 + 3, 5 + 3]);
        assert_eq!(prompt.prompt_tokens(), 2 + 6 + 6 + 7 + 8 + 3);
    }

    #[test]
    fn a_growing_conversation_hits_the_cache_in_128_token_steps() {
        let mut cache = OpenAiCache::new();
        let first = prompt(
            json!({"model": "gpt-5", "prompt_cache_key": "t", "input": [user(1_500, "a"), user(700, "b")]}),
        );
        assert_eq!(cache.apply(&first, 0), 0, "a cold cache reuses nothing");
        let next = prompt(
            json!({"model": "gpt-5", "prompt_cache_key": "t", "input": [user(1_500, "a"), user(700, "b"), user(300, "c")]}),
        );
        // 1,503 + 703 = 2,206 stored tokens end at the old last item: 17 steps of 128.
        assert_eq!(cache.apply(&next, 1_000), 2_176);
        let other_key = prompt(
            json!({"model": "gpt-5", "prompt_cache_key": "u", "input": [user(1_500, "a"), user(700, "b")]}),
        );
        assert_eq!(
            cache.cached_tokens(&other_key, 2_000),
            0,
            "caches are per prompt_cache_key"
        );
        let small = prompt(json!({"model": "gpt-5", "input": [user(900, "z")]}));
        cache.apply(&small, 3_000);
        assert_eq!(
            cache.cached_tokens(&small, 4_000),
            0,
            "under 1,024 tokens nothing is cached"
        );
    }
}
