//! The conversations `bench memory` sends: generated coding-agent sessions, each turn a
//! tool call and its large output, as Claude Code would send them.
//!
//! The text is generated, not recorded, so the bench needs no data files and any size can
//! be asked for; it is code-like (identifiers, punctuation, numbers) so that tokens per
//! byte are close to a real session's, and every session's text differs from every other's,
//! so nothing one session holds can be shared with another by accident.

use mc_sim::{CountTokens, O200kCounter};
use serde_json::{Value, json};

/// The model the requests name; with the long-context beta its window is 1M tokens, so a
/// 400K-token session is managed (its requests planned and rendered) without being folded.
pub const MODEL: &str = "claude-sonnet-4-5";

/// Words the generated code is made of.
const WORDS: &[&str] = &[
    "parser", "token", "buffer", "session", "request", "render", "cache", "index", "chain",
    "window", "budget", "message", "part", "block", "store", "ledger", "stream", "frame", "header",
    "body", "value", "count", "limit", "offset", "range", "tail", "head", "tag", "drop", "queue",
    "pass", "plan", "fold", "memory", "note", "search", "query", "result", "error", "status",
    "config", "path", "file", "line", "column", "span", "node", "tree", "visit", "expr", "stmt",
    "module", "crate", "trait", "impl", "field", "variant", "scope",
];

/// A small deterministic generator (xorshift64*): the same seed gives the same session.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n.max(1) as u64).unwrap_or(0)
    }

    fn word(&mut self) -> &'static str {
        WORDS
            .get(self.below(WORDS.len()))
            .copied()
            .unwrap_or("value")
    }
}

/// One generated session: its messages as JSON, each already encoded, and its size.
#[derive(Debug)]
pub struct Conversation {
    /// The client's session id (sent as Claude Code's session header).
    pub id: String,
    /// Each message encoded without a cache marker.
    encoded: Vec<String>,
    /// The last message, to be encoded again with the marker Claude Code puts on it.
    last: Value,
    /// o200k tokens of the messages' texts.
    pub tokens: u64,
    turns: u64,
    rng: Rng,
}

impl Conversation {
    /// A session opening with the user's task.
    pub fn new(index: usize, counter: &O200kCounter) -> Self {
        let task = format!(
            "Session {index}: the parser tests fail after the last refactor; find out why and fix it."
        );
        let first = json!({"role": "user", "content": [{"type": "text", "text": task}]});
        let mut conversation = Self {
            id: format!("0b7e5a10-bench-4000-8000-{index:012}"),
            encoded: Vec::new(),
            last: Value::Null,
            tokens: counter.count_tokens(&task),
            turns: 0,
            rng: Rng(0x9E37_79B9_7F4A_7C15 ^ (index as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03)),
        };
        conversation.push(first);
        conversation
    }

