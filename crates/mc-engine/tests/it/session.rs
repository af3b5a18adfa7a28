//! Generated coding-agent sessions: a task, then turns of assistant text and tool calls
//! answered by tool results, with the clock gaps and operator actions between requests.
//!
//! The vocabulary is small on purpose: a few paths and commands, so re-reads of the same
//! file, exact duplicate outputs and errored calls occur often enough for every reclaim lane
//! to fire, and outputs large enough (against a small window) to reach the execute threshold
//! and the force band.

use mc_core::{Message, Part, Role};
use proptest::prelude::*;
use serde_json::json;

use crate::support::{MODEL, OTHER_MODEL, START_MS};

/// Five minutes, the default cache TTL.
pub const TTL_MS: u64 = 300_000;

const PATHS: [&str; 4] = ["src/lib.rs", "src/main.rs", "Cargo.toml", "README.md"];
const COMMANDS: [&str; 3] = ["cargo test", "cargo build", "git status"];

/// One tool call and what came back.
#[derive(Debug, Clone)]
pub struct CallSpec {
    /// 0 = Read, 1 = Edit, 2 = Bash, 3 = Write (of `input_bytes` of content).
    pub tool: u8,
    /// The size of a Write's content: up to a whole large file, often larger than a small
    /// window's share.
    pub input_bytes: usize,
    /// Index into the paths or commands.
    pub target: usize,
    pub output: OutputSpec,
    pub is_error: bool,
    /// The client never sent a result for it (an interrupted call).
    pub unanswered: bool,
}

/// A tool output: fresh text of some size, or an exact copy of an earlier output.
#[derive(Debug, Clone)]
pub enum OutputSpec {
    Fresh {
        bytes: usize,
        seed: u32,
    },
    Repeat {
        back: usize,
    },
    /// A result with no content blocks at all.
    Empty,
}

/// One assistant turn, the user message that answers it, and what happens before the next
/// request is sent.
#[derive(Debug, Clone)]
pub struct TurnSpec {
    pub thinking: bool,
    /// 0: the assistant message has no text part, only calls (or nothing but thinking).
    pub words: usize,
    /// The model imitates an engine tag in its text (the engine must clean it).
    pub imitation: bool,
    /// Empty: the user answers with text instead of tool results.
    pub calls: Vec<CallSpec>,
    /// Time between the previous request and the one carrying this turn.
    pub gap_ms: u64,
    /// A drop list queued through `Engine::queue_drops` before that request.
    pub drop: Option<String>,
    pub operator_flush: bool,
    /// From this request on the client names the other model.
    pub switch_model: bool,
    /// Before this request the provider proves a limit at this percent of the previous
    /// rendering's size (an overflow error), so refusal and emergency folds occur.
    pub prove_window_percent: Option<u64>,
}

/// A whole generated session.
#[derive(Debug, Clone)]
pub struct Script {
    pub usable_window: u64,
    pub turns: Vec<TurnSpec>,
    /// Tool call ids restart every turn (`call_0`, `call_1`, …), as some OpenAI-compatible
    /// providers emit them, instead of being unique across the session.
    pub reuse_ids: bool,
    /// Results come back as one tool-role message each (OpenAI's wire) instead of one user
    /// message holding them all (Anthropic's).
    pub tool_messages: bool,
}

/// One request of the session: the client's conversation so far and its circumstances.
#[derive(Debug, Clone)]
pub struct Step {
    pub messages_len: usize,
    pub now_ms: u64,
    pub drop: Option<String>,
    pub operator_flush: bool,
    pub model: &'static str,
    pub prove_window_percent: Option<u64>,
}

