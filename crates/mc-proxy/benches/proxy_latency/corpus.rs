//! The material the benchmark's requests are built from: Claude Code's recorded system
//! prompt and tools, and recorded SWE-bench agent steps.

use std::path::Path;

use bytes::Bytes;
use mc_sim::{CountTokens, O200kCounter};
use serde_json::{Map, Value, json};

use super::{MAX_OUTPUT_CHARS, Result};

/// The material requests are built from.
pub struct Corpus {
    /// The recorded Claude Code request's fields other than `messages`.
    skeleton: Map<String, Value>,
    /// o200k tokens of a body holding only the task.
    task_body_tokens: usize,
    /// The opening user message: a real task description.
    task: String,
    /// Agent steps: (the assistant's reasoning, its shell command, the command's output).
    steps: Vec<Step>,
}

struct Step {
    thought: String,
    command: String,
    output: String,
    /// o200k tokens of the two messages it becomes.
    tokens: usize,
}

impl Step {
    pub fn messages(&self, id: &str) -> [Value; 2] {
        [
            json!({"role": "assistant", "content": [
                {"type": "text", "text": self.thought},
                {"type": "tool_use", "id": id, "name": "Bash",
                 "input": {"command": self.command, "description": "Run the next command"}}
            ]}),
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": id, "content": self.output}
            ]}),
        ]
    }
}

impl Corpus {
    pub fn load(data: &Path, o200k: &O200kCounter) -> Result<Self> {
        let capture =
            std::fs::read_to_string(data.join("anthropic-capture/claude-code-traffic.jsonl"))?;
        let mut skeleton: Option<Map<String, Value>> = None;
        let mut largest = 0;
        for line in capture.lines() {
            let row: Value = serde_json::from_str(line)?;
            if let Some(Value::Object(body)) = row.pointer("/request/body")
                && body.contains_key("tools")
                && line.len() > largest
            {
                largest = line.len();
                skeleton = Some(body.clone());
            }
        }
        let mut skeleton = skeleton.ok_or("the capture has no request with tools")?;
        skeleton.remove("messages");
        skeleton.insert("stream".into(), Value::Bool(true));

        let mut files: Vec<_> = std::fs::read_dir(data.join("swe-trajectories"))?
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.to_string_lossy().ends_with(".traj.json"))
            .collect();
        files.sort();
        let mut task = None;
        let mut steps = Vec::new();
        for file in files {
            let run: Value = serde_json::from_slice(&std::fs::read(&file)?)?;
            let Some(Value::Array(messages)) = run.get("messages") else {
                continue;
            };
            let text = |message: &Value| match message.get("content") {
                Some(Value::String(text)) => text.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            if task.is_none() {
                task = messages.get(1).map(text);
            }
            for pair in messages.get(2..).unwrap_or_default().chunks_exact(2) {
                let said = text(&pair[0]);
                let Some((thought, rest)) = said.split_once("```bash\n") else {
                    continue;
                };
                let command = rest
                    .split_once("\n```")
                    .map_or(rest, |(command, _)| command);
                let mut step = Step {
                    thought: thought.trim().to_owned(),
                    command: command.to_owned(),
                    output: clip(text(&pair[1]), MAX_OUTPUT_CHARS),
                    tokens: 0,
                };
                let [asked, answered] = step.messages("toolu_bench00000000");
                let tokens = o200k.count_tokens(&asked.to_string())
                    + o200k.count_tokens(&answered.to_string());
                step.tokens = usize::try_from(tokens)?;
                steps.push(step);
            }
        }
        let task = task.ok_or("no trajectory has a task")?;
        if steps.is_empty() {
            return Err("no trajectory has shell steps".into());
        }
        let mut corpus = Self {
            skeleton,
            task_body_tokens: 0,
            task,
            steps,
        };
        let only_task = Conversation {
            messages: vec![corpus.task_message()],
            next_step: 0,
            calls: 0,
        };
        let body = only_task.body(&corpus)?;
        corpus.task_body_tokens = usize::try_from(o200k.count_tokens(std::str::from_utf8(&body)?))?;
        Ok(corpus)
    }

    pub fn task_message(&self) -> Value {
        json!({"role": "user", "content": [{"type": "text", "text": self.task}]})
    }

