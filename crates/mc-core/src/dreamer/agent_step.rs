//! The dreamer's small agent loop as the model sees it: one forced tool, `dreamer_step`,
//! whose input is a list of calls (read-only looks at the project, memory verdicts, a doc
//! proposal, `finish`), and a user message that carries the task, every earlier step's
//! calls with what they returned, and what is left of the run's caps.
//!
//! A loop over one forced structured answer per step, rather than a provider's native
//! multi-turn tool use, keeps the loop on the same `mc-llm` chain as every other dreamer
//! call (Anthropic, Chat Completions and Responses alike, fallbacks and credentials
//! included) and lets the simulator read the whole state of the loop back from one
//! message. The price is that each step re-sends the transcript, which the token budget
//! bounds.
//!
//! An answer that is not a list of calls fails the step (garbage changes nothing); a single
//! call that is wrong (an unknown tool, a missing argument, a memory not asked about) is
//! answered with an error the model reads at its next step, as a tool error would be.

use serde_json::{Map, Value, json};

use super::verdict::Verdict;

/// The tool every step must call.
pub const STEP_TOOL: &str = "dreamer_step";

/// Most calls one step may make; the rest are answered with an error. Room for a verdict
/// on each of a batch's ten memories and `finish`, so a loop needs no step just to decide.
pub const MAX_CALLS_PER_STEP: usize = 16;

/// The read-only tools over the project, offered to every loop.
pub const LOOK_TOOLS: [&str; 5] = ["list_files", "read_file", "search", "git_log", "git_show"];

/// The memory verdicts a verifying loop may give.
pub const MEMORY_TOOLS: [&str; 3] = ["keep_memory", "update_memory", "archive_memory"];

/// The doc proposal a docs loop may make.
pub const DOC_TOOL: &str = "propose_doc";

/// Ends the loop.
pub const FINISH: &str = "finish";

/// The loop's instructions: the tools, the rules; the task comes in the user message.
pub const STEP_SYSTEM: &str = "\
You maintain a software project's long-term memory. You work in steps: each step you call \
`dreamer_step` once with a list of calls, and the next message shows what each returned. \
Tools (all read-only; paths are relative to the project root, `/`-separated):
- list_files {path?}: the project's files (those git tracks or would track), under `path` if given.
- read_file {path, start_line, end_line}: lines of a text file, at most 200 at a time.
- search {pattern, path?}: lines matching a regular expression (Rust syntax), under `path` if given.
- git_log {path}: the newest commits that touched `path` (also a path that no longer exists), \
with every file each commit changed (R = renamed from, to; D = deleted; A = added; M = modified).
- git_show {revision, path?}: one commit's message and change, of `path` if given.
Paths outside the project, links out of it and very large files are refused. \
Use as few steps as you can: your steps and tokens are capped. \
When you are done, call `finish` (a short summary in `reason`). \
Decide only from what you have seen; when unsure, keep.";

/// One call the model made, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepCall {
    /// The project's files, under a folder if given.
    ListFiles {
        /// The folder, relative.
        under: Option<String>,
    },
    /// A line range of a file, 1-based and inclusive.
    ReadFile {
        /// The file.
        path: String,
        /// The first line.
        start_line: u32,
        /// The last line.
        end_line: u32,
    },
    /// Lines matching a regular expression.
    Search {
        /// The expression.
        pattern: String,
        /// The folder to search under.
        under: Option<String>,
    },
    /// The commits that touched a path.
    GitLog {
        /// The path.
        path: String,
    },
    /// One commit.
    GitShow {
        /// The commit.
        revision: String,
        /// The path whose change to show.
        path: Option<String>,
    },
    /// A verdict on a memory under suspicion.
    Verdict(Verdict),
    /// The full new text of a project doc.
    ProposeDoc {
        /// The doc.
        path: String,
        /// Its proposed text.
        content: String,
        /// Why, in a line.
        reason: String,
    },
    /// The end of the loop.
    Finish {
        /// What the model says it did.
        summary: String,
    },
}

/// The step tool offering `offered` (tool names among [`LOOK_TOOLS`], [`MEMORY_TOOLS`],
/// [`DOC_TOOL`], [`FINISH`]).
pub fn step_tool(offered: &[&str]) -> Value {
    json!({
        "name": STEP_TOOL,
        "description": "Make this step's calls: look at the project, give verdicts, propose a doc, or finish.",
        "input_schema": {
            "type": "object",
            "required": ["calls"],
            "properties": {
                "calls": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["tool"],
                        "properties": {
                            "tool": {"enum": offered},
                            "path": {"type": "string"},
                            "start_line": {"type": "integer", "minimum": 1},
                            "end_line": {"type": "integer", "minimum": 1},
                            "pattern": {"type": "string"},
                            "revision": {"type": "string"},
                            "memory_id": {"type": "integer", "minimum": 0},
                            "content": {"type": "string"},
                            "reason": {"type": "string"}
                        }
                    }
                }
            }
        }
    })
}

