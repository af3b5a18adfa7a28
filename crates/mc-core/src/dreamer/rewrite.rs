//! Memories longer than their budget, as the rewriting model reads them, the tool it answers
//! with, and the strict reading of that answer.
//!
//! Every memory is in every session's `m[0]`, so a wordy one costs its extra tokens on every
//! call of every session. The model is asked for a shorter text that keeps every path, name
//! and value; whether a rewrite really does is checked above this crate before it is written.
//! The format is line-based and read back by [`read_rewrite_message`], which is how the
//! simulator plays the model.

use std::fmt::Write as _;

use serde::Deserialize;
use serde_json::{Value, json};

/// The rewriting model's instructions.
pub const REWRITE_SYSTEM: &str = "\
You keep a coding project's long-term memory terse. Each memory below is longer than the \
budget its message names. For each, write a shorter text that states the same fact within \
the budget: drop filler, repetition and narrative, and keep every file path, code name, \
number and value exactly as written (a rewrite that loses one is not used). Leave out a \
memory you cannot shorten without losing something. Answer only with a call to the \
rewriting tool.";

/// The tool the rewriting model must call.
pub const REWRITE_TOOL: &str = "rewrite_memories";

/// A memory over budget: `(id, category, content)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerboseMemory {
    /// The memory.
    pub memory_id: u64,
    /// Its category.
    pub category: String,
    /// Its text.
    pub content: String,
}

/// The shorter text the model proposes for one memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    /// The memory.
    pub memory_id: u64,
    /// The proposed text, trimmed.
    pub content: String,
}

const OPENING: &str = "Project memories longer than their budget of ";
const OPENING_END: &str = " characters:";

/// One line of text: whitespace collapsed, so a message reads back line by line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The user message of a rewriting call for memories over `budget_chars`.
pub fn rewrite_user_message(budget_chars: u32, memories: &[VerboseMemory]) -> String {
    let mut out = format!("{OPENING}{budget_chars}{OPENING_END}\n");
    for memory in memories {
        let _ = write!(
            out,
            "\nMemory {} [{}]: {}\n",
            memory.memory_id,
            memory.category,
            one_line(&memory.content)
        );
    }
    out
}

/// Reads back the budget and the memories of a message [`rewrite_user_message`] wrote, or
/// `None` when `message` is not one.
pub fn read_rewrite_message(message: &str) -> Option<(u32, Vec<VerboseMemory>)> {
    let mut lines = message.lines();
    let budget = lines
        .next()?
        .strip_prefix(OPENING)?
        .strip_suffix(OPENING_END)?
        .parse()
        .ok()?;
    let mut memories = Vec::new();
    for line in lines.filter(|line| !line.is_empty()) {
        let (id, rest) = line.strip_prefix("Memory ")?.split_once(" [")?;
        let (category, content) = rest.split_once("]: ")?;
        memories.push(VerboseMemory {
            memory_id: id.parse().ok()?,
            category: category.to_owned(),
            content: content.to_owned(),
        });
    }
    Some((budget, memories))
}

/// The rewriting tool: name, description and input schema.
pub fn rewrite_tool() -> Value {
    json!({
        "name": REWRITE_TOOL,
        "description": "Record the shorter text of each memory you can shorten without losing a path, name, number or value. Memories not listed stay as they are.",
        "input_schema": {
            "type": "object",
            "required": ["rewrites"],
            "properties": {
                "rewrites": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["memory_id", "content"],
                        "properties": {
                            "memory_id": {"type": "integer", "minimum": 0},
                            "content": {"type": "string"}
                        }
                    }
                }
            }
        }
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAnswer {
    rewrites: Vec<RawRewrite>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRewrite {
    memory_id: u64,
    content: String,
}

/// Reads the rewriting tool's input for the memories `asked` about: each rewrite must name
/// one of them, once. Any problem rejects the answer whole. An empty text is passed on
/// (trimmed), so the run can say it was refused rather than lose the answer's other rewrites.
pub fn parse_rewrites(input: &Value, asked: &[u64]) -> Result<Vec<Rewrite>, String> {
    let raw: RawAnswer = serde_json::from_value(input.clone()).map_err(|error| {
        format!("the `{REWRITE_TOOL}` input does not match its schema: {error}")
    })?;
    let mut rewrites: Vec<Rewrite> = Vec::with_capacity(raw.rewrites.len());
    for rewrite in raw.rewrites {
        let id = rewrite.memory_id;
        if !asked.contains(&id) {
            return Err(format!("memory {id} was not asked about"));
        }
        if rewrites.iter().any(|earlier| earlier.memory_id == id) {
            return Err(format!("memory {id} has two rewrites"));
        }
        rewrites.push(Rewrite {
            memory_id: id,
            content: rewrite.content.trim().to_owned(),
        });
    }
    Ok(rewrites)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memories() -> Vec<VerboseMemory> {
        vec![
            VerboseMemory {
                memory_id: 3,
                category: "CONFIG_VALUES".into(),
                content: "The retry limit,\n which is MAX_RETRIES = 5, lives in src/net.rs".into(),
            },
            VerboseMemory {
                memory_id: 8,
                category: "PROJECT_RULES".into(),
                content: "Always run the tests.".into(),
            },
        ]
    }

    #[test]
    fn the_message_reads_back_as_written() {
        let message = rewrite_user_message(400, &memories());
        insta::assert_snapshot!(message, @r"
        Project memories longer than their budget of 400 characters:

        Memory 3 [CONFIG_VALUES]: The retry limit, which is MAX_RETRIES = 5, lives in src/net.rs

        Memory 8 [PROJECT_RULES]: Always run the tests.
        ");
        let mut expected = memories();
        expected[0].content =
            "The retry limit, which is MAX_RETRIES = 5, lives in src/net.rs".into();
        assert_eq!(read_rewrite_message(&message), Some((400, expected)));
        assert_eq!(read_rewrite_message("Memories to check"), None);
    }

    #[test]
    fn rewrites_are_read_strictly() {
        let good = json!({"rewrites": [
            {"memory_id": 3, "content": " MAX_RETRIES = 5 in src/net.rs "},
            {"memory_id": 8, "content": ""}
        ]});
        assert_eq!(
            parse_rewrites(&good, &[3, 8]),
            Ok(vec![
                Rewrite {
                    memory_id: 3,
                    content: "MAX_RETRIES = 5 in src/net.rs".into()
                },
                Rewrite {
                    memory_id: 8,
                    content: String::new()
                },
            ])
        );
        for (bad, expected) in [
            (json!({"shorter": []}), "does not match its schema"),
            (
                json!({"rewrites": [{"memory_id": 5, "content": "x"}]}),
                "memory 5 was not asked",
            ),
            (
                json!({"rewrites": [{"memory_id": 3, "content": "x"}, {"memory_id": 3, "content": "y"}]}),
                "memory 3 has two rewrites",
            ),
            (
                json!({"rewrites": [{"memory_id": 3}]}),
                "does not match its schema",
            ),
        ] {
            let error = parse_rewrites(&bad, &[3, 8]).unwrap_err();
            assert!(error.contains(expected), "{error} lacks {expected}");
        }
        assert_eq!(rewrite_tool()["name"], REWRITE_TOOL);
    }
}
