//! `magic-context mcp`: the agent tools over MCP on stdio (DESIGN §6, Way 1).
//!
//! An MCP client (Claude Code with `--mcp-config`) starts this as a child process and speaks
//! JSON-RPC on its stdin/stdout, so stdout carries the protocol only and logs go to stderr.
//! The tools are `mc_engine::tools`, the same code the proxy runs; this module only binds
//! them to a project (the working directory) and a session, and translates answers.
//!
//! Session binding, per call (the proxy may create the session after this server starts):
//! `MAGIC_CONTEXT_SESSION` names a stored session exactly (as the `x-magic-context-session`
//! header does); else `CLAUDE_CODE_SESSION_ID` is the client's id, which the proxy splits
//! into lanes `cc-<id>-<lane>`, and the main lane is taken to be the one with the most
//! messages (title and summary side calls stay short). Without either (Codex and OpenCode
//! pass their MCP servers no conversation id), a call acts for the project's one live
//! conversation: the only session of the project the proxy served in the last
//! [`LIVE_WINDOW_MS`] (a fork counts with the session it branched from), which is the one
//! whose model is calling the tool; with none or several, memory and search still work for
//! the project and the other tools say what is missing.
//!
//! Checked with the real binary (Claude Code 2.1.197, `-p` with `--mcp-config`), and
//! recorded by the end-to-end test `tests/it/claude_code_mcp.rs`: the MCP server's
//! environment carries `CLAUDE_CODE_SESSION_ID`, equal to the `X-Claude-Code-Session-Id`
//! header of that session's API requests (what the proxy keys lanes on) and unchanged by
//! `--resume`, and `CLAUDE_PROJECT_DIR`; the server starts in Claude Code's working directory,
//! once per Claude Code process. The rest of its environment is Claude Code's own (API key
//! included: never log it) plus the config entry's `env`. Its next API request offers the
//! five tools as `mcp__magic-context__ctx_*` and carries the server's instructions (the
//! guidance block) once, under "# MCP Server Instructions" in a system-role message near the
//! start of the conversation, not in the system prompt.
//!
//! It opens the store like every other command and may run beside `serve`: the store's
//! writer rule holds across processes.

use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;
use clap::Args;
use mc_config::{ConfigSources, find_project_root, load};
use mc_core::{ProjectId, SessionId, SessionMode};
use mc_engine::Engine;
use mc_engine::search::{EmbeddedSearch, SemanticSearch};
use mc_engine::tools::{Offer, ToolAnswer, ToolContext, call_tool, offer};
use mc_store::{LocationEnv, Platform, Store, StoreOptions, resolve_data_dir};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

use crate::search_cmd::semantic_signal;
use crate::team_link::{start_team_sync, team_link};
use crate::workspace_members::configured_workspaces;

/// The environment variable naming the stored session the tools act for.
pub const SESSION_ENV: &str = "MAGIC_CONTEXT_SESSION";
/// The environment variable Claude Code sets for the MCP servers it starts.
pub const CLAUDE_CODE_SESSION_ENV: &str = "CLAUDE_CODE_SESSION_ID";

/// How recently the proxy must have served a session for an unbound server to take it as
/// the project's live conversation: a tool call follows the model's answer to a request the
/// proxy just served, so minutes are plenty, and a longer window would see finished ones.
pub const LIVE_WINDOW_MS: i64 = 5 * 60 * 1000;

/// Arguments of `mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {}

