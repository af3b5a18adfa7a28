//! OpenAI's automatic prefix caching, at message granularity.
//!
//! OpenAI caches every prompt of 1,024 tokens or more without being asked, in 128-token
//! steps, and reports the reused part as `usage.prompt_tokens_details.cached_tokens`, billed
//! at the model's cached rate. The simulator sees a request as a sequence of segments (the
//! tool definitions, then one per message), each with its token count and the hash of the
//! prefix that ends with it, like [`crate::linearise`] does for Anthropic. A request reuses
//! the longest stored prefix that ends at a segment boundary, rounded down to a multiple of
//! [`CACHE_STEP_TOKENS`]; a match shorter than [`MIN_CACHED_TOKENS`] reuses nothing. The real
//! cache matches token by token, so a request that shares half of a message with a stored one
//! reuses a little more there than here.
//!
//! Lifetimes: OpenAI says cached prefixes stay 5–10 minutes after their last use, and never
//! more than an hour. The simulator keeps them [`IDLE_TTL_MS`] (10 minutes, the generous end:
//! a replay then shows the most caching a client could hope for) after their last use and at
//! most [`MAX_AGE_MS`] after they were written.
//!
//! The Responses API shares the cache: there the segments are the tools, the instructions
//! and one per input item ([`linearise_responses`]).
//!
//! Caches are separate per model and per `prompt_cache_key` (requests without one share a
//! cache per model), since OpenAI routes on that key.

use std::collections::HashMap;

use mc_wire::openai::{ChatContent, ChatMessage, ChatRequest, ContentPart};

use crate::calibration::Calibration;
use crate::tokens::CountTokens;

/// The shortest reusable prefix.
pub const MIN_CACHED_TOKENS: u64 = mc_core::models::OPENAI_MIN_CACHED_TOKENS;

/// Cached prefixes grow in steps of this many tokens.
pub const CACHE_STEP_TOKENS: u64 = 128;

/// How long a prefix stays after its last use.
pub const IDLE_TTL_MS: u64 = 10 * 60 * 1000;

/// How long a prefix stays after it was written, however often it is used.
pub const MAX_AGE_MS: u64 = 60 * 60 * 1000;

/// One cacheable unit: the tool definitions, or one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatSegment {
    /// Its calibrated token count, template tokens included.
    pub tokens: u64,
    /// The hash chain value of the prefix ending here.
    pub prefix: [u8; 32],
}

/// A chat request as the cache sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatPrompt {
    /// Tool definitions (when present), then every message, in order.
    pub segments: Vec<ChatSegment>,
    /// Template tokens after the last message (the reply's priming); never cached.
    pub reply_tokens: u64,
}

impl ChatPrompt {
    /// The whole prompt, as `usage.prompt_tokens` reports it.
    pub fn prompt_tokens(&self) -> u64 {
        self.segments
            .iter()
            .map(|segment| segment.tokens)
            .sum::<u64>()
            .saturating_add(self.reply_tokens)
    }
}

/// Splits `request` into its segments, counting with `counter` (raw o200k) corrected by
/// `calibration`.
///
/// A message counts as the text the model reads: its content (text parts as text, other parts
/// as their JSON), its tool calls' names and arguments, and its `name`. The hash covers the
/// whole message JSON, so any change to it, counted or not, ends the shared prefix there.
pub fn linearise_chat(
    request: &ChatRequest,
    counter: &dyn CountTokens,
    calibration: Calibration,
) -> ChatPrompt {
    let mut chain = seed(
        &request.model,
        request
            .rest
            .get("prompt_cache_key")
            .and_then(serde_json::Value::as_str),
    );
    let mut segments = Vec::with_capacity(request.messages.len() + 1);
    if let Some(tools) = request.tools.as_ref().filter(|tools| !tools.is_empty()) {
        let text = serde_json::to_string(tools).unwrap_or_default();
        chain = link(&chain, b"tools", &text);
        segments.push(ChatSegment {
            tokens: calibration.scale_tokens(counter.count_tokens(&text)),
            prefix: chain,
        });
    }
    for message in &request.messages {
        let text = serde_json::to_string(message).unwrap_or_default();
        chain = link(&chain, message.role.as_str().as_bytes(), &text);
        let raw = message_tokens(message, counter);
        segments.push(ChatSegment {
            tokens: calibration
                .scale_tokens(raw)
                .saturating_add(calibration.per_message_tokens),
            prefix: chain,
        });
    }
    ChatPrompt {
        segments,
        reply_tokens: calibration.per_request_tokens,
    }
}

