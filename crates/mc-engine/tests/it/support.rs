//! A real engine over a real SQLite store in a tempdir, and readers of what it stored.
//!
//! Tests drive `Engine::pass` exactly as the proxy would: the client's whole conversation on
//! every call, a simulated clock, and the previous response's usage. Token counts use a fixed
//! bytes/4 estimate so every run is deterministic.

use std::borrow::Borrow;
use std::collections::BTreeSet;

use mc_core::breakpoints::CacheTtlChoice;
use mc_core::config::Config;
use mc_core::reclaim::ReclaimConfig;
use mc_core::tags::{TagAssignment, TagNo};
use mc_core::{Host, Message, Part, SessionId};
use mc_engine::{Engine, PassOutcome, PassRequest};
use mc_store::{DropRow, PassRow, Store, StoredMessage};

/// Model every generated request names.
pub const MODEL: &str = "claude-sonnet-4-5";
/// The model a generated session switches to (and back from) now and then.
pub const OTHER_MODEL: &str = "claude-opus-4-5";
/// Identity of the (unchanging) system prompt and tools.
pub const PREFIX: &str = "system-v1";
/// Unix ms of the first request of every session: a fixed instant, never the wall clock.
pub const START_MS: u64 = 1_795_952_640_000;

/// `turns` messages, user and assistant in turn, each twenty words of its own.
pub fn conversation(turns: usize) -> Vec<Message> {
    (0..turns)
        .map(|turn| {
            let role = if turn % 2 == 0 {
                mc_core::Role::User
            } else {
                mc_core::Role::Assistant
            };
            Message::new(role, vec![Part::text(format!("turn {turn} ").repeat(20))])
        })
        .collect()
}

/// The deterministic token estimate: a token per four bytes.
pub fn count(text: &str) -> u64 {
    text.len() as u64 / 4
}

/// The estimate of one part, the same way the engine counts it (with its block framing).
pub fn part_tokens(part: &Part) -> u64 {
    let content = match part {
        Part::Text { text, .. } => count(text),
        Part::ToolCall { id, name, input } => count(id) + count(name) + count(&input.to_string()),
        Part::ToolResult {
            call_id, content, ..
        } => count(call_id) + content.iter().map(part_tokens).sum::<u64>(),
        Part::Thinking { text, .. } => count(text),
        Part::RedactedThinking { data } => count(data),
        Part::Media { media, source } => {
            mc_core::media::inspect_media(*media, source).tokens(&count)
        }
        Part::Unknown { raw, .. } => match mc_core::media::without_media(raw, &count) {
            Some((stripped, media_tokens)) => count(&stripped.to_string()) + media_tokens,
            None => count(&raw.to_string()),
        },
    };
    6 + content
}

/// What the rendered conversation costs: the usage the next request reports.
pub fn rendered_tokens<M: Borrow<Message>>(messages: &[M]) -> u64 {
    messages
        .iter()
        .flat_map(|message| &message.borrow().parts)
        .map(part_tokens)
        .sum()
}

/// One client request, minus the fixed fields.
#[derive(Debug, Clone)]
pub struct Call<'a> {
    pub model: &'a str,
    pub messages: &'a [Message],
    pub now_ms: u64,
    pub usable_window: u64,
    pub last_usage_tokens: Option<u64>,
    pub operator_flush: bool,
}