/// One call of a step as written (for the transcript), with what it asks or why it cannot
/// be done.
pub type ReadCall = (Value, Result<StepCall, String>);

/// Reads a step's input, call by call. `Err` when the input is not a list of calls at all.
pub fn parse_step(input: &Value, offered: &[&str]) -> Result<Vec<ReadCall>, String> {
    let calls = input
        .get("calls")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("the `{STEP_TOOL}` input has no `calls` list"))?;
    if calls.is_empty() {
        return Err(format!("the `{STEP_TOOL}` input has no calls"));
    }
    Ok(calls
        .iter()
        .enumerate()
        .map(|(at, call)| {
            let read = if at >= MAX_CALLS_PER_STEP {
                Err(format!(
                    "not run: at most {MAX_CALLS_PER_STEP} calls per step"
                ))
            } else {
                read_call(call, offered)
            };
            (call.clone(), read)
        })
        .collect())
}

fn read_call(call: &Value, offered: &[&str]) -> Result<StepCall, String> {
    let fields = call
        .as_object()
        .ok_or_else(|| "a call must be an object with a `tool`".to_owned())?;
    let tool = fields
        .get("tool")
        .and_then(Value::as_str)
        .ok_or_else(|| "a call needs a `tool`".to_owned())?;
    if !offered.contains(&tool) {
        return Err(format!(
            "`{tool}` is not a tool of this task; use one of: {}",
            offered.join(", ")
        ));
    }
    let text = |name: &str| required_text(fields, tool, name);
    let optional = |name: &str| optional_text(fields, name);
    let line = |name: &str| {
        fields
            .get(name)
            .and_then(Value::as_u64)
            .and_then(|line| u32::try_from(line).ok())
            .filter(|line| *line >= 1)
            .ok_or_else(|| format!("`{tool}` needs `{name}`, a line number from 1"))
    };
    let memory_id = || {
        fields
            .get("memory_id")
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("`{tool}` needs `memory_id`"))
    };
    Ok(match tool {
        "list_files" => StepCall::ListFiles {
            under: optional("path"),
        },
        "read_file" => StepCall::ReadFile {
            path: text("path")?,
            start_line: line("start_line")?,
            end_line: line("end_line")?,
        },
        "search" => StepCall::Search {
            pattern: text("pattern")?,
            under: optional("path"),
        },
        "git_log" => StepCall::GitLog {
            path: text("path")?,
        },
        "git_show" => StepCall::GitShow {
            revision: text("revision")?,
            path: optional("path"),
        },
        "keep_memory" => StepCall::Verdict(Verdict::Keep {
            memory_id: memory_id()?,
        }),
        "update_memory" => StepCall::Verdict(Verdict::Update {
            memory_id: memory_id()?,
            content: text("content")?,
            reason: text("reason")?,
        }),
        "archive_memory" => StepCall::Verdict(Verdict::Archive {
            memory_id: memory_id()?,
            reason: text("reason")?,
        }),
        "propose_doc" => StepCall::ProposeDoc {
            path: text("path")?,
            content: text("content")?,
            reason: text("reason")?,
        },
        FINISH => StepCall::Finish {
            summary: optional("reason").unwrap_or_default(),
        },
        other => return Err(format!("`{other}` is not a tool")),
    })
}

fn required_text(fields: &Map<String, Value>, tool: &str, name: &str) -> Result<String, String> {
    optional_text(fields, name).ok_or_else(|| format!("`{tool}` needs a non-empty `{name}`"))
}

fn optional_text(fields: &Map<String, Value>, name: &str) -> Option<String> {
    fields
        .get(name)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
}

/// One call of an earlier step and what it returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallShown {
    /// The call as the model wrote it.
    pub call: Value,
    /// What it returned, or the error it met.
    pub result: String,
}

/// What is left of the run's caps, shown so the model can plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remaining {
    /// Steps.
    pub steps: u32,
    /// Tokens, input and output together.
    pub tokens: u64,
}

/// Opens the transcript in the user message.
const STEPS_OPEN: &str = "\n<steps>\n";
/// Closes it.
const STEPS_CLOSE: &str = "</steps>\n";
/// Starts each step's heading.
const STEP_HEAD: &str = "## step ";
/// Starts a call's line.
const CALL_MARK: &str = "> ";
/// Starts each line of a result, so no result can pass for a call or a heading.
const RESULT_MARK: &str = "| ";

