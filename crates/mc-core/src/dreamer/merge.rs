//! Groups of memories that may say one thing twice, as the consolidating model reads them,
//! the tool it answers with, and the strict reading of that answer.
//!
//! The groups come from word overlap ([`super::word_set`]): memories that share most of
//! their content words. Sharing words is not meaning the same thing ("MAX_RETRIES is 5" and
//! "MAX_RETRIES is 7" share most), so the model decides which to merge, into which text; a
//! group it says nothing about stays as it is.

use std::fmt::Write as _;

use serde::Deserialize;
use serde_json::{Value, json};

/// The consolidating model's instructions.
pub const MERGE_SYSTEM: &str = "\
You keep a coding project's long-term memory free of repetition. Each group below holds \
memories that share most of their words and may state the same fact. Merge the memories of \
a group only when they say the same thing (the same rule, the same value, the same name): \
name the one to keep and write one text that says everything the merged ones said, no \
longer than it needs to be. Memories that differ in a value, a name or a scope are \
different facts: leave them apart by not listing them. Answer only with a call to the \
merging tool.";

/// The tool the consolidating model must call.
pub const MERGE_TOOL: &str = "merge_memories";

/// Memories that may say the same thing: `(id, category, content)`, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeGroup {
    /// The memories.
    pub memories: Vec<(u64, String, String)>,
}

/// One merge the model decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merge {
    /// The memory that stays, with the merged text.
    pub keep: u64,
    /// The memories it replaces.
    pub others: Vec<u64>,
    /// The merged text.
    pub content: String,
}

const OPENING: &str = "Groups of project memories that share most of their words:";

/// The user message of a consolidating call.
pub fn merge_user_message(groups: &[MergeGroup]) -> String {
    let mut out = String::from(OPENING);
    out.push('\n');
    for (index, group) in groups.iter().enumerate() {
        let _ = write!(out, "\nGroup {}:\n", index + 1);
        for (id, category, content) in &group.memories {
            let content = content.split_whitespace().collect::<Vec<_>>().join(" ");
            let _ = writeln!(out, "- Memory {id} [{category}]: {content}");
        }
    }
    out
}

/// Reads back the groups of a message [`merge_user_message`] wrote, or `None` when
/// `message` is not one.
pub fn read_merge_message(message: &str) -> Option<Vec<MergeGroup>> {
    let mut lines = message.lines();
    if lines.next()? != OPENING {
        return None;
    }
    let mut groups: Vec<MergeGroup> = Vec::new();
    for line in lines.filter(|line| !line.is_empty()) {
        if line.starts_with("Group ") {
            groups.push(MergeGroup {
                memories: Vec::new(),
            });
            continue;
        }
        let (id, rest) = line.strip_prefix("- Memory ")?.split_once(" [")?;
        let (category, content) = rest.split_once("]: ")?;
        groups.last_mut()?.memories.push((
            id.parse().ok()?,
            category.to_owned(),
            content.to_owned(),
        ));
    }
    Some(groups)
}