    /// The recorded tool definitions (Anthropic's form).
    fn tools(&self) -> impl Iterator<Item = &Value> {
        self.skeleton
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
    }

    /// The recorded system prompt's text, its blocks joined.
    fn system_text(&self) -> String {
        match self.skeleton.get("system") {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Array(blocks)) => blocks
                .iter()
                .filter_map(|block| block.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n\n"),
            _ => String::new(),
        }
    }

    fn step(&self, index: usize) -> &Step {
        &self.steps[index % self.steps.len()]
    }
}

/// A growing conversation: the task, then one assistant tool_use / user tool_result pair
/// per agent step.
pub struct Conversation {
    messages: Vec<Value>,
    /// The next corpus step to add.
    next_step: usize,
    /// Tool calls so far, for unique ids.
    calls: usize,
}

impl Conversation {
    /// A conversation starting at corpus step `first_step`, with as many steps as make its
    /// body reach `tokens` after `grows` more calls of [`Self::grow`] (at least one step).
    pub fn sized(corpus: &Corpus, tokens: usize, first_step: usize, grows: usize) -> Self {
        let mut total = corpus.task_body_tokens;
        let mut steps = 0;
        while total < tokens {
            total += corpus.step(first_step + steps).tokens;
            steps += 1;
        }
        let mut conversation = Self {
            messages: vec![corpus.task_message()],
            next_step: first_step,
            calls: 0,
        };
        for _ in 0..steps.saturating_sub(grows).max(1) {
            conversation.grow(corpus);
        }
        conversation
    }

    /// Adds the next step: the assistant's tool call and the user's tool result.
    pub fn grow(&mut self, corpus: &Corpus) {
        let step = corpus.step(self.next_step);
        self.next_step += 1;
        self.calls += 1;
        let id = format!("toolu_bench{:08}", self.calls);
        self.messages.extend(step.messages(&id));
    }

    /// The request body: the recorded skeleton with this conversation as `messages`, the
    /// last block marked for caching as Claude Code marks it, so the simulator caches the
    /// direct calls' conversation as it does the proxied ones' (without it, every direct call
    /// re-wrote the conversation, costing the simulator more than the proxied call).
    pub fn body(&self, corpus: &Corpus) -> Result<Bytes> {
        self.body_with(corpus, true)
    }

    /// [`Self::body`] without the recorded `metadata` (whose `user_id` names a Claude Code
    /// session): a request as a client that is not Claude Code sends it.
    pub fn body_without_metadata(&self, corpus: &Corpus) -> Result<Bytes> {
        self.body_with(corpus, false)
    }

    /// The same conversation as a Chat Completions request, as OpenCode or Pi send it over
    /// that wire: the recorded system prompt as the leading `system` message, each tool call
    /// in the assistant message's `tool_calls`, each result a `tool` message, the recorded
    /// tools as functions, streamed with the usage chunk.
    pub fn chat_body(&self, corpus: &Corpus) -> Result<Bytes> {
        let mut messages = vec![json!({"role": "system", "content": corpus.system_text()})];
        for message in &self.messages {
            messages.extend(chat_messages(message));
        }
        let tools: Vec<Value> = corpus
            .tools()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.get("name"),
                    "description": tool.get("description"),
                    "parameters": tool.get("input_schema"),
                }})
            })
            .collect();
        let body = json!({
            "model": "gpt-4.1",
            "messages": messages,
            "tools": tools,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        Ok(Bytes::from(serde_json::to_vec(&body)?))
    }

    /// The conversation as OpenCode sends it on the Responses wire: the system prompt as
    /// `instructions`, each message as input items, the same tools as functions, streamed
    /// and not stored.
    pub fn responses_body(&self, corpus: &Corpus) -> Result<Bytes> {
        let input: Vec<Value> = self.messages.iter().flat_map(responses_items).collect();
        let tools: Vec<Value> = corpus
            .tools()
            .map(|tool| {
                json!({"type": "function", "name": tool.get("name"),
                       "description": tool.get("description"),
                       "parameters": tool.get("input_schema")})
            })
            .collect();
        let body = json!({
            "model": "gpt-5",
            "instructions": corpus.system_text(),
            "input": input,
            "tools": tools,
            "store": false,
            "stream": true,
            "prompt_cache_key": "bench-growing",
        });
        Ok(Bytes::from(serde_json::to_vec(&body)?))
    }

    fn body_with(&self, corpus: &Corpus, metadata: bool) -> Result<Bytes> {
        let mut messages = self.messages.clone();
        if let Some(block) = messages
            .last_mut()
            .and_then(|message| message.get_mut("content"))
            .and_then(Value::as_array_mut)
            .and_then(|blocks| blocks.last_mut())
            .and_then(Value::as_object_mut)
        {
            block.insert("cache_control".into(), json!({"type": "ephemeral"}));
        }
        let mut body = Map::with_capacity(corpus.skeleton.len() + 1);
        let mut pairs = corpus.skeleton.iter();
        // Keep Claude Code's key order: model first, then messages.
        if let Some((key, value)) = pairs.next() {
            body.insert(key.clone(), value.clone());
        }
        body.insert("messages".into(), Value::Array(messages));
        for (key, value) in pairs.filter(|(key, _)| metadata || key.as_str() != "metadata") {
            body.insert(key.clone(), value.clone());
        }
        Ok(Bytes::from(serde_json::to_vec(&Value::Object(body))?))
    }
}