impl Script {
    /// The full conversation and the requests that send it, growing: the first request is
    /// the task alone, each later one adds an assistant turn and its answer.
    pub fn materialise(&self) -> (Vec<Message>, Vec<Step>) {
        let mut messages = vec![Message::new(
            Role::User,
            vec![Part::text(
                "Fix the failing test in src/lib.rs and keep the build green.",
            )],
        )];
        let mut steps = vec![Step {
            messages_len: 1,
            now_ms: START_MS,
            drop: None,
            operator_flush: false,
            model: MODEL,
            prove_window_percent: None,
        }];
        let mut model = MODEL;
        let mut outputs: Vec<String> = Vec::new();
        let mut now_ms = START_MS;
        for (turn_no, turn) in self.turns.iter().enumerate() {
            let ids = IdStyle(self.reuse_ids);
            messages.push(assistant_message(turn_no, turn, ids));
            let answer = answer(turn_no, turn, ids, &mut outputs);
            if self.tool_messages && answer.parts.iter().all(Part::is_tool_result) {
                messages.extend(
                    answer
                        .parts
                        .into_iter()
                        .map(|result| Message::new(Role::Tool, vec![result])),
                );
            } else {
                messages.push(answer);
            }
            now_ms += turn.gap_ms;
            if turn.switch_model {
                model = if model == MODEL { OTHER_MODEL } else { MODEL };
            }
            steps.push(Step {
                messages_len: messages.len(),
                now_ms,
                drop: turn.drop.clone(),
                operator_flush: turn.operator_flush,
                model,
                prove_window_percent: turn.prove_window_percent,
            });
        }
        (messages, steps)
    }
}

fn assistant_message(turn_no: usize, turn: &TurnSpec, ids: IdStyle) -> Message {
    let mut parts = Vec::new();
    if turn.thinking {
        parts.push(Part::Thinking {
            text: format!("turn {turn_no}: what to look at next"),
            signature: Some(format!("sig-{turn_no}")),
        });
    }
    if turn.words > 0 || turn.calls.is_empty() {
        let mut text = words(turn.words, &format!("plan{turn_no}"));
        if turn.imitation {
            text = format!("§{turn_no}§ as I said in [dropped §2§], {text}");
        }
        parts.push(Part::text(text));
    }
    for (index, call) in turn.calls.iter().enumerate() {
        let id = ids.call_id(turn_no, index);
        let (name, input) = match call.tool {
            0 => (
                "Read",
                json!({"file_path": PATHS[call.target % PATHS.len()]}),
            ),
            1 => (
                "Edit",
                json!({
                    "file_path": PATHS[call.target % PATHS.len()],
                    "old_string": words(30, "old"),
                    "new_string": words(30, "new"),
                }),
            ),
            2 => (
                "Bash",
                json!({"command": COMMANDS[call.target % COMMANDS.len()]}),
            ),
            _ => (
                "Write",
                json!({
                    "file_path": PATHS[call.target % PATHS.len()],
                    "content": fresh_output(call.input_bytes, turn_no as u32 + 1),
                }),
            ),
        };
        parts.push(Part::ToolCall {
            id,
            name: name.to_owned(),
            input,
        });
    }
    Message::new(Role::Assistant, parts)
}

fn answer(turn_no: usize, turn: &TurnSpec, ids: IdStyle, outputs: &mut Vec<String>) -> Message {
    if turn.calls.iter().all(|call| call.unanswered) {
        return Message::new(
            Role::User,
            vec![Part::text(format!(
                "Looks right; continue with step {turn_no}."
            ))],
        );
    }
    let parts = turn
        .calls
        .iter()
        .enumerate()
        .filter(|(_, call)| !call.unanswered)
        .map(|(index, call)| {
            let text = match &call.output {
                OutputSpec::Empty => {
                    return Part::ToolResult {
                        call_id: ids.call_id(turn_no, index),
                        content: Vec::new(),
                        is_error: call.is_error,
                    };
                }
                OutputSpec::Repeat { back } if !outputs.is_empty() => {
                    outputs[outputs.len() - 1 - back % outputs.len()].clone()
                }
                OutputSpec::Repeat { .. } => "(no output)".to_owned(),
                OutputSpec::Fresh { bytes, seed } => fresh_output(*bytes, *seed),
            };
            outputs.push(text.clone());
            Part::ToolResult {
                call_id: ids.call_id(turn_no, index),
                content: vec![Part::text(text)],
                is_error: call.is_error,
            }
        })
        .collect();
    Message::new(Role::User, parts)
}

