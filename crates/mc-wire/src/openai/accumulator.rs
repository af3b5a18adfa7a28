//! Folds the chunks of a Chat Completions stream into the response a non-streaming call
//! would have returned.
//!
//! The engine records the assistant turn and its usage the same way whether the client
//! streamed or not, so a stream is turned back into a [`ChatResponse`]: content pieces are
//! joined, each tool call's argument fragments are joined under its `index`, the last
//! `finish_reason` and the last `usage` win (some servers report cumulative usage in every
//! chunk). Accumulation never fails: a provider quirk (a missing `index`, a name repeated in
//! every piece) changes nothing the proxy forwards, so it must not stop the bookkeeping.

use serde_json::{Map, Value};

use super::chunk::{ChatChunk, ChunkChoice, ToolCallDelta};
use super::message::{ChatMessage, ChatRole};
use super::part::ChatContent;
use super::response::{ChatChoice, ChatResponse, ChatUsage};
use super::tool_call::ToolCall;

/// Chunk fields copied onto the accumulated response, from the first chunk that has them.
const COPIED_KEYS: [&str; 3] = ["created", "model", "system_fingerprint"];

/// Accumulates one stream; feed it every decoded chunk in order, then [`finish`](Self::finish).
#[derive(Debug, Default)]
pub struct ChunkAccumulator {
    id: Option<String>,
    copied: Map<String, Value>,
    choices: Vec<ChoiceState>,
    usage: Option<ChatUsage>,
    chunks: usize,
}

impl ChunkAccumulator {
    /// An accumulator before the first chunk.
    pub fn new() -> Self {
        Self::default()
    }

    /// Folds one chunk in.
    pub fn push(&mut self, chunk: &ChatChunk) {
        self.chunks += 1;
        if self.id.is_none() {
            self.id.clone_from(&chunk.id);
        }
        for key in COPIED_KEYS {
            if let Some(value) = chunk.rest.get(key).filter(|value| !value.is_null()) {
                self.copied.entry(key).or_insert_with(|| value.clone());
            }
        }
        if let Some(usage) = &chunk.usage {
            self.usage = Some(usage.clone());
        }
        for choice in &chunk.choices {
            self.choice_mut(choice.index.unwrap_or(0)).apply(choice);
        }
    }

    /// How many chunks were folded in.
    pub fn chunks(&self) -> usize {
        self.chunks
    }

    /// The latest usage report, if the stream carried one yet.
    pub fn usage(&self) -> Option<&ChatUsage> {
        self.usage.as_ref()
    }

    /// The response the stream adds up to: `object` is `chat.completion`, choices are in
    /// index order, and each message has `content` only if content arrived.
    pub fn finish(self) -> ChatResponse {
        let mut states = self.choices;
        states.sort_by_key(|state| state.index);
        let choices = states.into_iter().map(ChoiceState::into_choice).collect();
        let mut response = ChatResponse::new(self.id, choices, self.usage);
        response.rest.insert(
            "object".to_owned(),
            Value::String("chat.completion".to_owned()),
        );
        response.rest.extend(self.copied);
        response
    }

    fn choice_mut(&mut self, index: u64) -> &mut ChoiceState {
        let position = match self.choices.iter().position(|state| state.index == index) {
            Some(position) => position,
            None => {
                self.choices.push(ChoiceState::new(index));
                self.choices.len() - 1
            }
        };
        &mut self.choices[position]
    }
}

/// One choice's message so far.
#[derive(Debug)]
struct ChoiceState {
    index: u64,
    role: Option<ChatRole>,
    content: Option<String>,
    reasoning: Option<(&'static str, String)>,
    refusal: Option<String>,
    calls: Vec<CallState>,
    finish_reason: Option<String>,
}

impl ChoiceState {
    fn new(index: u64) -> Self {
        Self {
            index,
            role: None,
            content: None,
            reasoning: None,
            refusal: None,
            calls: Vec::new(),
            finish_reason: None,
        }
    }

    fn apply(&mut self, choice: &ChunkChoice) {
        if let Some(delta) = &choice.delta {
            if self.role.is_none() {
                self.role = delta.role;
            }
            if let Some(text) = &delta.content {
                self.content.get_or_insert_with(String::new).push_str(text);
            }
            if let Some((key, text)) = delta.reasoning() {
                self.reasoning
                    .get_or_insert_with(|| (key, String::new()))
                    .1
                    .push_str(text);
            }
            if let Some(text) = delta.refusal() {
                self.refusal.get_or_insert_with(String::new).push_str(text);
            }
            for call in delta.tool_calls.iter().flatten() {
                self.apply_call(call);
            }
        }
        if choice.finish_reason.is_some() {
            self.finish_reason.clone_from(&choice.finish_reason);
        }
    }

    /// Finds the call a piece continues: by `index`, else by `id`, else the last call; a
    /// piece that matches none starts a new call.
    fn apply_call(&mut self, piece: &ToolCallDelta) {
        let found = match (piece.index, piece.id.as_deref()) {
            (Some(index), _) => self.calls.iter().position(|call| call.index == Some(index)),
            (None, Some(id)) => self.calls.iter().position(|call| call.id == id),
            (None, None) => self.calls.len().checked_sub(1),
        };
        let position = match found {
            Some(position) => position,
            None => {
                self.calls.push(CallState::new(piece.index));
                self.calls.len() - 1
            }
        };
        self.calls[position].apply(piece);
    }

    fn into_choice(self) -> ChatChoice {
        let role = self.role.unwrap_or(ChatRole::Assistant);
        let mut message = ChatMessage::new(role, self.content.map(ChatContent::Text));
        if !self.calls.is_empty() {
            message.tool_calls = Some(self.calls.into_iter().map(CallState::into_call).collect());
        }
        if let Some((key, text)) = self.reasoning {
            message.rest.insert(key.to_owned(), Value::String(text));
        }
        if let Some(refusal) = self.refusal {
            message
                .rest
                .insert("refusal".to_owned(), Value::String(refusal));
        }
        ChatChoice::new(self.index, message, self.finish_reason)
    }
}

/// One tool call so far.
#[derive(Debug)]
struct CallState {
    index: Option<u64>,
    id: String,
    name: String,
    arguments: String,
    kind: Option<Value>,
}

impl CallState {
    fn new(index: Option<u64>) -> Self {
        Self {
            index,
            id: String::new(),
            name: String::new(),
            arguments: String::new(),
            kind: None,
        }
    }

    /// The id, name and type are set by the first piece that has them (some servers repeat
    /// them in every piece); argument fragments are appended.
    fn apply(&mut self, piece: &ToolCallDelta) {
        if let Some(id) = piece.id.as_deref().filter(|_| self.id.is_empty()) {
            self.id = id.to_owned();
        }
        if self.kind.is_none() {
            self.kind = piece
                .rest
                .get("type")
                .filter(|kind| !kind.is_null())
                .cloned();
        }
        let Some(function) = &piece.function else {
            return;
        };
        if let Some(name) = function.name.as_deref().filter(|_| self.name.is_empty()) {
            self.name = name.to_owned();
        }
        if let Some(fragment) = &function.arguments {
            self.arguments.push_str(fragment);
        }
    }

    fn into_call(self) -> ToolCall {
        let mut call = ToolCall::function(self.id, self.name, self.arguments);
        if let Some(kind) = self.kind {
            call.rest.insert("type".to_owned(), kind);
        }
        call
    }
}