/// An Anthropic-form message's role (a user's when it names none) and content blocks.
fn role_and_blocks(message: &Value) -> (&str, &[Value]) {
    let role = message
        .get("role")
        .and_then(Value::as_str)
        .unwrap_or("user");
    let blocks = message
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    (role, blocks)
}

/// One Anthropic-form message of the conversation as Chat messages: a user text as a user
/// message, an assistant's text and tool call as one assistant message with `tool_calls`,
/// a user's tool results as `tool` messages.
fn chat_messages(message: &Value) -> Vec<Value> {
    let (role, blocks) = role_and_blocks(message);
    let text: String = blocks
        .iter()
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    let calls: Vec<Value> = blocks
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool_use"))
        .map(|block| {
            let arguments = block.get("input").map(Value::to_string).unwrap_or_default();
            json!({"id": block.get("id"), "type": "function",
                   "function": {"name": block.get("name"), "arguments": arguments}})
        })
        .collect();
    let results: Vec<Value> = blocks
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool_result"))
        .map(|block| {
            json!({"role": "tool", "tool_call_id": block.get("tool_use_id"),
                   "content": block.get("content")})
        })
        .collect();
    if !results.is_empty() {
        return results;
    }
    if role == "assistant" && !calls.is_empty() {
        return vec![json!({"role": "assistant", "content": text, "tool_calls": calls})];
    }
    vec![json!({"role": role, "content": text})]
}

/// One Anthropic-form message of the conversation as Responses input items: a user text as a
/// user message, an assistant's text as an output message and its tool call as a
/// `function_call`, a user's tool results as `function_call_output` items.
fn responses_items(message: &Value) -> Vec<Value> {
    let (role, blocks) = role_and_blocks(message);
    let mut items = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") if role == "assistant" => items.push(json!({
                "type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": block.get("text"), "annotations": []}],
            })),
            Some("text") => items.push(json!({
                "role": "user",
                "content": [{"type": "input_text", "text": block.get("text")}],
            })),
            Some("tool_use") => items.push(json!({
                "type": "function_call", "call_id": block.get("id"), "name": block.get("name"),
                "arguments": block.get("input").map(Value::to_string).unwrap_or_default(),
            })),
            Some("tool_result") => {
                let output: String = match block.get("content") {
                    Some(Value::String(text)) => text.clone(),
                    Some(Value::Array(parts)) => parts
                        .iter()
                        .filter_map(|part| part.get("text").and_then(Value::as_str))
                        .collect(),
                    _ => String::new(),
                };
                items.push(json!({"type": "function_call_output",
                    "call_id": block.get("tool_use_id"), "output": output}));
            }
            _ => {}
        }
    }
    items
}

/// `text` cut to its first `max_chars` characters.
fn clip(mut text: String, max_chars: usize) -> String {
    if let Some((at, _)) = text.char_indices().nth(max_chars) {
        text.truncate(at);
    }
    text
}
