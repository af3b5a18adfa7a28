//! The request as the cache sees it: a flat sequence of blocks in prefix order
//! (tools → system → messages), each with its size, its breakpoint and the hash of the prefix
//! that ends with it.

use std::fmt;

use mc_core::media::without_media;
use mc_wire::anthropic::{BlockContent, ContentBlock, MessageRole, MessagesRequest, Tool};
use serde_json::Value;

use crate::calibration::Calibration;
use crate::thinking::{drops_earlier_thinking, is_thinking, last_turn_start};
use crate::tokens::CountTokens;
use crate::ttl::Ttl;

/// Where a block sits in the request, printed the way the provider names it in errors
/// (`messages.0.content.4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockPath {
    /// `tools.{index}`.
    Tool(usize),
    /// `system` (a string prompt) or `system.{index}`.
    System(Option<usize>),
    /// `messages.{message}.content` (a string content) or `messages.{message}.content.{block}`.
    Message {
        /// The message's index.
        message: usize,
        /// The block's index, `None` for string content.
        block: Option<usize>,
    },
}

impl fmt::Display for BlockPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tool(index) => write!(f, "tools.{index}"),
            Self::System(None) => write!(f, "system"),
            Self::System(Some(index)) => write!(f, "system.{index}"),
            Self::Message {
                message,
                block: None,
            } => write!(f, "messages.{message}.content"),
            Self::Message {
                message,
                block: Some(block),
            } => write!(f, "messages.{message}.content.{block}"),
        }
    }
}

/// One cacheable block.
///
/// `prefix` identifies everything up to and including this block, so a cache entry keyed by it
/// is hit only when the whole prefix is byte-identical (minus `cache_control` markers, which
/// clients move from turn to turn without changing what the model sees).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptBlock {
    /// The block's own token count.
    pub tokens: u64,
    /// The TTL of its `cache_control` marker, when it carries one.
    pub breakpoint: Option<Ttl>,
    /// The hash chain value of the prefix ending here.
    pub prefix: [u8; 32],
    /// Where the block is, for error messages.
    pub path: BlockPath,
}

/// Flattens `req` into its cacheable blocks in prefix order, each sized by `counter` as is.
///
/// The blocks are the prompt the model reads: for the families that drop the thinking of
/// assistant turns before the last one (Sonnet 4.5, Haiku 4.5, Opus 4.1 and earlier), those
/// blocks are left out. The
/// chain is seeded with the model name because caches are per model. A top-level
/// `cache_control` (automatic caching) puts its breakpoint on the last block, as the provider
/// does, unless that block already has one.
pub fn linearise(req: &MessagesRequest, counter: &dyn CountTokens) -> Vec<PromptBlock> {
    linearise_with(req, counter, Calibration::IDENTITY)
}

/// [`linearise`], with each block's count corrected by `calibration`: scaled, and a tool
/// definition given its template tokens. [`Calibration::CLAUDE`] sizes blocks as Claude
/// counts them (see [`crate::calibration`]).
pub fn linearise_with(
    req: &MessagesRequest,
    counter: &dyn CountTokens,
    calibration: Calibration,
) -> Vec<PromptBlock> {
    let mut chain = Chain::new(&req.model, counter, calibration);
    for (index, tool) in req.tools.iter().flatten().enumerate() {
        chain.push_tool(index, tool);
    }
    match &req.system {
        None => {}
        Some(BlockContent::Text(text)) => {
            chain.push_text(Section::System, BlockPath::System(None), text);
        }
        Some(BlockContent::Blocks(blocks)) => {
            for (index, block) in blocks.iter().enumerate() {
                chain.push_block(Section::System, BlockPath::System(Some(index)), block);
            }
        }
    }
    // Thinking the model drops is not part of the prompt: neither counted nor cached.
    let kept_from = if drops_earlier_thinking(&req.model) {
        last_turn_start(&req.messages)
    } else {
        0
    };
    for (message, msg) in req.messages.iter().enumerate() {
        match &msg.content {
            BlockContent::Text(text) => {
                let path = BlockPath::Message {
                    message,
                    block: None,
                };
                chain.push_text(Section::MessageStart(msg.role), path, text);
            }
            BlockContent::Blocks(blocks) => {
                let mut started = false;
                for (block, content) in blocks.iter().enumerate() {
                    if message < kept_from && is_thinking(content) {
                        continue;
                    }
                    let section = if started {
                        Section::MessageContinued(msg.role)
                    } else {
                        Section::MessageStart(msg.role)
                    };
                    started = true;
                    let path = BlockPath::Message {
                        message,
                        block: Some(block),
                    };
                    chain.push_block(section, path, content);
                }
            }
        }
    }
    let mut blocks = chain.blocks;
    if let Some(marker) = req.rest.get("cache_control")
        && let Some(last) = blocks.last_mut()
        && last.breakpoint.is_none()
    {
        last.breakpoint = Some(Ttl::from_cache_control(marker));
    }
    blocks
}