/// An engine with its own store in its own tempdir.
pub struct Harness {
    pub engine: Engine,
    pub session: SessionId,
    /// Estimated tokens of the system prompt and tools every call carries (0 unless set).
    pub fixed_tokens: std::cell::Cell<u64>,
    /// Whether the model can call `ctx_reduce` (false unless set).
    pub reduce_tool: std::cell::Cell<bool>,
    /// The mode every pass names (primary unless set).
    pub mode: std::cell::Cell<mc_core::SessionMode>,
    /// The session every pass says the conversation continues (none unless set).
    pub continues: std::cell::RefCell<Option<SessionId>>,
    /// The project docs each call reads from the project's folder (none unless set).
    pub project_docs: std::cell::RefCell<Vec<mc_core::head::ProjectDoc>>,
    /// Docs that replace [`Self::project_docs`] from the pass with this index on (counting
    /// every pass of the harness from 0): a doc edited mid-session.
    pub docs_edit: std::cell::RefCell<Option<(usize, Vec<mc_core::head::ProjectDoc>)>>,
    /// Passes run so far.
    pub passes_run: std::cell::Cell<usize>,
    /// Per session, the latest passes and their rendered sizes: a call that reports one of
    /// those sizes as its usage reports that pass's request, as the proxy's ledger would say
    /// (a retry reports the pass before the one it repeats).
    sent: std::cell::RefCell<std::collections::HashMap<SessionId, Vec<(u64, u64)>>>,
    /// Whether usage reports are paired with their pass (and so learned from).
    pairs_usage: bool,
    dir: tempfile::TempDir,
}

impl Harness {
    pub fn new() -> Self {
        Self::with_config(Config::default())
    }

    /// A harness whose usage reports name no pass, so no token correction is learned (the
    /// correction is per model, shared by every session of a store by design).
    pub fn not_learning() -> Self {
        Self {
            pairs_usage: false,
            ..Self::new()
        }
    }

    pub fn with_config(config: Config) -> Self {
        Self::with_reclaim(config, ReclaimConfig::default())
    }

