//! Generated coding sessions of the kind that went over small windows: a system prompt and
//! tools of about 6K tokens, files written whole through tool calls (inputs of 8–12K tokens),
//! reads of 20–35K tokens, shell output of a few thousand. Deterministic (a fixed-seed
//! generator), so a failure names its session. (Sizes are o200k tokens of the generated text;
//! its code-like lines run about 15 tokens each.)

use std::sync::Arc;

use mc_core::{Message, Part, Role};
use mc_sim::{Recording, RecordingFormat, Step, ToolSpec};
use serde_json::json;

/// A small linear congruential generator: enough to vary sizes, no dependency.
pub struct Seq(pub u64);

impl Seq {
    pub fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below.max(1)
    }

    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next(high - low)
    }
}

/// Text of about `tokens` o200k tokens: distinct numbered code-like lines (about 12 tokens
/// each).
pub fn text(tokens: u64, stem: &str) -> String {
    (0..tokens / 12)
        .map(|line| format!("    let {stem}_{line} = compute({line}, \"{stem}\");\n"))
        .collect()
}

fn tool(name: &str, properties: serde_json::Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("{name}: {}", text(300, name)),
        input_schema: json!({"type": "object", "properties": properties}),
    }
}

/// A session of `turns` model calls, `seed` choosing the mix and sizes.
pub fn coding_session(seed: u64, turns: usize) -> Recording {
    let mut seq = Seq(seed);
    let mut history = vec![Message::new(
        Role::User,
        vec![Part::text(
            "Implement the parser rewrite described in docs/plan.md and keep the tests green.",
        )],
    )];
    let mut steps = Vec::new();
    for turn in 0..turns {
        let id = format!("toolu_{seed}_{turn}");
        let path = format!("src/module_{}.rs", seq.next(6));
        let (call, output) = match seq.next(10) {
            0..=2 => (
                Part::ToolCall {
                    id: id.clone(),
                    name: "Write".into(),
                    input: json!({"file_path": path, "content": text(seq.between(6_000, 8_000), &format!("w{turn}"))}),
                },
                format!("File created successfully at: {path}"),
            ),
            3 => (
                Part::ToolCall {
                    id: id.clone(),
                    name: "MultiEdit".into(),
                    input: json!({"file_path": path, "edits": [
                        {"old_string": text(seq.between(800, 2_000), &format!("o{turn}")), "new_string": text(seq.between(800, 2_000), &format!("n{turn}"))},
                        {"old_string": text(600, &format!("p{turn}")), "new_string": text(700, &format!("q{turn}"))}
                    ]}),
                },
                format!("Applied 2 edits to {path}"),
            ),
            4..=6 => (
                Part::ToolCall {
                    id: id.clone(),
                    name: "Read".into(),
                    input: json!({"file_path": path}),
                },
                text(seq.between(15_000, 25_000), &format!("r{turn}")),
            ),
            _ => (
                Part::ToolCall {
                    id: id.clone(),
                    name: "Bash".into(),
                    input: json!({"command": format!("cargo test -p parser -- case_{turn}")}),
                },
                text(seq.between(1_000, 4_000), &format!("b{turn}")),
            ),
        };
        let response = Message::new(
            Role::Assistant,
            vec![Part::text(format!("Step {turn}: next change.")), call],
        );
        steps.push((history.len(), response.clone(), turn as u64));
        history.push(response);
        history.push(Message::new(
            Role::User,
            vec![Part::ToolResult {
                call_id: id,
                content: vec![Part::text(output)],
                is_error: false,
            }],
        ));
    }
    let steps = steps
        .into_iter()
        .map(|(len, response, turn)| (len, response, turn * 40_000))
        .collect();
    recording(format!("coding-session-{seed}"), 4_000, history, steps)
}

/// The tools of a generated session: Read, Write, MultiEdit and Bash.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        tool("Read", json!({"file_path": {"type": "string"}})),
        tool(
            "Write",
            json!({"file_path": {"type": "string"}, "content": {"type": "string"}}),
        ),
        tool(
            "MultiEdit",
            json!({"file_path": {"type": "string"}, "edits": {"type": "array"}}),
        ),
        tool("Bash", json!({"command": {"type": "string"}})),
    ]
}

/// A Claude Code recording of `history` on Sonnet with a system prompt of about
/// `system_tokens` and the generated tools; each step is (messages sent, the model's answer,
/// its time), answering in 300 tokens.
pub fn recording(
    name: String,
    system_tokens: u64,
    history: Vec<Message>,
    steps: Vec<(usize, Message, u64)>,
) -> Recording {
    let history = Arc::new(history);
    Recording {
        name,
        format: RecordingFormat::ClaudeCode,
        model: "claude-sonnet-4-5".into(),
        system: vec![text(system_tokens, "system")],
        tools: tools(),
        stand_ins: Vec::new(),
        steps: steps
            .into_iter()
            .map(|(len, response, at_ms)| Step {
                at_ms,
                messages: Arc::clone(&history),
                len,
                response,
                output_tokens: Some(300),
                recorded: None,
                context: None,
            })
            .collect(),
    }
}
