//! The judging tool and the reading of its input.
//!
//! The answer is read strictly: one malformed verdict rejects the whole answer, so a
//! confused model changes no memory at all rather than some of them. A candidate the
//! model says nothing about is kept, the safe default for a fact nobody disproved.

use serde::Deserialize;
use serde_json::{Value, json};

/// The tool the verifying model must call.
pub const JUDGE_TOOL: &str = "judge_memories";

/// The model's decision about one memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Still true: nothing changes.
    Keep {
        /// The memory.
        memory_id: u64,
    },
    /// Still worth keeping, with a detail corrected.
    Update {
        /// The memory.
        memory_id: u64,
        /// Its new text.
        content: String,
        /// Why, for the change log.
        reason: String,
    },
    /// No longer true.
    Archive {
        /// The memory.
        memory_id: u64,
        /// Why, for the change log.
        reason: String,
    },
}

impl Verdict {
    /// The memory it is about.
    pub fn memory_id(&self) -> u64 {
        match self {
            Self::Keep { memory_id }
            | Self::Update { memory_id, .. }
            | Self::Archive { memory_id, .. } => *memory_id,
        }
    }
}

/// The judging tool: name, description and input schema.
pub fn judge_tool() -> Value {
    json!({
        "name": JUDGE_TOOL,
        "description": "Record a verdict for each memory: keep, update (with the corrected text) or archive (with a reason).",
        "input_schema": {
            "type": "object",
            "required": ["verdicts"],
            "properties": {
                "verdicts": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["memory_id", "action"],
                        "properties": {
                            "memory_id": {"type": "integer", "minimum": 0},
                            "action": {"enum": ["keep", "update", "archive"]},
                            "content": {"type": "string"},
                            "reason": {"type": "string"}
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
    verdicts: Vec<RawVerdict>,
}

#[derive(Deserialize)]
struct RawVerdict {
    memory_id: u64,
    action: String,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reason: Option<String>,
}

/// Reads the judging tool's input for the memories `asked` about. Every verdict must name
/// one of them, once; an update needs its new text, an archive its reason. Any problem
/// rejects the answer whole, in words that say what was wrong.
pub fn parse_verdicts(input: &Value, asked: &[u64]) -> Result<Vec<Verdict>, String> {
    let raw: RawAnswer = serde_json::from_value(input.clone())
        .map_err(|error| format!("the `{JUDGE_TOOL}` input does not match its schema: {error}"))?;
    let mut verdicts: Vec<Verdict> = Vec::with_capacity(raw.verdicts.len());
    for verdict in raw.verdicts {
        let id = verdict.memory_id;
        if !asked.contains(&id) {
            return Err(format!("memory {id} was not asked about"));
        }
        if verdicts.iter().any(|earlier| earlier.memory_id() == id) {
            return Err(format!("memory {id} has two verdicts"));
        }
        let text = |field: Option<String>, what: &str| {
            field
                .map(|text| text.trim().to_owned())
                .filter(|text| !text.is_empty())
                .ok_or_else(|| format!("the verdict on memory {id} needs a non-empty `{what}`"))
        };
        verdicts.push(match verdict.action.as_str() {
            "keep" => Verdict::Keep { memory_id: id },
            "update" => Verdict::Update {
                memory_id: id,
                content: text(verdict.content, "content")?,
                reason: verdict
                    .reason
                    .map(|reason| reason.trim().to_owned())
                    .filter(|reason| !reason.is_empty())
                    .unwrap_or_else(|| "corrected against the code".to_owned()),
            },
            "archive" => Verdict::Archive {
                memory_id: id,
                reason: text(verdict.reason, "reason")?,
            },
            other => {
                return Err(format!(
                    "the verdict on memory {id} has action `{other}`; use keep, update or archive"
                ));
            }
        });
    }
    Ok(verdicts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_good_answer_reads_into_verdicts() {
        let input = json!({"verdicts": [
            {"memory_id": 1, "action": "keep"},
            {"memory_id": 2, "action": "update", "content": " MAX_RETRIES is 7 ", "reason": "changed"},
            {"memory_id": 3, "action": "archive", "reason": "src/old.rs is gone"}
        ]});
        assert_eq!(
            parse_verdicts(&input, &[1, 2, 3]),
            Ok(vec![
                Verdict::Keep { memory_id: 1 },
                Verdict::Update {
                    memory_id: 2,
                    content: "MAX_RETRIES is 7".into(),
                    reason: "changed".into()
                },
                Verdict::Archive {
                    memory_id: 3,
                    reason: "src/old.rs is gone".into()
                },
            ])
        );
    }

    #[test]
    fn any_bad_verdict_rejects_the_whole_answer() {
        let cases = [
            (json!({"summary": "all fine"}), "does not match its schema"),
            (
                json!({"verdicts": [{"memory_id": 9, "action": "keep"}]}),
                "memory 9 was not asked about",
            ),
            (
                json!({"verdicts": [{"memory_id": 1, "action": "keep"}, {"memory_id": 1, "action": "archive", "reason": "x"}]}),
                "memory 1 has two verdicts",
            ),
            (
                json!({"verdicts": [{"memory_id": 1, "action": "update"}]}),
                "needs a non-empty `content`",
            ),
            (
                json!({"verdicts": [{"memory_id": 1, "action": "archive", "reason": "  "}]}),
                "needs a non-empty `reason`",
            ),
            (
                json!({"verdicts": [{"memory_id": 1, "action": "delete"}]}),
                "action `delete`",
            ),
        ];
        for (input, expected) in cases {
            let error = parse_verdicts(&input, &[1, 2]).unwrap_err();
            assert!(error.contains(expected), "{error} lacks {expected}");
        }
    }

    #[test]
    fn the_tool_names_itself() {
        assert_eq!(judge_tool()["name"], JUDGE_TOOL);
    }
}
