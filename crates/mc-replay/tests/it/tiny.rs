//! A tiny synthetic recording that every strategy acts on at a 40K window.

use std::sync::Arc;

use mc_core::{Message, Part, Role};
use mc_sim::{Recording, RecordingFormat, Step, ToolSpec};
use serde_json::json;

/// Eight turns of a tool-using session whose tool results are about 5.5K tokens each, so a 40K
/// window (autocompact at 7K, window budget 20K) makes every strategy but clear-tools act.
pub fn tiny_recording() -> Recording {
    let mut history = vec![Message::new(
        Role::User,
        vec![Part::text("fix the failing test")],
    )];
    let mut steps = Vec::new();
    for turn in 0..8u64 {
        let id = format!("call_{turn}");
        let call = Message::new(
            Role::Assistant,
            vec![
                Part::text(format!("Step {turn}: reading the next file.")),
                Part::ToolCall {
                    id: id.clone(),
                    name: "Read".into(),
                    input: json!({"path": format!("src/module_{turn}.rs")}),
                },
            ],
        );
        steps.push((history.len(), call.clone(), turn));
        history.push(call);
        let body: String = (0..800)
            .map(|line| format!("line {line} of module {turn}\n"))
            .collect();
        history.push(Message::new(
            Role::User,
            vec![Part::ToolResult {
                call_id: id,
                content: vec![Part::text(body)],
                is_error: false,
            }],
        ));
    }
    let history = Arc::new(history);
    Recording {
        name: "tiny".into(),
        format: RecordingFormat::ClaudeCode,
        model: "claude-sonnet-4-5".into(),
        system: vec!["You are a careful coding agent.".into()],
        tools: vec![ToolSpec {
            name: "Read".into(),
            description: "Reads a file".into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
        stand_ins: Vec::new(),
        steps: steps
            .into_iter()
            .map(|(len, response, turn)| Step {
                at_ms: turn * 30_000,
                messages: Arc::clone(&history),
                len,
                response,
                output_tokens: Some(40),
                recorded: None,
                context: None,
            })
            .collect(),
    }
}
