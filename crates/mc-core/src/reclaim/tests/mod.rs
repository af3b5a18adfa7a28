//! Fixtures shared by the lane tests: build a stored session, tag it, plan over it.

mod duplicate;
mod errored;
mod media;
mod plan;
mod props;
mod reasoning;
mod stale;
mod superseded;

use serde_json::{Value, json};

use super::{ReclaimConfig, ReclaimDecision, ReclaimInputs, ReclaimLane, plan_reclaim};
use crate::reduction::DropState;
use crate::tags::{TagAssignment, TagIndex, TagNo, assign_tags};
use crate::{Message, Part, Role};

/// A rough estimate: a token per four characters of text, media by the provider's rule, JSON
/// size for anything else.
pub(super) fn estimate(part: &Part) -> u64 {
    let chars = match part {
        Part::Media { media, source } => {
            let tokens =
                crate::media::inspect_media(*media, source).tokens(&|t: &str| t.len() as u64 / 4);
            return tokens;
        }
        Part::Text { text, .. } => text.len(),
        Part::ToolResult { content, .. } => {
            content.iter().map(|part| estimate(part) as usize * 4).sum()
        }
        other => serde_json::to_string(other).map_or(0, |json| json.len()),
    };
    chars as u64 / 4
}

/// Tags every message in order, as ingest would.
pub(super) fn tag_all(messages: &[(u64, &Message)]) -> TagIndex {
    let mut assignments: Vec<TagAssignment> = Vec::new();
    let mut next = TagNo(1);
    for (ordinal, message) in messages {
        let new = assign_tags(next, *ordinal, message);
        if let Some(last) = new.last() {
            next = TagNo(last.tag.0 + 1);
        }
        assignments.extend(new);
    }
    TagIndex::new(assignments)
}

/// A session under test.
#[derive(Debug)]
pub(super) struct Session {
    pub stored: Vec<Message>,
    pub drops: DropState,
    pub config: ReclaimConfig,
    pub emergency: bool,
}

impl Session {
    pub fn new(stored: Vec<Message>) -> Self {
        Self {
            stored,
            drops: DropState::default(),
            config: ReclaimConfig {
                protected_count: 0,
                ..ReclaimConfig::default()
            },
            emergency: false,
        }
    }

    pub fn with_inputs<T>(&self, run: impl FnOnce(&ReclaimInputs<'_>) -> T) -> T {
        let messages: Vec<(u64, &Message)> = (0..).zip(&self.stored).collect();
        let tags = tag_all(&messages);
        let inputs = ReclaimInputs {
            messages: &messages,
            tags: &tags,
            drops: &self.drops,
            newest_ordinal: messages.len().saturating_sub(1) as u64,
            token_estimate: &estimate,
            emergency: self.emergency,
        };
        run(&inputs)
    }

    pub fn plan(&self) -> Vec<ReclaimDecision> {
        self.with_inputs(|inputs| plan_reclaim(inputs, &self.config))
    }

    /// (tag, lane) pairs, by tag.
    pub fn lanes(&self) -> Vec<(u32, ReclaimLane)> {
        let mut lanes: Vec<(u32, ReclaimLane)> =
            self.plan().iter().map(|d| (d.tag.0, d.lane)).collect();
        lanes.sort();
        lanes
    }
}

pub(super) fn user(text: &str) -> Message {
    Message::new(Role::User, vec![Part::text(text)])
}

pub(super) fn assistant(text: &str) -> Message {
    Message::new(Role::Assistant, vec![Part::text(text)])
}

pub(super) fn call(id: &str, name: &str, input: Value) -> Message {
    Message::new(
        Role::Assistant,
        vec![Part::ToolCall {
            id: id.into(),
            name: name.into(),
            input,
        }],
    )
}

pub(super) fn result(id: &str, text: &str) -> Message {
    result_with(id, text, false)
}

pub(super) fn result_with(id: &str, text: &str, is_error: bool) -> Message {
    Message::new(
        Role::User,
        vec![Part::ToolResult {
            call_id: id.into(),
            content: vec![Part::text(text)],
            is_error,
        }],
    )
}

/// `tokens` tokens of distinct words (by the fixture estimate), seeded so texts differ.
pub(super) fn words(tokens: usize, seed: &str) -> String {
    let mut text = String::new();
    let mut index = 0;
    while text.len() < tokens * 4 {
        text.push_str(&format!("{seed}{index} "));
        index += 1;
    }
    text
}

/// `turns` filler exchanges (one small call and result each).
pub(super) fn turns(turns: usize, prefix: &str) -> Vec<Message> {
    (0..turns)
        .flat_map(|turn| {
            let id = format!("{prefix}{turn}");
            [
                call(&id, "Bash", json!({"command": "true"})),
                result(&id, &format!("ok {id}")),
            ]
        })
        .collect()
}