    pub fn with_reclaim(config: Config, reclaim: ReclaimConfig) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        Self {
            engine: Engine::with_reclaim(store, config, reclaim),
            session: SessionId::new("session-under-test").unwrap(),
            fixed_tokens: std::cell::Cell::new(0),
            reduce_tool: std::cell::Cell::new(false),
            mode: std::cell::Cell::new(mc_core::SessionMode::Primary),
            continues: std::cell::RefCell::new(None),
            project_docs: std::cell::RefCell::new(Vec::new()),
            docs_edit: std::cell::RefCell::new(None),
            passes_run: std::cell::Cell::new(0),
            sent: std::cell::RefCell::default(),
            pairs_usage: true,
            dir,
        }
    }

    /// The harness with `workspaces`' memberships in its engine.
    pub fn with_workspaces(self, workspaces: mc_core::workspace::Workspaces) -> Self {
        Self {
            engine: self.engine.with_workspaces(workspaces),
            ..self
        }
    }

    /// Stores the harness's session as one of `project`'s.
    pub fn bind_project(&self, project: &mc_core::ProjectId) {
        self.engine
            .store()
            .write(|tx| {
                tx.upsert_session(
                    &mc_store::NewSession {
                        id: self.session.clone(),
                        host: Host::ClaudeCode,
                        project: Some(project.clone()),
                    },
                    0,
                )
            })
            .unwrap();
    }

    /// The harness with its project knowledge in `team`: a second handle on its store file
    /// holds the team store's cache and queue, and `runtime` runs the team store's calls.
    /// Returns the sync a proxy's background loop would drive.
    pub fn with_team_store(
        self,
        team: mc_team_store::TeamStore,
        runtime: &tokio::runtime::Handle,
    ) -> (Self, mc_team_store::TeamSync) {
        let store = Store::open(self.dir.path().join("context.db")).unwrap();
        let sync = mc_team_store::TeamSync::new(std::sync::Arc::new(store), team);
        let link = mc_engine::TeamLink::new(sync.clone(), runtime.clone());
        let harness = Self {
            engine: self.engine.with_team_store(link),
            ..self
        };
        (harness, sync)
    }

    /// A process restart: a new engine over the same file, with nothing kept in memory.
    pub fn restart(&mut self) {
        let config = self.engine.config().clone();
        let reclaim = self.engine.reclaim_config().clone();
        let store = Store::open(self.dir.path().join("context.db")).unwrap();
        self.engine = Engine::with_reclaim(store, config, reclaim);
    }

    pub fn pass(&self, call: &Call<'_>) -> mc_engine::Result<PassOutcome> {
        self.pass_for(&self.session, call)
    }

    /// A pass of another session in the same store.
    pub fn pass_for(&self, session: &SessionId, call: &Call<'_>) -> mc_engine::Result<PassOutcome> {
        let usage_pass = call
            .last_usage_tokens
            .filter(|_| self.pairs_usage)
            .and_then(|usage| {
                let sent = self.sent.borrow();
                let passes = sent.get(session)?;
                passes
                    .iter()
                    .rev()
                    .find(|&&(_, tokens)| tokens == usage)
                    .map(|&(seq, _)| seq)
            });
        self.pass_paired(session, call, usage_pass)
    }

    /// A pass whose reported usage counted the request of pass `usage_pass`, as the proxy's
    /// ledger would say.
    pub fn pass_reporting(
        &self,
        call: &Call<'_>,
        usage_pass: Option<u64>,
    ) -> mc_engine::Result<PassOutcome> {
        self.pass_paired(&self.session, call, usage_pass)
    }

    fn pass_paired(
        &self,
        session: &SessionId,
        call: &Call<'_>,
        usage_pass: Option<u64>,
    ) -> mc_engine::Result<PassOutcome> {
        let counter = count;
        let run = self.passes_run.replace(self.passes_run.get() + 1);
        let docs = match &*self.docs_edit.borrow() {
            Some((from, edited)) if run >= *from => edited.clone(),
            _ => self.project_docs.borrow().clone(),
        };
        let continues = self.continues.borrow().clone();
        let outcome = self.engine.pass(&PassRequest {
            session,
            host: Host::ClaudeCode,
            mode: self.mode.get(),
            spawned_by: None,
            continues: continues.as_ref(),
            project: None,
            model: call.model,
            prefix_identity: PREFIX,
            system_blocks: 1,
            messages: call.messages,
            chain: None,
            now_ms: call.now_ms,
            usable_window: Some(call.usable_window),
            fixed_tokens: self.fixed_tokens.get(),
            last_usage_tokens: call.last_usage_tokens,
            last_usage_pass: usage_pass,
            operator_flush: call.operator_flush,
            reduce_tool: self.reduce_tool.get(),
            project_docs: &docs,
            client_ttl: CacheTtlChoice::Default,
            count_text: &counter,
        });
        if let Ok(outcome) = &outcome {
            let mut sent = self.sent.borrow_mut();
            let passes = sent.entry(session.clone()).or_default();
            passes.push((outcome.seq, rendered_tokens(&outcome.messages)));
            let excess = passes.len().saturating_sub(4);
            passes.drain(..excess);
        }
        outcome
    }

    pub fn snapshot(&self) -> StoreSnapshot {
        let session = &self.session;
        self.engine
            .store()
            .read(|tx| {
                Ok(StoreSnapshot {
                    messages: tx.messages(session, ..)?,
                    tags: tx.tags(session)?,
                    drops: tx.drops(session)?,
                    engine_state: tx.engine_state(session)?,
                    passes: tx.passes(session, usize::MAX >> 1)?,
                })
            })
            .unwrap()
    }
}

/// Everything the store holds for the session under test.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreSnapshot {
    pub messages: Vec<StoredMessage>,
    pub tags: Vec<TagAssignment>,
    pub drops: Vec<DropRow>,
    pub engine_state: Option<String>,
    pub passes: Vec<PassRow>,
}

impl StoreSnapshot {
    pub fn landed(&self) -> BTreeSet<TagNo> {
        self.drops
            .iter()
            .filter(|row| row.landed_pass.is_some())
            .map(|row| row.tag)
            .collect()
    }

    pub fn queued(&self) -> BTreeSet<TagNo> {
        self.drops
            .iter()
            .filter(|row| row.landed_pass.is_none())
            .map(|row| row.tag)
            .collect()
    }

    /// The raw log as plain messages.
    pub fn raw_log(&self) -> Vec<Message> {
        self.messages
            .iter()
            .map(|stored| stored.message.clone())
            .collect()
    }
}
