//! What the historian model is asked: a system prompt, the transcript of the chunk, and one
//! tool it must call (`record_history`) whose input schema is [`HistorianOutput`]'s. Forcing
//! the call holds the answer to the structure on the providers that support forced tool use;
//! the Responses wire asks instead for a response format of the same name and schema, so the
//! instructions name both. [`parse_answer`] reads the tool's input back, and `validate`
//! checks it.
//!
//! The model writes two of the head's four tiers of detail: `condensed` (at most about 150
//! words) and `line`; no `full` summary and no `paragraph` is asked for. Under the decay `m[0]`
//! never shows a full tier (`head::decay`), so a full summary was read only while its
//! compartment was news in `m[1]`, yet it was most of what the historian wrote, and its output
//! is priced at several times its input; a paragraph is about as long as a summary held to 150
//! words. The compartment's index of names, the user's own words and `ctx_expand` carry what
//! the longer texts held. Replay, controlled cost against autocompact / references kept on the
//! swe set: four tiers 0.861 / 0.9880 at 200K and 1.079 / 0.9669 at 64K, three (no `full`)
//! 0.808 / 0.9869 and 1.004 / 0.9613, two 0.780 / 0.9861 and 0.971 / 0.9591. An answer that
//! still carries `full` or `paragraph` reads as before, those fields unused.
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
corrections and hard-won findings rate higher), the episode type, a summary (`condensed`: \
what a later turn needs to go on: files, commands, results, decisions, and what the user \
asked for or corrected, with ordinals, in as few words as carry them, at most about 150; the \
names used in the range and the user's own messages are kept verbatim beside your summary, \
so refer to them instead of copying them, and the raw messages stay recoverable) and the \
episode in one line (`line`).

Also list durable facts about the project in the categories PROJECT_RULES, ARCHITECTURE, \
CONSTRAINTS, CONFIG_VALUES and NAMING (only what will still be true next week), and \
observations about how the user likes to work. Answer only with the input of \
`record_history`: as a call to that tool, or as your whole answer where it is the response \
format.";

/// Most earlier episodes named before the transcript: enough to say where the story is.
pub const STORY_EPISODES: usize = 8;

/// Most characters of project memory shown before the transcript.
pub const MEMORY_CHARS: usize = 6_000;

/// What the historian is told before the transcript, so a run continues the story instead
/// of restarting it: the titles of the session's last episodes (`ordinals | title`) and the
/// project memory already recorded (`[CATEGORY] content`), so facts are not recorded twice.
#[derive(Debug, Clone, Copy, Default)]
pub struct StorySoFar<'a> {
    /// The last episodes before the chunk, oldest first, as `START-END title`.
    pub episodes: &'a [String],
    /// The project's live memories, as `[CATEGORY] content`.
    pub memories: &'a [String],
}

/// The user message: what came before (when anything did), then the transcript of `chunk`.
pub fn historian_user_message(chunk: Chunk, transcript: &str, story: StorySoFar<'_>) -> String {
    let mut out = String::new();
    let skip = story.episodes.len().saturating_sub(STORY_EPISODES);
    if !story.episodes[skip..].is_empty() {
        out.push_str("The session so far, as earlier runs recorded it (continue from here; do not summarise these again):\n");
        for episode in &story.episodes[skip..] {
            out.push_str(&format!("- {}\n", one_line(episode)));
        }
        out.push('\n');
    }
    if !story.memories.is_empty() {
        out.push_str("Project memory already recorded (do not list these as new facts):\n");
        let mut used = 0;
        for memory in story.memories {
            let line = format!("- {}\n", one_line(memory));
            used += line.len();
            if used > MEMORY_CHARS {
                break;
            }
            out.push_str(&line);
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "Transcript of ordinals {} to {}:\n\n{transcript}",
        chunk.start, chunk.end
    ));
    out
}

/// `text` on one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
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
                        "required": ["start_ordinal", "end_ordinal", "title", "importance", "episode", "condensed", "line"],
                        "properties": {
                            "start_ordinal": {"type": "integer", "minimum": 0},
                            "end_ordinal": {"type": "integer", "minimum": 0},
                            "title": text,
                            "importance": {"type": "integer", "minimum": 1, "maximum": 100},
                            "episode": text,
                            "condensed": text,
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
            historian_user_message(chunk, transcript, StorySoFar::default()),
            serde_json::to_string_pretty(&history_tool()).unwrap_or_default()
        ));
    }

    #[test]
    fn the_story_so_far_comes_before_the_transcript() {
        let episodes: Vec<String> = (0..10)
            .map(|n| format!("{}-{} Episode {n}\nwith a second line", n * 10, n * 10 + 9))
            .collect();
        let memories = vec!["[NAMING] Crates start with mc-.".to_owned()];
        let story = StorySoFar {
            episodes: &episodes,
            memories: &memories,
        };
        let chunk = Chunk {
            start: 100,
            end: 101,
        };
        insta::assert_snapshot!(historian_user_message(chunk, "#100 user: go on\n#101 assistant: ok\n", story), @r"
        The session so far, as earlier runs recorded it (continue from here; do not summarise these again):
        - 20-29 Episode 2 with a second line
        - 30-39 Episode 3 with a second line
        - 40-49 Episode 4 with a second line
        - 50-59 Episode 5 with a second line
        - 60-69 Episode 6 with a second line
        - 70-79 Episode 7 with a second line
        - 80-89 Episode 8 with a second line
        - 90-99 Episode 9 with a second line

        Project memory already recorded (do not list these as new facts):
        - [NAMING] Crates start with mc-.

        Transcript of ordinals 100 to 101:

        #100 user: go on
        #101 assistant: ok
        ");
    }

    #[test]
    fn answers_are_read_back_or_refused_with_the_reason() {
        let good = json!({"compartments": [{"start_ordinal": 3, "end_ordinal": 5, "title": "flag",
            "importance": 60, "episode": "feature", "condensed": "c", "line": "l"}]});
        let output = parse_answer(&good).unwrap();
        assert_eq!(output.compartments[0].end_ordinal, 5);
        assert!(output.facts.is_empty() && output.observations.is_empty());
        let mut four_tiers = good.clone();
        four_tiers["compartments"][0]["full"] = json!("the full summary");
        four_tiers["compartments"][0]["paragraph"] = json!("a paragraph");
        assert_eq!(parse_answer(&four_tiers).unwrap(), output);
        let mut no_condensed = good.clone();
        no_condensed["compartments"][0]
            .as_object_mut()
            .unwrap()
            .remove("condensed");
        assert!(
            parse_answer(&no_condensed)
                .unwrap_err()
                .contains("condensed")
        );
        let bad = json!({"compartments": [{"start_ordinal": "three"}]});
        let error = parse_answer(&bad).unwrap_err();
        assert!(
            error.starts_with("the `record_history` input does not match its schema: "),
            "{error}"
        );
    }
}
