//! The agent's tools: `ctx_reduce`, `ctx_expand`, `ctx_note`, `ctx_memory`, `ctx_search`
//! (DESIGN §6).
//!
//! This is the one implementation of each; the MCP server (`magic-context mcp`) and the
//! proxy's own tool execution both call [`call_tool`], so the two ways to reach a tool can
//! never answer differently. A tool never fails at the protocol level: bad input and store
//! failures come back as an [`ToolAnswer`] marked as an error, with a sentence the model can
//! act on. Every tool acts within one project and one session, both fixed by the caller
//! ([`ToolContext`]); nothing here can reach another project's rows, except the memories
//! another project of the caller's workspaces shares with it, which `ctx_memory` and
//! `ctx_search` read and never change.

mod expand;
mod guidance;
mod memory;
mod note;
mod offer;
mod reduce;
mod search;
mod shared_memory;

use mc_core::{ProjectId, SessionId};
use mc_store::{ReadTx, StoreError};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::Engine;
use crate::search::SemanticSearch;

pub use expand::{EXPAND_BUDGET_TOKENS, ExpandArgs};
pub use guidance::{HOST_COMPACTS_GUIDANCE, TOOL_GUIDANCE};
pub use memory::{MemoryAction, MemoryArgs};
pub use note::{NoteAction, NoteArgs};
pub use offer::{Offer, offer};
pub use reduce::ReduceArgs;
pub use search::SearchArgs;

/// What a tool call runs against: fixed by whoever serves the tools, never by the model.
pub struct ToolContext<'a> {
    /// The engine, over the store every tool reads and writes.
    pub engine: &'a Engine,
    /// The project the calls act in; `None` when the working directory is no project.
    pub project: Option<ProjectId>,
    /// The session the calls act for; `None` when the caller could not tell.
    pub session: Option<SessionId>,
    /// The semantic signal for `ctx_search`, when an embedding model is configured.
    pub semantic: Option<&'a dyn SemanticSearch>,
    /// Now, unix milliseconds (a parameter so tests run on a fixed clock).
    pub now_ms: i64,
}

/// A tool's answer: text for the model, and whether the call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolAnswer {
    /// What the model reads.
    pub text: String,
    /// The call did nothing (bad input, unknown id, store failure); the text says why.
    pub is_error: bool,
}

impl ToolAnswer {
    /// A successful answer.
    pub fn ok(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: false,
        }
    }

    /// A failed call, with what to do instead.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: true,
        }
    }

    /// A store failure, said so the model knows a retry may work and the input was fine.
    pub(crate) fn store(error: &StoreError) -> Self {
        Self::error(format!(
            "the context store failed ({error}); your input was fine, try again shortly"
        ))
    }
}

/// One tool as offered to a model: its name, what it is for, and its input's JSON Schema.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The name the model calls.
    pub name: &'static str,
    /// When to use it, for the model.
    pub description: &'static str,
    /// The JSON Schema of its arguments (always an object schema).
    pub input_schema: Map<String, Value>,
}

/// The five tools, in a fixed order so the bytes of a tools list never change between
/// calls (the list sits in the cached prefix).
pub fn tool_specs() -> Vec<ToolSpec> {
    vec![
        spec::<ReduceArgs>(reduce::NAME, reduce::DESCRIPTION),
        spec::<ExpandArgs>(expand::NAME, expand::DESCRIPTION),
        spec::<NoteArgs>(note::NAME, note::DESCRIPTION),
        spec::<MemoryArgs>(memory::NAME, memory::DESCRIPTION),
        spec::<SearchArgs>(search::NAME, search::DESCRIPTION),
    ]
}

fn spec<T: schemars::JsonSchema>(name: &'static str, description: &'static str) -> ToolSpec {
    let schema = schemars::schema_for!(T);
    let mut input_schema = match schema.to_value() {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    // The envelope's meta fields mean nothing to a model; the type name is not the tool's.
    input_schema.remove("$schema");
    input_schema.remove("title");
    input_schema
        .entry("type")
        .or_insert_with(|| Value::String("object".to_owned()));
    ToolSpec {
        name,
        description,
        input_schema,
    }
}

/// Runs tool `name` with the JSON `arguments` the model sent.
pub fn call_tool(ctx: &ToolContext<'_>, name: &str, arguments: Value) -> ToolAnswer {
    match name {
        reduce::NAME => with_args(arguments, |args| reduce::run(ctx, &args)),
        expand::NAME => with_args(arguments, |args| expand::run(ctx, &args)),
        note::NAME => with_args(arguments, |args| note::run(ctx, &args)),
        memory::NAME => with_args(arguments, |args| memory::run(ctx, &args)),
        search::NAME => with_args(arguments, |args| search::run(ctx, &args)),
        other => ToolAnswer::error(format!(
            "there is no tool `{other}`; the tools are ctx_reduce, ctx_expand, ctx_note, \
             ctx_memory and ctx_search"
        )),
    }
}

/// Decodes the arguments (a missing object counts as `{}`), answering a decode failure with
/// serde's own sentence: it names the field and what was expected.
fn with_args<T: DeserializeOwned>(
    arguments: Value,
    run: impl FnOnce(T) -> ToolAnswer,
) -> ToolAnswer {
    let arguments = match arguments {
        Value::Null => Value::Object(Map::new()),
        other => other,
    };
    match serde_json::from_value::<T>(arguments) {
        Ok(args) => run(args),
        Err(error) => ToolAnswer::error(format!("invalid arguments: {error}")),
    }
}

/// The caller's session, checked to exist and to belong to the caller's project; an error
/// answer says what is missing.
pub(crate) fn bound_session(
    tx: &ReadTx<'_>,
    ctx: &ToolContext<'_>,
    tool: &str,
) -> Result<Result<SessionId, ToolAnswer>, StoreError> {
    let Some(session) = &ctx.session else {
        return Ok(Err(ToolAnswer::error(format!(
            "{tool} needs a session, and this server was started without one: set \
             MAGIC_CONTEXT_SESSION (or run under Claude Code, which sets \
             CLAUDE_CODE_SESSION_ID) for the MCP server; without either it takes the \
             project's one conversation the proxy served in the last five minutes, and \
             there was none or more than one"
        ))));
    };
    let Some(record) = tx.get_session(session)? else {
        return Ok(Err(ToolAnswer::error(format!(
            "session `{session}` has no stored messages yet; {tool} works once the proxy \
             has handled a request of this conversation"
        ))));
    };
    if let (Some(own), Some(asked)) = (&record.project, &ctx.project)
        && own != asked
    {
        return Ok(Err(ToolAnswer::error(format!(
            "session `{session}` belongs to another project; {tool} only acts in the \
             project of the working directory"
        ))));
    }
    Ok(Ok(session.clone()))
}

/// The caller's project, or an error answer saying why there is none.
pub(crate) fn bound_project<'a>(
    ctx: &'a ToolContext<'_>,
    tool: &str,
) -> Result<&'a ProjectId, ToolAnswer> {
    ctx.project.as_ref().ok_or_else(|| {
        ToolAnswer::error(format!(
            "{tool} needs a project, and the working directory of this server is not one \
             it can identify; start the server inside the project"
        ))
    })
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod workspace_tests;