    /// Appends one turn: the assistant calls a tool, the user message carries its output
    /// (1 to 24 KB, most of them small, as reads, greps and test runs are).
    pub fn add_turn(&mut self, counter: &O200kCounter) {
        self.turns += 1;
        let id = format!("toolu_bench_{:016x}", self.rng.next());
        let file = format!("src/{}/{}.rs", self.rng.word(), self.rng.word());
        let (name, input) = match self.rng.below(3) {
            0 => ("Read", json!({"file_path": format!("/repo/{file}")})),
            1 => (
                "Bash",
                json!({"command": "cargo test -p parser", "description": "Run the tests"}),
            ),
            _ => (
                "Grep",
                json!({"pattern": self.rng.word(), "path": "/repo/src"}),
            ),
        };
        let say = format!("Turn {}: checking {file}.", self.turns);
        let kilobytes = 1 + self.rng.below(4) * self.rng.below(7);
        let output = self.code(kilobytes * 1024);
        self.tokens += counter.count_tokens(&say)
            + counter.count_tokens(&input.to_string())
            + counter.count_tokens(&output);
        self.push(json!({"role": "assistant", "content": [
            {"type": "text", "text": say},
            {"type": "tool_use", "id": id, "name": name, "input": input},
        ]}));
        self.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": output},
        ]}));
    }

    /// The message list as Claude Code sends it: a cache marker on the last block.
    pub fn messages_json(&self) -> String {
        let mut last = self.last.clone();
        if let Some(block) = last
            .get_mut("content")
            .and_then(Value::as_array_mut)
            .and_then(|blocks| blocks.last_mut())
            .and_then(Value::as_object_mut)
        {
            block.insert("cache_control".to_owned(), json!({"type": "ephemeral"}));
        }
        let mut out = String::from("[");
        for encoded in &self.encoded {
            out.push_str(encoded);
            out.push(',');
        }
        out.push_str(&last.to_string());
        out.push(']');
        out
    }

    fn push(&mut self, message: Value) {
        let previous = std::mem::replace(&mut self.last, message);
        if !previous.is_null() {
            self.encoded.push(previous.to_string());
        }
    }

    /// About `bytes` of code-like lines.
    fn code(&mut self, bytes: usize) -> String {
        let mut out = String::with_capacity(bytes + 80);
        let mut line = 1u32;
        while out.len() < bytes {
            let indent = "    ".repeat(self.rng.below(3));
            let text = match self.rng.below(4) {
                0 => format!(
                    "{line:>4}: {indent}let {}_{} = self.{}({});",
                    self.rng.word(),
                    self.rng.word(),
                    self.rng.word(),
                    self.rng.next() % 10_000
                ),
                1 => format!(
                    "{line:>4}: {indent}fn {}_{}(&mut self, {}: &{}) -> Result<{}> {{",
                    self.rng.word(),
                    self.rng.word(),
                    self.rng.word(),
                    self.rng.word(),
                    self.rng.word()
                ),
                2 => format!(
                    "{line:>4}: {indent}// the {} keeps its {} until the {} ends",
                    self.rng.word(),
                    self.rng.word(),
                    self.rng.word()
                ),
                _ => format!("{line:>4}: {indent}}}"),
            };
            out.push_str(&text);
            out.push('\n');
            line += 1;
        }
        out
    }
}

/// The request body around `messages` (Claude Code's shape: a large system prompt and its
/// tools, both marked for caching, streaming on).
pub fn request_body(messages: &str) -> String {
    format!(
        r#"{{"model":"{MODEL}","max_tokens":32000,"stream":true,"system":{},"tools":{},"messages":{messages}}}"#,
        system_json(),
        tools_json()
    )
}

fn system_json() -> String {
    let prompt = "You are a coding agent working in a Rust repository. Read before you edit, run \
                  the tests after every change, and keep answers short. "
        .repeat(60);
    json!([{"type": "text", "text": prompt, "cache_control": {"type": "ephemeral"}}]).to_string()
}

fn tools_json() -> String {
    let tool = |name: &str, property: &str| {
        json!({
            "name": name,
            "description": format!("{name} a {property} in the repository."),
            "input_schema": {
                "type": "object",
                "properties": {property: {"type": "string"}},
                "required": [property],
            },
        })
    };
    json!([
        tool("Read", "file_path"),
        tool("Bash", "command"),
        tool("Grep", "pattern")
    ])
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_deterministic_distinct_and_well_formed() {
        let counter = O200kCounter::load().unwrap();
        let mut one = Conversation::new(1, &counter);
        let mut again = Conversation::new(1, &counter);
        let mut two = Conversation::new(2, &counter);
        for _ in 0..5 {
            one.add_turn(&counter);
            again.add_turn(&counter);
            two.add_turn(&counter);
        }
        assert_eq!(one.messages_json(), again.messages_json());
        assert_ne!(one.messages_json(), two.messages_json());
        let body: Value = serde_json::from_str(&request_body(&one.messages_json())).unwrap();
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 11);
        assert_eq!(
            messages[10]["content"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert!(messages[9]["content"][1].get("cache_control").is_none());
        assert!(one.tokens > 5 * 100, "{}", one.tokens);
    }
}
