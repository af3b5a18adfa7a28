//! Token estimates for the strategies' rules.
//!
//! Counted the way the simulated provider counts a prompt: each wire block (Anthropic) or
//! each wire message (OpenAI) as its canonical JSON, so an estimate here and the provider's
//! figure differ only by the provider's calibration, not by what is counted.

use mc_core::Message;
use mc_wire::anthropic::{self, BlockContent, ContentBlock};
use mc_wire::openai::{self, ChatMessage, ChatRole};

use super::render::{anthropic_tool, openai_tool};
use crate::Wire;
use crate::recording::ToolSpec;
use crate::tokens::CountTokens;

/// The estimated tokens of one message as it goes out on `wire`.
pub fn message_tokens(counter: &dyn CountTokens, wire: Wire, message: &Message) -> u64 {
    match wire {
        Wire::Anthropic => match anthropic::from_message(message).content {
            BlockContent::Blocks(blocks) => {
                blocks.iter().map(|block| json_tokens(counter, block)).sum()
            }
            BlockContent::Text(text) => json_tokens(counter, &text),
        },
        Wire::OpenAi => openai::from_message(message)
            .iter()
            .map(|chat| json_tokens(counter, chat))
            .sum(),
    }
}

/// The estimated tokens of what every request carries before the conversation: the system
/// prompt and the tool definitions.
pub fn fixed_tokens(
    counter: &dyn CountTokens,
    wire: Wire,
    system: &[String],
    tools: &[ToolSpec],
) -> u64 {
    match wire {
        Wire::Anthropic => {
            let system: u64 = system
                .iter()
                .map(|text| json_tokens(counter, &ContentBlock::text(text.clone())))
                .sum();
            let tools: u64 = tools
                .iter()
                .map(|tool| json_tokens(counter, &anthropic_tool(tool)))
                .sum();
            system + tools
        }
        Wire::OpenAi => {
            let system: u64 = system
                .iter()
                .map(|text| {
                    json_tokens(counter, &ChatMessage::text(ChatRole::System, text.clone()))
                })
                .sum();
            let tools: u64 = tools
                .iter()
                .map(|tool| json_tokens(counter, &openai_tool(tool)))
                .sum();
            system + tools
        }
    }
}

/// The estimated tokens of a whole request: system prompt, tools and `messages`.
pub(super) fn request_tokens(
    counter: &dyn CountTokens,
    wire: Wire,
    system: &[String],
    tools: &[ToolSpec],
    messages: &[Message],
) -> u64 {
    fixed_tokens(counter, wire, system, tools)
        + messages
            .iter()
            .map(|message| message_tokens(counter, wire, message))
            .sum::<u64>()
}

/// A wire value's JSON, media counted by the provider's rule as the simulated provider
/// counts it (serialising wire values cannot fail: string keys, finite numbers).
fn json_tokens<T: serde::Serialize>(counter: &dyn CountTokens, value: &T) -> u64 {
    crate::tokens::json_tokens(value, counter)
}

#[cfg(test)]
mod tests {
    use mc_core::{Part, Role};
    use serde_json::json;

    use super::*;
    use crate::strategy::test_support::Chars;

    #[test]
    fn anthropic_counts_each_block_as_json() {
        let message = Message::new(Role::User, vec![Part::text("hi"), Part::text("yo")]);
        let block = r#"{"type":"text","text":"hi"}"#.len() as u64;
        assert_eq!(message_tokens(&Chars, Wire::Anthropic, &message), 2 * block);
    }

    #[test]
    fn an_image_counts_its_pixels_not_its_base64() {
        // A PNG header stating 1280×720, then 40 KB of payload.
        let data = format!(
            "iVBORw0KGgoAAAANSUhEUgAABQAAAALQCAYAAAAAAAAA{}",
            "QUFB".repeat(10_000)
        );
        let image = Part::Media {
            media: mc_core::MediaKind::Image,
            source: json!({"type": "base64", "media_type": "image/png", "data": data}),
        };
        let message = Message::new(Role::User, vec![image]);
        // The block is counted as its label, quoted, plus the rule.
        let label = r#""[image 1280×720 png]""#.len() as u64;
        assert_eq!(
            message_tokens(&Chars, Wire::Anthropic, &message),
            1_229 + label
        );
    }

    #[test]
    fn openai_counts_each_wire_message() {
        let message = Message::new(Role::User, vec![Part::text("hi")]);
        let expected = r#"{"role":"user","content":"hi"}"#.len() as u64;
        assert_eq!(message_tokens(&Chars, Wire::OpenAi, &message), expected);
    }

    #[test]
    fn fixed_counts_system_and_tools() {
        let tools = [ToolSpec {
            name: "t".into(),
            description: "d".into(),
            input_schema: json!({}),
        }];
        let system = ["s".to_owned()];
        let anthropic = r#"{"type":"text","text":"s"}"#.len()
            + r#"{"name":"t","description":"d","input_schema":{}}"#.len();
        assert_eq!(
            fixed_tokens(&Chars, Wire::Anthropic, &system, &tools),
            anthropic as u64
        );
        assert_eq!(fixed_tokens(&Chars, Wire::Anthropic, &[], &[]), 0);
    }
}