/// How tool call ids are minted: `true` reuses them every turn.
#[derive(Debug, Clone, Copy)]
struct IdStyle(bool);

impl IdStyle {
    fn call_id(self, turn_no: usize, index: usize) -> String {
        if self.0 {
            format!("call_{index}")
        } else {
            format!("toolu_{turn_no:03}_{index}")
        }
    }
}

/// `count` words, distinct per `stem`, so near-duplicate detection sees real differences.
pub fn words(count: usize, stem: &str) -> String {
    (0..count)
        .map(|index| format!("{stem}w{}", index % 37))
        .collect::<Vec<_>>()
        .join(" ")
}

fn fresh_output(bytes: usize, seed: u32) -> String {
    let mut text = String::new();
    let mut line = 0_u32;
    while text.len() < bytes {
        text.push_str(&format!(
            "line {line} of output {seed}: value {}\n",
            line * seed
        ));
        line += 1;
    }
    text
}

fn arb_call() -> impl Strategy<Value = CallSpec> {
    let output = prop_oneof![
        4 => (0_usize..6_000, 0_u32..1_000)
            .prop_map(|(bytes, seed)| OutputSpec::Fresh { bytes, seed }),
        // A giant output: a log or a paste larger than a small window's share.
        1 => (20_000_usize..60_000, 0_u32..1_000)
            .prop_map(|(bytes, seed)| OutputSpec::Fresh { bytes, seed }),
        1 => (0_usize..8).prop_map(|back| OutputSpec::Repeat { back }),
        1 => Just(OutputSpec::Empty),
    ];
    (
        prop_oneof![4 => 0_u8..3, 1 => Just(3_u8)],
        0_usize..4,
        prop_oneof![3 => 0_usize..4_000, 1 => 10_000_usize..40_000],
        output,
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.04),
    )
        .prop_map(
            |(tool, target, input_bytes, output, is_error, unanswered)| CallSpec {
                tool,
                target,
                input_bytes,
                output,
                is_error,
                unanswered,
            },
        )
}

fn arb_gap() -> impl Strategy<Value = u64> {
    prop_oneof![
        10 => 1_000_u64..120_000,
        1 => TTL_MS..TTL_MS * 3,
    ]
}

fn arb_drop() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        6 => Just(None),
        1 => (1_u32..90, 0_u32..6, 1_u32..90)
            .prop_map(|(start, len, single)| Some(format!("{start}-{},§{single}§", start + len))),
    ]
}

fn arb_turn() -> impl Strategy<Value = TurnSpec> {
    (
        prop::bool::weighted(0.3),
        prop_oneof![1 => Just(0_usize), 5 => 1_usize..60],
        prop::bool::weighted(0.1),
        prop::collection::vec(arb_call(), 0..4),
        arb_gap(),
        arb_drop(),
        prop::bool::weighted(0.08),
        prop::bool::weighted(0.03),
        prop_oneof![20 => Just(None), 1 => (95_u64..110).prop_map(Some)],
    )
        .prop_map(
            |(
                thinking,
                words,
                imitation,
                calls,
                gap_ms,
                drop,
                operator_flush,
                switch_model,
                prove_window_percent,
            )| {
                TurnSpec {
                    thinking,
                    words,
                    imitation,
                    calls,
                    gap_ms,
                    drop,
                    operator_flush,
                    switch_model,
                    prove_window_percent,
                }
            },
        )
}

/// Sessions of up to 24 turns against a usable window of 4K–40K tokens.
pub fn arb_script() -> impl Strategy<Value = Script> {
    (
        4_000_u64..40_000,
        prop::collection::vec(arb_turn(), 1..24),
        prop::bool::weighted(0.25),
    )
        .prop_map(|(usable_window, turns, tool_messages)| Script {
            usable_window,
            turns,
            reuse_ids: false,
            tool_messages,
        })
}