/// Serves the tools on stdio until the client closes the stream.
pub fn run(_args: &McpArgs) -> anyhow::Result<ExitCode> {
    let directory = std::env::current_dir().context("cannot read the current directory")?;
    let project = mc_proxy::identify_project(&directory);
    if project.is_none() {
        tracing::warn!(directory = %directory.display(), "no project here: memory and search tools will refuse");
    }
    let binding = Binding::from_env();
    let loaded = load(&ConfigSources::discover(Some(&find_project_root(
        &directory,
    ))));
    for diagnostic in &loaded.diagnostics {
        tracing::warn!(%diagnostic, "configuration value ignored");
    }
    let location = resolve_data_dir(&LocationEnv::from_process(), Platform::current())
        .context("cannot find the data directory")?;
    let open = || {
        Store::open_location(&location, StoreOptions::default())
            .with_context(|| format!("cannot open the store {}", location.db_path().display()))
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let workspaces = configured_workspaces(&loaded.config);
    let team = team_link(&loaded.config, runtime.handle());
    let engine = Engine::new(open()?, loaded.config).with_workspaces(workspaces);
    let engine = match &team {
        Some(link) => engine.with_team_store(Arc::clone(link)),
        None => engine,
    };
    if let Some(project) = &project {
        crate::search_cmd::index_commits(engine.store(), project, &directory);
    }
    // The embedding runtime lives here, outside the server's runtime, so it is dropped on
    // this thread after the server stopped (a runtime cannot be dropped inside another).
    let semantic = semantic_signal(&Arc::new(open()?), &location.dir);
    let (semantic_runtime, semantic) = match semantic {
        Some((runtime, signal)) => (Some(runtime), Some(signal)),
        None => (None, None),
    };
    let server = McpServer {
        offer: offer(engine.config().compaction.enabled),
        shared: Arc::new(Mutex::new(Shared {
            engine,
            semantic,
            project,
            binding,
        })),
    };
    runtime.block_on(async {
        if let Some(link) = &team {
            start_team_sync(link);
        }
        let service = server
            .serve(rmcp::transport::stdio())
            .await
            .context("the MCP client did not initialise the session")?;
        service
            .waiting()
            .await
            .context("the MCP server stopped abnormally")?;
        anyhow::Ok(())
    })?;
    drop(runtime);
    drop(semantic_runtime);
    Ok(ExitCode::SUCCESS)
}

/// How calls find their session.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Binding {
    /// `MAGIC_CONTEXT_SESSION`: this stored session.
    Explicit(SessionId),
    /// `CLAUDE_CODE_SESSION_ID`: the main lane of this client id.
    ClaudeCode(String),
    /// Neither was set (or the value was unusable): the project's live conversation.
    Unbound,
}

impl Binding {
    fn from_env() -> Self {
        let read = |name: &str| {
            std::env::var(name)
                .ok()
                .filter(|value| !value.trim().is_empty())
        };
        Self::from_values(read(SESSION_ENV), read(CLAUDE_CODE_SESSION_ENV))
    }

    fn from_values(explicit: Option<String>, claude_code: Option<String>) -> Self {
        if let Some(id) = explicit {
            match SessionId::new(id.trim()) {
                Ok(session) => return Self::Explicit(session),
                Err(error) => tracing::warn!(%error, "{SESSION_ENV} is not a session id; ignored"),
            }
        }
        match claude_code {
            Some(id) => Self::ClaudeCode(id.trim().to_owned()),
            None => Self::Unbound,
        }
    }

    /// The session a call acts for now: for a client id, its lane with the most messages
    /// (the newest on a tie) that is not a Task subagent's (a subagent may outgrow the main
    /// conversation it works for), or the unlaned id when the proxy has stored none yet, so
    /// the tools say the session has no messages rather than that there is no session.
    fn resolve(
        &self,
        store: &Store,
        project: Option<&ProjectId>,
        now_ms: i64,
    ) -> Option<SessionId> {
        match self {
            Self::Explicit(session) => Some(session.clone()),
            Self::Unbound => live_session(store, project?, now_ms),
            Self::ClaudeCode(id) => {
                let prefix = format!("cc-{id}-");
                let lanes = store.read(|tx| {
                    let mut counted = Vec::new();
                    for record in tx.sessions_with_prefix(&prefix)? {
                        if record.mode == SessionMode::Subagent {
                            continue;
                        }
                        let count = tx.message_count(&record.id)?;
                        counted.push((record.id, count));
                    }
                    Ok(counted)
                });
                let lanes = lanes
                    .inspect_err(
                        |error| tracing::warn!(%error, "cannot list the client's sessions"),
                    )
                    .unwrap_or_default();
                // Most recently seen first; the first of the largest wins a tie.
                let mut best: Option<(SessionId, u64)> = None;
                for (session, count) in lanes {
                    if best.as_ref().is_none_or(|(_, most)| count > *most) {
                        best = Some((session, count));
                    }
                }
                best.map(|(session, _)| session)
                    .or_else(|| SessionId::new(format!("cc-{id}")).ok())
            }
        }
    }
}

