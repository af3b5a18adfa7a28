//! The incremental decode equals a full decode, whatever a client sends next: growing and
//! rewound conversations, moved cache markers, edits, changed system prompts and tools,
//! another conversation in between, odd whitespace and key order, and corrupted bytes;
//! and whatever chunks the body is held in.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::RecentRequests;
use super::tests::{TEST_BUDGET_BYTES, decode_and_remember};
use crate::chunked_body::ChunkedBody;
use bytes::Bytes;

/// How a client writes its JSON: whitespace between tokens, the order of the top-level keys
/// and of a message's keys. A style writes equal values as equal bytes, so follow-ups in
/// one style share their prefix.
#[derive(Debug, Clone, Copy)]
struct Style {
    seed: u64,
    key_rotation: usize,
    content_first: bool,
    spaced: bool,
}

fn arb_style() -> impl Strategy<Value = Style> {
    (0u64..4, 0usize..7, any::<bool>(), any::<bool>()).prop_map(
        |(seed, key_rotation, content_first, spaced)| Style {
            seed,
            key_rotation,
            content_first,
            spaced,
        },
    )
}

/// What the client does before its next request.
#[derive(Debug, Clone)]
enum Step {
    /// New turns.
    Grow(usize),
    /// The cache marker moves to the last message's last block (1-hour TTL or not).
    MoveMarker(bool),
    /// Message `index` (modulo the length) is rewritten.
    Edit(usize, String),
    /// The client goes back `n` messages (keeping at least one).
    Rewind(usize),
    /// Another system prompt version (with a 1-hour marker or not).
    System(u8, bool),
    /// Another tool list version.
    Tools(u8),
    /// Another way of writing the JSON.
    Restyle(Style),
    /// The other conversation sends next.
    Switch,
    /// The next body has byte `at` (modulo the length) replaced, removed or doubled.
    Corrupt(usize, u8, u8),
}

fn arb_text() -> impl Strategy<Value = String> {
    "[a-z \"\\\\\n\u{e9}\u{1f600}]{0,12}"
}

fn arb_step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (1usize..3).prop_map(Step::Grow),
        2 => any::<bool>().prop_map(Step::MoveMarker),
        1 => (any::<usize>(), arb_text()).prop_map(|(index, text)| Step::Edit(index, text)),
        1 => (1usize..4).prop_map(Step::Rewind),
        1 => (0u8..3, any::<bool>()).prop_map(|(version, hour)| Step::System(version, hour)),
        1 => (0u8..3).prop_map(Step::Tools),
        1 => arb_style().prop_map(Step::Restyle),
        1 => Just(Step::Switch),
        1 => (any::<usize>(), 0u8..3, any::<u8>()).prop_map(|(at, how, byte)| Step::Corrupt(at, how, byte)),
    ]
}

/// One conversation's state.
#[derive(Debug, Clone)]
struct Conversation {
    messages: Vec<Value>,
    system: (u8, bool),
    tools: u8,
    style: Style,
    turns: usize,
}

impl Conversation {
    fn new(task: &str, style: Style) -> Self {
        Self {
            messages: vec![json!({"role": "user", "content": task})],
            system: (0, false),
            tools: 0,
            style,
            turns: 0,
        }
    }

    fn grow(&mut self) {
        let n = self.turns;
        self.turns += 1;
        self.messages.push(json!({"role": "assistant", "content": [
            {"type": "text", "text": format!("step {n}")},
            {"type": "tool_use", "id": format!("t{n}"), "name": "Bash", "input": {"command": format!("ls {n}"), "n": n}}]}));
        self.messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": format!("t{n}"), "content": format!("out {n} é")}]}));
    }

    fn move_marker(&mut self, one_hour: bool) {
        for message in &mut self.messages {
            if let Some(Value::Array(blocks)) = message.get_mut("content") {
                blocks.iter_mut().for_each(|block| {
                    block
                        .as_object_mut()
                        .map(|block| block.remove("cache_control"));
                });
            }
        }
        let marker = if one_hour {
            json!({"type": "ephemeral", "ttl": "1h"})
        } else {
            json!({"type": "ephemeral"})
        };
        if let Some(Value::Array(blocks)) =
            self.messages.last_mut().and_then(|m| m.get_mut("content"))
            && let Some(block) = blocks.last_mut()
        {
            block["cache_control"] = marker;
        }
    }

    fn edit(&mut self, index: usize, text: String) {
        let len = self.messages.len();
        let message = &mut self.messages[index % len];
        match message.get_mut("content") {
            Some(Value::Array(blocks)) => blocks.insert(0, json!({"type": "text", "text": text})),
            _ => message["content"] = Value::String(text),
        }
    }