/// The raw count of what the model reads of `message`.
fn message_tokens(message: &ChatMessage, counter: &dyn CountTokens) -> u64 {
    let content = match &message.content {
        None => 0,
        Some(ChatContent::Text(text)) => counter.count_tokens(text),
        Some(ChatContent::Parts(parts)) => parts
            .iter()
            .map(|part| match part {
                ContentPart::Text(part) => counter.count_tokens(&part.text),
                other => crate::tokens::json_tokens(other, counter),
            })
            .sum(),
    };
    let calls: u64 = message
        .tool_calls
        .iter()
        .flatten()
        .map(|call| {
            counter.count_tokens(&call.function.name)
                + counter.count_tokens(&call.function.arguments)
        })
        .sum();
    let name = message.name().map_or(0, |name| counter.count_tokens(name));
    content + calls + name
}

/// The chain's start: caches are per model and per `prompt_cache_key`.
fn seed(model: &str, prompt_cache_key: Option<&str>) -> [u8; 32] {
    let mut seed = blake3::Hasher::new();
    seed.update(b"mc-sim openai prefix v1\0");
    seed.update(model.as_bytes());
    seed.update(b"\0");
    if let Some(key) = prompt_cache_key {
        seed.update(b"key\0");
        seed.update(key.as_bytes());
    }
    *seed.finalize().as_bytes()
}

fn link(prev: &[u8; 32], tag: &[u8], text: &str) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new();
    hasher.update(prev);
    // Length-prefixed, so no two segment sequences hash the same bytes.
    hasher.update(&(tag.len() as u64).to_le_bytes());
    hasher.update(tag);
    hasher.update(&(text.len() as u64).to_le_bytes());
    hasher.update(text.as_bytes());
    *hasher.finalize().as_bytes()
}

/// One stored prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    written_at_ms: u64,
    last_used_ms: u64,
}

impl Entry {
    fn is_live(self, now_ms: u64) -> bool {
        now_ms < self.last_used_ms.saturating_add(IDLE_TTL_MS)
            && now_ms < self.written_at_ms.saturating_add(MAX_AGE_MS)
    }
}

/// Every prefix the simulated OpenAI holds, keyed by [`ChatSegment::prefix`] (which already
/// carries the model and `prompt_cache_key`).
#[derive(Debug, Clone, Default)]
pub struct OpenAiCache {
    entries: HashMap<[u8; 32], Entry>,
}

impl OpenAiCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many prefixes are stored, expired or not.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Drops every entry expired at `now_ms`; only bounds memory, never changes a figure.
    pub fn evict_expired(&mut self, now_ms: u64) {
        self.entries.retain(|_, entry| entry.is_live(now_ms));
    }

    /// The `cached_tokens` `prompt` would get at `now_ms`, without changing the cache.
    pub fn cached_tokens(&self, prompt: &ChatPrompt, now_ms: u64) -> u64 {
        let mut end = 0u64;
        let mut matched = 0u64;
        for segment in &prompt.segments {
            end = end.saturating_add(segment.tokens);
            if self
                .entries
                .get(&segment.prefix)
                .is_some_and(|entry| entry.is_live(now_ms))
            {
                matched = end;
            }
        }
        let stepped = matched - matched % CACHE_STEP_TOKENS;
        if stepped < MIN_CACHED_TOKENS {
            0
        } else {
            stepped
        }
    }

    /// Runs `prompt` at `now_ms`: returns its `cached_tokens`, then stores (or refreshes)
    /// every prefix of it long enough to be reused later.
    pub fn apply(&mut self, prompt: &ChatPrompt, now_ms: u64) -> u64 {
        let cached = self.cached_tokens(prompt, now_ms);
        let mut end = 0u64;
        for segment in &prompt.segments {
            end = end.saturating_add(segment.tokens);
            if end < MIN_CACHED_TOKENS {
                continue;
            }
            let fresh = Entry {
                written_at_ms: now_ms,
                last_used_ms: now_ms,
            };
            let entry = self.entries.entry(segment.prefix).or_insert(fresh);
            if entry.is_live(now_ms) {
                entry.last_used_ms = now_ms;
            } else {
                *entry = fresh;
            }
        }
        cached
    }
}

mod responses;

pub use responses::linearise_responses;

#[cfg(test)]
mod tests;