/// The merging tool: name, description and input schema.
pub fn merge_tool() -> Value {
    json!({
        "name": MERGE_TOOL,
        "description": "Record the merges: for each, the memory to keep, the ones it replaces and the merged text. Groups not listed stay apart.",
        "input_schema": {
            "type": "object",
            "required": ["merges"],
            "properties": {
                "merges": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["keep", "others", "content"],
                        "properties": {
                            "keep": {"type": "integer", "minimum": 0},
                            "others": {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 0}},
                            "content": {"type": "string", "minLength": 1}
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
    merges: Vec<RawMerge>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMerge {
    keep: u64,
    others: Vec<u64>,
    content: String,
}

/// Reads the merging tool's input for `groups`: each merge must join memories of one group,
/// none twice, with a non-empty text. Any problem rejects the answer whole.
pub fn parse_merges(input: &Value, groups: &[MergeGroup]) -> Result<Vec<Merge>, String> {
    let raw: RawAnswer = serde_json::from_value(input.clone())
        .map_err(|error| format!("the `{MERGE_TOOL}` input does not match its schema: {error}"))?;
    let mut used: Vec<u64> = Vec::new();
    let mut merges = Vec::with_capacity(raw.merges.len());
    for merge in raw.merges {
        let keep = merge.keep;
        let group = groups
            .iter()
            .find(|group| group.memories.iter().any(|(id, ..)| *id == keep))
            .ok_or_else(|| format!("memory {keep} is in no group"))?;
        if merge.others.is_empty() {
            return Err(format!(
                "the merge keeping memory {keep} merges nothing into it"
            ));
        }
        for &id in std::iter::once(&keep).chain(&merge.others) {
            if !group.memories.iter().any(|(member, ..)| *member == id) {
                return Err(format!("memory {id} is not in the group of memory {keep}"));
            }
            if used.contains(&id) {
                return Err(format!("memory {id} is named twice"));
            }
            used.push(id);
        }
        let content = merge.content.trim().to_owned();
        if content.is_empty() {
            return Err(format!("the merge keeping memory {keep} has no text"));
        }
        merges.push(Merge {
            keep,
            others: merge.others,
            content,
        });
    }
    Ok(merges)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups() -> Vec<MergeGroup> {
        let memory = |id: u64, text: &str| (id, "NAMING".to_owned(), text.to_owned());
        vec![
            MergeGroup {
                memories: vec![
                    memory(3, "Crate names start with mc-."),
                    memory(9, "All crates are named with\nthe mc- prefix."),
                ],
            },
            MergeGroup {
                memories: vec![memory(4, "MAX_RETRIES is 5"), memory(5, "MAX_RETRIES is 7")],
            },
        ]
    }

    #[test]
    fn the_message_reads_back_as_written() {
        let message = merge_user_message(&groups());
        insta::assert_snapshot!(message, @r"
        Groups of project memories that share most of their words:

        Group 1:
        - Memory 3 [NAMING]: Crate names start with mc-.
        - Memory 9 [NAMING]: All crates are named with the mc- prefix.

        Group 2:
        - Memory 4 [NAMING]: MAX_RETRIES is 5
        - Memory 5 [NAMING]: MAX_RETRIES is 7
        ");
        let mut expected = groups();
        expected[0].memories[1].2 = "All crates are named with the mc- prefix.".into();
        assert_eq!(read_merge_message(&message), Some(expected));
        assert_eq!(read_merge_message("Memories to check"), None);
    }

    #[test]
    fn merges_are_read_strictly() {
        let good =
            json!({"merges": [{"keep": 3, "others": [9], "content": " Crates are named mc-* "}]});
        assert_eq!(
            parse_merges(&good, &groups()),
            Ok(vec![Merge {
                keep: 3,
                others: vec![9],
                content: "Crates are named mc-*".into()
            }])
        );
        assert_eq!(
            parse_merges(&json!({"merges": []}), &groups()),
            Ok(Vec::new())
        );
        for (bad, expected) in [
            (json!({"merged": true}), "does not match its schema"),
            (
                json!({"merges": [{"keep": 3, "others": [4], "content": "x"}]}),
                "memory 4 is not in the group",
            ),
            (
                json!({"merges": [{"keep": 7, "others": [9], "content": "x"}]}),
                "memory 7 is in no group",
            ),
            (
                json!({"merges": [{"keep": 3, "others": [3], "content": "x"}]}),
                "memory 3 is named twice",
            ),
            (
                json!({"merges": [{"keep": 3, "others": [], "content": "x"}]}),
                "merges nothing",
            ),
            (
                json!({"merges": [{"keep": 3, "others": [9], "content": " "}]}),
                "has no text",
            ),
        ] {
            let error = parse_merges(&bad, &groups()).unwrap_err();
            assert!(error.contains(expected), "{error} lacks {expected}");
        }
    }
}
