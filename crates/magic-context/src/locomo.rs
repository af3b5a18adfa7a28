//! The LoCoMo conversations as the recall benchmark reads them: each conversation one
//! session of dialog turns, each turn a message stored at its session's date, and the
//! questions of categories 1–4 with the dialog ids of their evidence.
//!
//! Category 5 questions are adversarial (their evidence does not answer them) and are left
//! out, as the benchmark's definition says. An evidence id that names no turn of its
//! conversation (the published file has a few) cannot be retrieved by anything: it is counted
//! and left out of the recall denominators rather than silently lowering or raising recall.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context, anyhow};
use chrono::NaiveDateTime;
use serde::Deserialize;
use serde_json::Value;

/// One conversation of the file.
#[derive(Debug, Clone)]
pub struct Conversation {
    /// The file's sample id.
    pub id: String,
    /// Its turns in order.
    pub turns: Vec<Turn>,
    /// Its questions of categories 1–4.
    pub questions: Vec<Question>,
}

/// One dialog turn.
#[derive(Debug, Clone)]
pub struct Turn {
    /// The dialog id (`D3:7`).
    pub dia_id: String,
    /// `Speaker: text`, with a shared image's caption.
    pub text: String,
    /// The turn's session date, unix milliseconds.
    pub at_ms: i64,
}

/// A question and the turns that answer it.
#[derive(Debug, Clone)]
pub struct Question {
    /// What is asked.
    pub text: String,
    /// LoCoMo's category, 1–4.
    pub category: u8,
    /// Indexes into the conversation's turns of its evidence.
    pub evidence: Vec<usize>,
    /// Evidence ids that name no turn.
    pub unresolved: usize,
}

#[derive(Deserialize)]
struct RawSample {
    sample_id: Value,
    conversation: serde_json::Map<String, Value>,
    qa: Vec<RawQuestion>,
}

#[derive(Deserialize)]
struct RawQuestion {
    question: String,
    category: u8,
    #[serde(default)]
    evidence: Vec<String>,
}

#[derive(Deserialize)]
struct RawTurn {
    speaker: String,
    dia_id: String,
    text: String,
    #[serde(default)]
    blip_caption: Option<String>,
}

/// Reads a LoCoMo JSON file.
pub fn load(path: &Path) -> anyhow::Result<Vec<Conversation>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let samples: Vec<RawSample> = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a LoCoMo file (a list of samples with `conversation` and `qa`)",
            path.display()
        )
    })?;
    samples.into_iter().map(conversation).collect()
}

fn conversation(sample: RawSample) -> anyhow::Result<Conversation> {
    let id = match &sample.sample_id {
        Value::String(id) => id.clone(),
        other => other.to_string(),
    };
    let mut sessions: Vec<(u32, i64, Vec<RawTurn>)> = Vec::new();
    for (key, value) in &sample.conversation {
        let Some(number) = key
            .strip_prefix("session_")
            .and_then(|rest| rest.parse::<u32>().ok())
        else {
            continue;
        };
        let date_key = format!("session_{number}_date_time");
        let date = sample
            .conversation
            .get(&date_key)
            .and_then(Value::as_str)
            .ok_or_else(|| anyhow!("conversation {id}: session {number} has no {date_key}"))?;
        let at_ms = parse_session_date(date)
            .ok_or_else(|| anyhow!("conversation {id}: cannot read the date `{date}`"))?;
        let turns: Vec<RawTurn> = serde_json::from_value(value.clone()).with_context(|| {
            format!("conversation {id}: session {number} is not a list of turns")
        })?;
        sessions.push((number, at_ms, turns));
    }
    sessions.sort_by_key(|(number, _, _)| *number);
    let mut turns = Vec::new();
    for (_, at_ms, raw_turns) in sessions {
        for turn in raw_turns {
            let mut text = format!("{}: {}", turn.speaker, turn.text);
            if let Some(caption) = turn.blip_caption.filter(|caption| !caption.is_empty()) {
                text.push_str(&format!(" [shares a photo: {caption}]"));
            }
            turns.push(Turn {
                dia_id: turn.dia_id,
                text,
                at_ms,
            });
        }
    }
    let by_id: HashMap<&str, usize> = turns
        .iter()
        .enumerate()
        .map(|(index, turn)| (turn.dia_id.as_str(), index))
        .collect();
    let questions = sample
        .qa
        .into_iter()
        .filter(|question| (1..=4).contains(&question.category))
        .map(|question| {
            let ids: Vec<&str> = question
                .evidence
                .iter()
                .flat_map(|field| field.split([';', ',', ' ']))
                .map(str::trim)
                .filter(|id| !id.is_empty())
                .collect();
            let mut evidence: Vec<usize> =
                ids.iter().filter_map(|id| by_id.get(id).copied()).collect();
            evidence.sort_unstable();
            evidence.dedup();
            Question {
                text: question.question,
                category: question.category,
                unresolved: ids.iter().filter(|id| !by_id.contains_key(*id)).count(),
                evidence,
            }
        })
        .collect();
    Ok(Conversation {
        id,
        turns,
        questions,
    })
}

/// `1:56 pm on 8 May, 2023` as unix milliseconds (UTC: the file gives no zone).
fn parse_session_date(text: &str) -> Option<i64> {
    let normalised = text.trim().replace("am", "AM").replace("pm", "PM");
    NaiveDateTime::parse_from_str(&normalised, "%I:%M %p on %d %B, %Y")
        .ok()
        .map(|moment| moment.and_utc().timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_dates_read_as_utc() {
        assert_eq!(
            parse_session_date("1:56 pm on 8 May, 2023"),
            Some(1_683_554_160_000)
        );
        assert_eq!(
            parse_session_date("10:37 am on 27 June, 2023"),
            Some(1_687_862_220_000)
        );
        assert_eq!(parse_session_date("soon"), None);
    }

    #[test]
    fn evidence_resolves_to_turns_and_adversarial_questions_are_left_out() {
        let file = r#"[{"sample_id": "c1", "conversation": {
            "speaker_a": "A", "speaker_b": "B",
            "session_2_date_time": "9:00 am on 2 May, 2023",
            "session_2": [{"speaker": "B", "dia_id": "D2:1", "text": "later"}],
            "session_1_date_time": "9:00 am on 1 May, 2023",
            "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi", "blip_caption": "a dog"},
                          {"speaker": "B", "dia_id": "D1:2", "text": "hello"}]},
            "qa": [{"question": "q1", "category": 1, "evidence": ["D1:2; D2:1", "D9:9"]},
                   {"question": "q5", "category": 5, "evidence": ["D1:1"]}]}]"#;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.json");
        std::fs::write(&path, file).unwrap();
        let conversations = load(&path).unwrap();
        let conversation = &conversations[0];
        let texts: Vec<&str> = conversation.turns.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(
            texts,
            ["A: hi [shares a photo: a dog]", "B: hello", "B: later"]
        );
        assert_eq!(conversation.questions.len(), 1);
        assert_eq!(conversation.questions[0].evidence, [1, 2]);
        assert_eq!(conversation.questions[0].unresolved, 1);
    }
}