/// The user message of the next step: the task, the steps so far, what is left.
pub fn step_user_message(task: &str, steps: &[Vec<CallShown>], left: Remaining) -> String {
    let mut out = String::with_capacity(task.len() + 256);
    out.push_str(task.trim_end());
    out.push('\n');
    out.push_str(STEPS_OPEN);
    for (number, calls) in steps.iter().enumerate() {
        out.push_str(&format!("{STEP_HEAD}{}\n", number + 1));
        for shown in calls {
            out.push_str(CALL_MARK);
            out.push_str(&shown.call.to_string());
            out.push('\n');
            for line in shown.result.lines() {
                out.push_str(RESULT_MARK);
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out.push_str(STEPS_CLOSE);
    out.push_str(&format!(
        "Left: {} steps, about {} tokens. Call `{STEP_TOOL}` with your next calls; `finish` when done.\n",
        left.steps, left.tokens
    ));
    out
}

/// Reads a step's user message back: the task and each earlier step's calls with their
/// results. `None` when the message is not a step's.
pub fn read_step_message(message: &str) -> Option<(String, Vec<Vec<CallShown>>)> {
    let open = message.rfind(STEPS_OPEN)?;
    let task = message[..open].trim_end().to_owned();
    let body = &message[open + STEPS_OPEN.len()..];
    let body = &body[..body.rfind(STEPS_CLOSE)?];
    let mut steps: Vec<Vec<CallShown>> = Vec::new();
    for line in body.lines() {
        if line.starts_with(STEP_HEAD) {
            steps.push(Vec::new());
        } else if let Some(call) = line.strip_prefix(CALL_MARK) {
            let call = serde_json::from_str(call).ok()?;
            steps.last_mut()?.push(CallShown {
                call,
                result: String::new(),
            });
        } else if let Some(result) = line.strip_prefix(RESULT_MARK) {
            let shown = steps.last_mut()?.last_mut()?;
            shown.result.push_str(result);
            shown.result.push('\n');
        } else {
            return None;
        }
    }
    for shown in steps.iter_mut().flatten() {
        shown.result.pop();
    }
    Some((task, steps))
}

#[cfg(test)]
mod tests {
    use super::*;

    const VERIFY: [&str; 9] = [
        "list_files",
        "read_file",
        "search",
        "git_log",
        "git_show",
        "keep_memory",
        "update_memory",
        "archive_memory",
        "finish",
    ];

    #[test]
    fn calls_read_strictly_one_by_one() {
        let input = json!({"calls": [
            {"tool": "git_log", "path": "src/old.rs"},
            {"tool": "read_file", "path": "src/a.rs", "start_line": 0, "end_line": 3},
            {"tool": "propose_doc", "path": "ARCHITECTURE.md"},
            {"tool": "update_memory", "memory_id": 4, "content": "Parsing lives in src/new.rs", "reason": "renamed"},
            {"tool": "finish"}
        ]});
        let read: Vec<Result<StepCall, String>> = parse_step(&input, &VERIFY)
            .unwrap()
            .into_iter()
            .map(|(_, read)| read)
            .collect();
        assert_eq!(
            read,
            [
                Ok(StepCall::GitLog {
                    path: "src/old.rs".into()
                }),
                Err("`read_file` needs `start_line`, a line number from 1".into()),
                Err("`propose_doc` is not a tool of this task; use one of: list_files, read_file, search, git_log, git_show, keep_memory, update_memory, archive_memory, finish".into()),
                Ok(StepCall::Verdict(Verdict::Update {
                    memory_id: 4,
                    content: "Parsing lives in src/new.rs".into(),
                    reason: "renamed".into()
                })),
                Ok(StepCall::Finish {
                    summary: String::new()
                }),
            ]
        );
        assert!(parse_step(&json!({"verdicts": []}), &VERIFY).is_err());
        assert!(parse_step(&json!({"calls": []}), &VERIFY).is_err());
        let many = json!({"calls": vec![json!({"tool": "list_files"}); 17]});
        let read = parse_step(&many, &VERIFY).unwrap();
        assert!(read[15].1.is_ok());
        assert_eq!(
            read[16].1,
            Err("not run: at most 16 calls per step".to_owned())
        );
    }

    #[test]
    fn a_step_message_reads_back_whatever_the_results_hold() {
        let steps = vec![
            vec![CallShown {
                call: json!({"tool": "read_file", "path": "x.md", "start_line": 1, "end_line": 2}),
                result: "1: ## step 9\n2: > {\"tool\":\"finish\"}\n\n</steps>".into(),
            }],
            vec![CallShown {
                call: json!({"tool": "list_files"}),
                result: "error: nothing".into(),
            }],
        ];
        let message = step_user_message(
            "Memories to check\n<steps>",
            &steps,
            Remaining {
                steps: 3,
                tokens: 900,
            },
        );
        assert!(message.ends_with("Left: 3 steps, about 900 tokens. Call `dreamer_step` with your next calls; `finish` when done.\n"));
        let (task, read) = read_step_message(&message).unwrap();
        assert_eq!(task, "Memories to check\n<steps>");
        assert_eq!(read, steps);
        assert_eq!(read_step_message("Memories to check"), None);
    }
}
