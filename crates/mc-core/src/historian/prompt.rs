//! What the historian model is asked: a system prompt, the transcript of the chunk, and one
//! tool it must call (`record_history`) whose input schema is [`HistorianOutput`]'s. Forcing
//! the call holds the answer to the structure on the providers that support forced tool use;
//! the Responses wire asks instead for a response format of the same name and schema, so the
//! instructions name both. [`parse_answer`] reads the tool's input back, and `validate`
//! checks it.
//!
//! The bytes are pinned by snapshot tests: a change to them changes every historian run.

use serde_json::{Value, json};

use super::chunk::Chunk;
use super::output::HistorianOutput;

/// The tool the historian must call.
pub const HISTORY_TOOL: &str = "record_history";

/// The historian's instructions.
pub const HISTORIAN_SYSTEM: &str = "\
You summarise part of a coding agent's session so that later turns can rely on your summary \
instead of the raw transcript. Each transcript line is `#N role: content`; N is the \
message's ordinal. Tool calls show as `→ name(input)`, tool results as `← output`, and \
`[dropped]` marks content that was already removed.

Split the transcript into episodes: contiguous ordinal ranges, each one piece of work (a bug \
chased, a feature built, a question researched). The first starts at the transcript's first \
ordinal, each next one right after the previous, none past the last ordinal. For each, \
write a short title, an importance from 1 to 100 (50 is ordinary; decisions, user \
corrections and hard-won findings rate higher), the episode type, and four tiers of detail: \
`full` (everything a later turn could need: files, commands, results, decisions, and what \
the user asked for or corrected, with ordinals; the user's own messages are kept verbatim \
beside your summary, so refer to them instead of copying them), `condensed` (the same in a \
third of the words), `paragraph` (one paragraph) and `line` (one line).

Also list durable facts about the project in the categories PROJECT_RULES, ARCHITECTURE, \
CONSTRAINTS, CONFIG_VALUES and NAMING (only what will still be true next week), and \
observations about how the user likes to work. Answer only with the input of \
`record_history`: as a call to that tool, or as your whole answer where it is the response \
format.";

/// The user message: the transcript of `chunk`.
pub fn historian_user_message(chunk: Chunk, transcript: &str) -> String {
    format!(
        "Transcript of ordinals {} to {}:\n\n{transcript}",
        chunk.start, chunk.end
    )
}

/// The `record_history` tool: name, description and the input schema of
/// [`HistorianOutput`].
pub fn history_tool() -> Value {
    let text = json!({"type": "string", "minLength": 1});
    json!({
        "name": HISTORY_TOOL,
        "description": "Record the episodes, facts and observations of the transcript.",
        "input_schema": {
            "type": "object",
            "required": ["compartments"],
            "properties": {
                "compartments": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["start_ordinal", "end_ordinal", "title", "importance", "episode", "full", "condensed", "paragraph", "line"],
                        "properties": {
                            "start_ordinal": {"type": "integer", "minimum": 0},
                            "end_ordinal": {"type": "integer", "minimum": 0},
                            "title": text,
                            "importance": {"type": "integer", "minimum": 1, "maximum": 100},
                            "episode": text,
                            "full": text,
                            "condensed": text,
                            "paragraph": text,
                            "line": text
                        }
                    }
                },
                "facts": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["category", "content"],
                        "properties": {
                            "category": {"enum": ["PROJECT_RULES", "ARCHITECTURE", "CONSTRAINTS", "CONFIG_VALUES", "NAMING"]},
                            "content": text
                        }
                    }
                },
                "observations": {"type": "array", "items": text}
            }
        }
    })
}

/// Reads the `record_history` call's input. A malformed answer is an error in words quoted
/// back to the model in the repair round.
pub fn parse_answer(input: &Value) -> Result<HistorianOutput, String> {
    serde_json::from_value(input.clone())
        .map_err(|error| format!("the `{HISTORY_TOOL}` input does not match its schema: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_snapshot() {
        let chunk = Chunk { start: 3, end: 5 };
        let transcript = "#3 user: add a flag\n#4 assistant: → Edit({\"file_path\":\"cli.rs\"})\n#5 user: ← ok\n";
        insta::assert_snapshot!(format!(
            "{HISTORIAN_SYSTEM}\n---\n{}\n---\n{}",
            historian_user_message(chunk, transcript),
            serde_json::to_string_pretty(&history_tool()).unwrap_or_default()
        ));
    }

    #[test]
    fn answers_are_read_back_or_refused_with_the_reason() {
        let good = json!({"compartments": [{"start_ordinal": 3, "end_ordinal": 5, "title": "flag",
            "importance": 60, "episode": "feature", "full": "f", "condensed": "c",
            "paragraph": "p", "line": "l"}]});
        let output = parse_answer(&good).unwrap();
        assert_eq!(output.compartments[0].end_ordinal, 5);
        assert!(output.facts.is_empty() && output.observations.is_empty());
        let bad = json!({"compartments": [{"start_ordinal": "three"}]});
        let error = parse_answer(&bad).unwrap_err();
        assert!(
            error.starts_with("the `record_history` input does not match its schema: "),
            "{error}"
        );
    }
}