/// What kind of slot a block fills, hashed with it: the same text as a tool, a system block,
/// the first block of a user turn or a continuation of an assistant turn renders differently,
/// so it must not share a prefix.
#[derive(Clone, Copy)]
enum Section {
    Tool,
    System,
    MessageStart(MessageRole),
    MessageContinued(MessageRole),
}

impl Section {
    fn tag(self) -> [u8; 2] {
        let role = |role: MessageRole| match role {
            MessageRole::User => 0,
            MessageRole::Assistant => 1,
            MessageRole::System => 2,
        };
        match self {
            Self::Tool => [0, 0],
            Self::System => [1, 0],
            Self::MessageStart(r) => [2, role(r)],
            Self::MessageContinued(r) => [3, role(r)],
        }
    }
}

/// Builds the blocks and their hash chain.
struct Chain<'a> {
    counter: &'a dyn CountTokens,
    calibration: Calibration,
    prev: [u8; 32],
    blocks: Vec<PromptBlock>,
}

impl<'a> Chain<'a> {
    fn new(model: &str, counter: &'a dyn CountTokens, calibration: Calibration) -> Self {
        let mut seed = blake3::Hasher::new();
        seed.update(b"mc-sim prefix v1\0");
        seed.update(model.as_bytes());
        Self {
            counter,
            calibration,
            prev: *seed.finalize().as_bytes(),
            blocks: Vec::new(),
        }
    }

    fn push_tool(&mut self, index: usize, tool: &Tool) {
        let breakpoint = tool.rest.get("cache_control").map(Ttl::from_cache_control);
        let mut unmarked = tool.clone();
        unmarked.rest.shift_remove("cache_control");
        self.push(
            Section::Tool,
            BlockPath::Tool(index),
            breakpoint,
            &to_json(&unmarked),
        );
    }

    fn push_block(&mut self, section: Section, path: BlockPath, block: &ContentBlock) {
        let breakpoint = block.cache_control().map(Ttl::from_cache_control);
        let mut unmarked = block.clone();
        unmarked.set_cache_control(None);
        let text = to_json(&unmarked);
        // Media is billed by what it shows, not by its base64 (as the provider does): the
        // block is counted with each image or document swapped for its label, plus the
        // media's own tokens by the provider's rule.
        let media = (text.contains("\"image\"") || text.contains("\"document\""))
            .then(|| serde_json::to_value(&unmarked).ok())
            .flatten()
            .and_then(|value| without_media(&value, &|text: &str| self.counter.count_tokens(text)));
        match media {
            Some((stripped, media_tokens)) => {
                let raw = self.counter.count_tokens(&to_json(&stripped));
                self.push_counted(section, path, breakpoint, &text, raw, media_tokens);
            }
            None => self.push(section, path, breakpoint, &text),
        }
    }

    fn push_text(&mut self, section: Section, path: BlockPath, text: &str) {
        self.push(section, path, None, &to_json(&Value::from(text)));
    }

    fn push(&mut self, section: Section, path: BlockPath, breakpoint: Option<Ttl>, text: &str) {
        let raw = self.counter.count_tokens(text);
        self.push_counted(section, path, breakpoint, text, raw, 0);
    }