/// The project's one live conversation: the session the proxy served most recently within
/// [`LIVE_WINDOW_MS`] of `now_ms`, when every other one it served then is a session it
/// branched from (a rewind); `None` when there is none, or several conversations are live.
fn live_session(store: &Store, project: &ProjectId, now_ms: i64) -> Option<SessionId> {
    let since = now_ms.saturating_sub(LIVE_WINDOW_MS);
    let live = store.read(|tx| {
        let live = tx.project_sessions_seen_since(project, since)?;
        let Some(newest) = live.first() else {
            return Ok(None);
        };
        let mut lineage = vec![newest.id.clone()];
        let mut fork = newest.fork.clone();
        while let Some(point) = fork.take()
            && lineage.len() < MAX_LINEAGE
        {
            fork = tx
                .get_session(&point.parent)?
                .and_then(|parent| parent.fork);
            lineage.push(point.parent);
        }
        let one = live.iter().all(|session| lineage.contains(&session.id));
        Ok(one.then(|| newest.id.clone()))
    });
    live.inspect_err(|error| tracing::warn!(%error, "cannot list the project's sessions"))
        .ok()
        .flatten()
}

/// How many forks back an unbound server looks for a live session's ancestors.
const MAX_LINEAGE: usize = 64;

/// What every call needs, behind one lock: calls run one at a time, as a model makes them.
struct Shared {
    engine: Engine,
    semantic: Option<EmbeddedSearch>,
    project: Option<ProjectId>,
    binding: Binding,
}

impl Shared {
    fn call(&self, name: &str, arguments: Value) -> ToolAnswer {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| {
                i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
            });
        let ctx = ToolContext {
            engine: &self.engine,
            project: self.project.clone(),
            session: self
                .binding
                .resolve(self.engine.store(), self.project.as_ref(), now_ms),
            semantic: self
                .semantic
                .as_ref()
                .map(|signal| signal as &dyn SemanticSearch),
            now_ms,
        };
        call_tool(&ctx, name, arguments)
    }
}

/// The MCP handler: lists the tools and runs calls on a blocking thread (SQLite and the
/// embedding model never run on the runtime's thread).
#[derive(Clone)]
struct McpServer {
    /// The tools listed and the instructions given (no `ctx_reduce` with compaction off).
    offer: Offer,
    shared: Arc<Mutex<Shared>>,
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "magic-context",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(self.offer.guidance)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .offer
            .specs
            .iter()
            .map(|spec| Tool::new(spec.name, spec.description, spec.input_schema.clone()))
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let shared = Arc::clone(&self.shared);
        let name = request.name.to_string();
        let arguments = request.arguments.map_or(Value::Null, Value::Object);
        let answer = tokio::task::spawn_blocking(move || {
            shared
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .call(&name, arguments)
        })
        .await
        .unwrap_or_else(|error| {
            ToolAnswer::error(format!("the tool stopped unexpectedly: {error}"))
        });
        let content = vec![ContentBlock::text(answer.text)];
        Ok(if answer.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        }
        .into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_explicit_session_wins_over_the_client_id() {
        assert_eq!(
            Binding::from_values(Some("s1".into()), Some("abc".into())),
            Binding::Explicit(SessionId::new("s1").unwrap())
        );
        assert_eq!(
            Binding::from_values(None, Some(" abc ".into())),
            Binding::ClaudeCode("abc".into())
        );
        assert_eq!(Binding::from_values(None, None), Binding::Unbound);
    }

    /// Without an id, the project's one live conversation is taken: a rewind's fork counts
    /// with the session it branched from; a second conversation makes it ambiguous; another
    /// project's and finished ones do not count.
    #[test]
    fn an_unbound_server_takes_the_projects_one_live_conversation() {
        use mc_core::Host;
        use mc_store::NewSession;

        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        let project = ProjectId::new("p1").unwrap();
        let now = 1_800_000_000_000_i64;
        let id = |name: &str| SessionId::new(name).unwrap();
        let add = |name: &str, project: &str, at: i64| {
            let session = NewSession {
                id: id(name),
                host: Host::Codex,
                project: Some(ProjectId::new(project).unwrap()),
            };
            store.write(|tx| tx.upsert_session(&session, at)).unwrap();
        };
        let live = || live_session(&store, &project, now);
        add("finished", "p1", now - 2 * LIVE_WINDOW_MS);
        add("elsewhere", "p2", now);
        assert_eq!(live(), None);
        add("main", "p1", now - 1_000);
        assert_eq!(live(), Some(id("main")));
        store
            .write(|tx| tx.fork_session(&id("main"), &id("rewound"), 0, now))
            .unwrap();
        assert_eq!(live(), Some(id("rewound")));
        add("second", "p1", now - 500);
        assert_eq!(live(), None);
    }
}