    fn top_level(&self) -> Vec<(&'static str, Value)> {
        let (version, one_hour) = self.system;
        let mut system = json!([{"type": "text", "text": format!("You are careful, v{version}.")}]);
        if one_hour {
            system[0]["cache_control"] = json!({"type": "ephemeral", "ttl": "1h"});
        }
        let system = if version == 2 && !one_hour {
            Value::String("You are terse.".into())
        } else {
            system
        };
        let tools: Vec<Value> = (0..=self.tools)
            .map(|n| {
                let mut tool = json!({"name": format!("Tool{n}"), "description": format!("does {n}"),
                    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}});
                if n == self.tools && n == 2 {
                    tool["cache_control"] = json!({"type": "ephemeral", "ttl": "1h"});
                }
                tool
            })
            .collect();
        vec![
            ("model", json!("claude-sonnet-4-5")),
            ("messages", Value::Array(self.messages.clone())),
            ("system", system),
            ("tools", Value::Array(tools)),
            ("max_tokens", json!(1024)),
            ("temperature", json!(0.7)),
            ("stream", json!(true)),
            ("metadata", json!({"user_id": "u"})),
        ]
    }

    fn body(&self) -> Vec<u8> {
        let mut fields = self.top_level();
        let rotation = self.style.key_rotation % fields.len();
        fields.rotate_left(rotation);
        let mut out = Writer {
            style: self.style,
            out: Vec::new(),
            state: self.style.seed,
        };
        out.push(b"{");
        for (index, (key, value)) in fields.iter().enumerate() {
            if index > 0 {
                out.space();
                out.push(b",");
            }
            out.space();
            out.string(key);
            out.space();
            out.push(b":");
            out.space();
            if let Value::Array(messages) = value
                && *key == "messages"
            {
                out.push(b"[");
                for (index, message) in messages.iter().enumerate() {
                    out.space();
                    if index > 0 {
                        out.push(b",");
                        out.space();
                    }
                    out.message(message);
                }
                out.space();
                out.push(b"]");
            } else {
                out.value(value);
            }
        }
        out.space();
        out.push(b"}");
        out.out
    }
}

/// Writes JSON with whitespace drawn from the style's seed: each message restarts the draw,
/// so an unchanged message is written as the same bytes wherever it is.
struct Writer {
    style: Style,
    out: Vec<u8>,
    state: u64,
}

impl Writer {
    fn push(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    fn space(&mut self) {
        if !self.style.spaced {
            return;
        }
        self.state = self
            .state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let spaces: [&[u8]; 6] = [b"", b"", b" ", b"\n", b"\t ", b"\r\n  "];
        self.push(spaces[(self.state >> 33) as usize % spaces.len()]);
    }

    fn string(&mut self, text: &str) {
        let encoded = serde_json::to_vec(text).unwrap_or_default();
        self.push(&encoded);
    }

    fn message(&mut self, message: &Value) {
        self.state = self.style.seed;
        let mut message = message.as_object().cloned().unwrap_or_default();
        if self.style.content_first
            && let Some(role) = message.shift_remove("role")
        {
            message.insert("role".into(), role);
        }
        self.value(&Value::Object(message));
    }

    fn value(&mut self, value: &Value) {
        match value {
            Value::Object(map) => self.object(map),
            Value::Array(items) => {
                self.push(b"[");
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        self.space();
                        self.push(b",");
                    }
                    self.space();
                    self.value(item);
                }
                self.space();
                self.push(b"]");
            }
            Value::String(text) => self.string(text),
            other => self.push(other.to_string().as_bytes()),
        }
    }

    fn object(&mut self, map: &Map<String, Value>) {
        self.push(b"{");
        for (index, (key, value)) in map.iter().enumerate() {
            if index > 0 {
                self.push(b",");
            }
            self.space();
            self.string(key);
            self.push(b":");
            self.space();
            self.value(value);
        }
        self.space();
        self.push(b"}");
    }
}

fn corrupt(mut body: Vec<u8>, at: usize, how: u8, byte: u8) -> Vec<u8> {
    let at = at % body.len();
    let replacements = [
        b',', b']', b'}', b'"', b' ', b'x', b'1', b'\\', 0xff, b'{', b'[',
    ];
    let byte = if byte < 128 {
        replacements[usize::from(byte) % replacements.len()]
    } else {
        byte
    };
    match how {
        0 => body[at] = byte,
        1 => {
            body.remove(at);
        }
        _ => body.insert(at, byte),
    }
    body
}

/// `body` held as chunks cut at `cuts`.
fn cut(body: Vec<u8>, cuts: &[prop::sample::Index]) -> ChunkedBody {
    let body = Bytes::from(body);
    let mut at: Vec<usize> = cuts.iter().map(|cut| cut.index(body.len() + 1)).collect();
    at.extend([0, body.len()]);
    at.sort_unstable();
    let mut chunked = ChunkedBody::new();
    for pair in at.windows(2) {
        chunked.push(body.slice(pair[0]..pair[1]));
    }
    chunked
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn incremental_decode_equals_a_full_decode(
        styles in (arb_style(), arb_style()),
        steps in proptest::collection::vec(arb_step(), 1..24),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..4),
    ) {
        let recent = RecentRequests::new(TEST_BUDGET_BYTES);
        let mut conversations = [Conversation::new("fix the bug", styles.0), Conversation::new("write docs", styles.1)];
        let mut current = 0;
        for step in steps {
            let mut corruption = None;
            let conversation = &mut conversations[current];
            match step {
                Step::Grow(turns) => (0..turns).for_each(|_| conversation.grow()),
                Step::MoveMarker(one_hour) => conversation.move_marker(one_hour),
                Step::Edit(index, text) => conversation.edit(index, text),
                Step::Rewind(n) => {
                    let keep = conversation.messages.len().saturating_sub(n).max(1);
                    conversation.messages.truncate(keep);
                }
                Step::System(version, one_hour) => conversation.system = (version, one_hour),
                Step::Tools(version) => conversation.tools = version,
                Step::Restyle(style) => conversation.style = style,
                Step::Switch => current = 1 - current,
                Step::Corrupt(at, how, byte) => corruption = Some((at, how, byte)),
            }
            let mut body = conversations[current].body();
            if let Some((at, how, byte)) = corruption {
                body = corrupt(body, at, how, byte);
            }
            decode_and_remember(&recent, &cut(body, &cuts));
        }
    }
}