    /// Pushes a block whose `text` (hashed as is) counts `raw` o200k tokens plus
    /// `media_tokens` already in the provider's tokens.
    fn push_counted(
        &mut self,
        section: Section,
        path: BlockPath,
        breakpoint: Option<Ttl>,
        text: &str,
        raw: u64,
        media_tokens: u64,
    ) {
        let mut hasher = blake3::Hasher::new();
        hasher.update(&self.prev);
        hasher.update(&section.tag());
        // Length-prefixed so two blocks can never concatenate into the same input as others.
        hasher.update(&(text.len() as u64).to_le_bytes());
        hasher.update(text.as_bytes());
        self.prev = *hasher.finalize().as_bytes();
        self.blocks.push(PromptBlock {
            tokens: self
                .calibration
                .block_tokens(raw, matches!(section, Section::Tool))
                .saturating_add(media_tokens),
            breakpoint,
            prefix: self.prev,
            path,
        });
    }
}

/// The canonical JSON text of a wire value. Serialising these types cannot fail (string keys,
/// no non-finite floats survive decoding), so the empty fallback is never taken in practice.
fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// One token per byte, so sizes follow the canonical JSON.
    struct Bytes;

    impl CountTokens for Bytes {
        fn count_tokens(&self, text: &str) -> u64 {
            text.len() as u64
        }
    }

    fn linearised(body: Value) -> Vec<PromptBlock> {
        let bytes = serde_json::to_vec(&body).unwrap();
        let request = MessagesRequest::decode(&bytes, 1 << 20).unwrap();
        linearise(&request, &Bytes)
    }

    #[test]
    fn an_image_costs_its_pixels_not_its_base64() {
        // A PNG header stating 1280×720, then 300 KB of payload.
        let data = format!(
            "iVBORw0KGgoAAAANSUhEUgAABQAAAALQCAYAAAAAAAAA{}",
            "QUFB".repeat(100_000)
        );
        let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}});
        let blocks = linearised(json!({
            "model": "m",
            "messages": [
                {"role": "user", "content": [image.clone(), {"type": "text", "text": "what is this?"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Read", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [image]}]},
            ],
        }));
        // 1280×720 / 750 = 1,229 tokens, plus the block's JSON around its label (one token
        // a byte here): far from the 400,000 bytes of base64.
        let label_block = r#""[image 1280×720 png]""#.len() as u64;
        assert_eq!(blocks[0].tokens, 1_229 + label_block);
        assert!(
            (1_229..2_000).contains(&blocks[3].tokens),
            "{}",
            blocks[3].tokens
        );
    }

    #[test]
    fn orders_tools_system_messages_with_paths_and_markers() {
        let blocks = linearised(json!({
            "model": "m",
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "a"},
                    {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}},
                ]},
            ],
            "system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
            "tools": [{"name": "t", "input_schema": {}, "cache_control": {"type": "ephemeral"}}],
        }));
        let found: Vec<(String, Option<Ttl>, u64)> = blocks
            .iter()
            .map(|block| (block.path.to_string(), block.breakpoint, block.tokens))
            .collect();
        let expected = vec![
            (
                "tools.0".to_owned(),
                Some(Ttl::FiveMinutes),
                r#"{"name":"t","input_schema":{}}"#.len() as u64,
            ),
            (
                "system.0".to_owned(),
                Some(Ttl::OneHour),
                r#"{"type":"text","text":"s"}"#.len() as u64,
            ),
            ("messages.0.content".to_owned(), None, 4),
            ("messages.1.content.0".to_owned(), None, 26),
            (
                "messages.1.content.1".to_owned(),
                Some(Ttl::FiveMinutes),
                26,
            ),
        ];
        assert_eq!(found, expected);
    }

    #[test]
    fn string_system_is_one_block_and_top_level_marker_lands_last() {
        let blocks = linearised(json!({
            "model": "m",
            "cache_control": {"type": "ephemeral"},
            "system": "be brief",
            "messages": [{"role": "user", "content": "hi"}],
        }));
        let found: Vec<(BlockPath, Option<Ttl>)> = blocks
            .iter()
            .map(|block| (block.path, block.breakpoint))
            .collect();
        let last = BlockPath::Message {
            message: 0,
            block: None,
        };
        assert_eq!(
            found,
            vec![
                (BlockPath::System(None), None),
                (last, Some(Ttl::FiveMinutes))
            ]
        );
    }

    #[test]
    fn calibration_scales_blocks_and_adds_tool_templates() {
        let body = json!({
            "model": "m",
            "tools": [{"name": "t", "input_schema": {}}],
            "messages": [{"role": "user", "content": "hi"}],
        });
        let request =
            MessagesRequest::decode(&serde_json::to_vec(&body).unwrap(), 1 << 20).unwrap();
        let calibration = Calibration {
            scale: 2.0,
            per_tool_tokens: 100,
            per_message_tokens: 7,
            per_request_tokens: 7,
        };
        let raw: Vec<u64> = linearise(&request, &Bytes)
            .iter()
            .map(|b| b.tokens)
            .collect();
        let calibrated = linearise_with(&request, &Bytes, calibration);
        let tokens: Vec<u64> = calibrated.iter().map(|b| b.tokens).collect();
        // Tools get their template; message blocks are only scaled (no chat-style overheads).
        assert_eq!(tokens, vec![raw[0] * 2 + 100, raw[1] * 2]);
        // Calibration changes sizes, never which prefixes match.
        let prefixes = |blocks: &[PromptBlock]| blocks.iter().map(|b| b.prefix).collect::<Vec<_>>();
        assert_eq!(
            prefixes(&calibrated),
            prefixes(&linearise(&request, &Bytes))
        );
    }

    #[test]
    fn prefix_depends_on_model_role_and_message_boundaries() {
        let prefix = |model: &str, messages: Value| {
            let blocks = linearised(json!({"model": model, "messages": messages}));
            blocks.last().map(|block| block.prefix)
        };
        let one_turn = json!([{"role": "user", "content": [
            {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]);
        let two_turns = json!([
            {"role": "user", "content": [{"type": "text", "text": "a"}]},
            {"role": "user", "content": [{"type": "text", "text": "b"}]}]);
        let assistant = json!([{"role": "assistant", "content": [
            {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]);
        let base = prefix("m", one_turn.clone());
        assert_ne!(base, prefix("other", one_turn));
        assert_ne!(base, prefix("m", two_turns));
        assert_ne!(base, prefix("m", assistant));
    }

    #[test]
    fn earlier_turns_thinking_is_dropped_only_by_the_families_that_drop_it() {
        let body = |model: &str| {
            json!({
                "model": model,
                "messages": [
                    {"role": "user", "content": "fix it"},
                    {"role": "assistant", "content": [
                        {"type": "thinking", "thinking": "look at a.rs", "signature": "s1"},
                        {"type": "text", "text": "fixed"}]},
                    {"role": "user", "content": "now the test"},
                    {"role": "assistant", "content": [
                        {"type": "redacted_thinking", "data": "xyz"},
                        {"type": "tool_use", "id": "t", "name": "Bash", "input": {}}]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
                ],
            })
        };
        let paths = |model: &str| -> Vec<String> {
            linearised(body(model))
                .iter()
                .map(|block| block.path.to_string())
                .collect()
        };
        // The first turn's thinking goes; the last turn's (its tool loop) stays.
        let dropped = [
            "messages.0.content",
            "messages.1.content.1",
            "messages.2.content",
            "messages.3.content.0",
            "messages.3.content.1",
            "messages.4.content.0",
        ];
        for model in [
            "claude-sonnet-4-5-20250929",
            "claude-haiku-4-5",
            "claude-opus-4-1",
        ] {
            assert_eq!(paths(model), dropped, "{model}");
        }
        let kept = [
            "messages.0.content",
            "messages.1.content.0",
            "messages.1.content.1",
            "messages.2.content",
            "messages.3.content.0",
            "messages.3.content.1",
            "messages.4.content.0",
        ];
        for model in ["claude-opus-4-5", "claude-opus-4-8", "claude-sonnet-4-6"] {
            assert_eq!(paths(model), kept, "{model}");
        }
        // The text left first in the message renders as the message's start, as the model
        // reads it: the same prefix as a message that never had the thinking.
        let with = body("claude-sonnet-4-5");
        let mut without = with.clone();
        without["messages"][1]["content"]
            .as_array_mut()
            .unwrap()
            .remove(0);
        let prefixes = |value: Value| -> Vec<[u8; 32]> {
            linearised(value).iter().map(|block| block.prefix).collect()
        };
        assert_eq!(prefixes(with), prefixes(without));
    }
}
