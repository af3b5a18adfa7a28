//! Which stored session a request belongs to (DESIGN §4, step 2).
//!
//! In order: an explicit `x-magic-context-session` header; else the client's own session id
//! (Claude Code's `X-Claude-Code-Session-Id` header or the `session_id` inside
//! `metadata.user_id`, OpenCode's `x-session-id`, Codex's `session-id` / `thread-id`, Pi's
//! `session_id` on Responses, else a Responses `prompt_cache_key`, which all three put their
//! session id in);
//! else the conversation's hash chain: the stored session whose messages this request
//! extends, within the request's [`ChainScope`].
//!
//! A client id alone does not make one conversation: Claude Code sends the same id with its
//! title and summary side calls and with every subagent, each a conversation of its own.
//! Those conversations differ from their first message, so a client id is split into lanes
//! by the hash of the first message. Within a lane, a request that extends no branch is a
//! rewind or an edit; the engine then forks (`ID~N`) and the original stays untouched.
//!
//! Without an id, the first message alone does not make one conversation either: two Pi
//! runs in different folders with the same first prompt (Pi names no session on the
//! Anthropic and Chat wires) would share a chain and land in one session as a fork. So a
//! chain is looked up within a scope, the request's project, else its system prompt: the
//! session is `chain-<scope>-<lane>` and its branches. The stored links themselves are not
//! changed (the engine compares them to detect rewinds, and stores written before hold
//! them), so the scope lives only in the id; sessions of such older stores, named
//! `chain-<lane>`, are still found by their links when no scoped session matches.
//!
//! Nor does the same first message on another wire or with another model family make one
//! conversation: a Chat run with no id whose system and first user message equal those of a
//! Responses run was filed as a fork of it. The scope therefore also holds the wire and the
//! model family, and a session found another way (named under the scope of stores written
//! before the wire counted, or `chain-<lane>`) is taken only when its latest recorded call
//! was on the same wire and family. Sessions named by a client id are never found by their
//! links: their client names them on every request.

use axum::http::HeaderMap;
use mc_core::{HashChain, Host, Message, ProjectId, SessionId, SessionMode, asks_for_summary};
use mc_store::{ReadTx, SessionRecord, StoreError};

use crate::headers::header_str;
use crate::provider::Provider;
use crate::windows::model_family;

/// The explicit session header.
pub const SESSION_HEADER: &str = "x-magic-context-session";

/// The header in which OpenCode names the session that spawned a child session (its task
/// tool's subagents), beside the child's own `x-session-id`.
const PARENT_SESSION_HEADER: &str = "x-parent-session-id";

/// What the request says about its session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionHints {
    /// The client program.
    pub host: Host,
    /// `x-magic-context-session`, when sent.
    pub explicit: Option<String>,
    /// The client's own session id, when it sends one.
    pub client_id: Option<String>,
    /// The client's id of the session that spawned this one, when the client names it
    /// (OpenCode's `x-parent-session-id` on a child session's requests).
    pub parent_id: Option<String>,
}

impl SessionHints {
    /// Reads the hints from the request's headers and Anthropic `metadata.user_id`.
    pub fn read(headers: &HeaderMap, metadata_user_id: Option<&str>) -> Self {
        let explicit = header_str(headers, SESSION_HEADER)
            .filter(|id| !id.is_empty())
            .map(str::to_owned);
        let user_agent = header_str(headers, "user-agent")
            .unwrap_or("")
            .to_ascii_lowercase();
        let claude_id = header_str(headers, "x-claude-code-session-id")
            .map(str::to_owned)
            .or_else(|| metadata_user_id.and_then(claude_session_in_user_id));
        let (host, client_id) = if let Some(id) = claude_id {
            (Host::ClaudeCode, Some(id))
        } else if let Some(id) = header_str(headers, "x-session-id") {
            (Host::OpenCode, Some(id.to_owned()))
        } else if let Some(id) =
            header_str(headers, "session-id").or_else(|| header_str(headers, "thread-id"))
        {
            (Host::Codex, Some(id.to_owned()))
        } else if let Some(id) = header_str(headers, "session_id") {
            (Host::Pi, Some(id.to_owned()))
        } else {
            (host_from_user_agent(&user_agent), None)
        };
        let parent_id = header_str(headers, PARENT_SESSION_HEADER)
            .filter(|id| !id.is_empty())
            .map(str::to_owned);
        Self {
            host,
            explicit,
            client_id: client_id.filter(|id| !id.is_empty()),
            parent_id,
        }
    }
}

impl SessionHints {
    /// Takes a Responses `prompt_cache_key` as the client's session id when the headers
    /// named none: Codex, OpenCode and Pi all put their session id there, and a client that
    /// keys OpenAI's cache by it means one conversation by it.
    pub fn or_prompt_cache_key(mut self, prompt_cache_key: Option<&str>) -> Self {
        if self.client_id.is_none() {
            self.client_id = prompt_cache_key
                .filter(|key| !key.is_empty())
                .map(str::to_owned);
        }
        self
    }
}

fn host_from_user_agent(user_agent: &str) -> Host {
    if user_agent.starts_with("claude-cli") || user_agent.contains("claude-code") {
        Host::ClaudeCode
    } else if user_agent.contains("opencode") {
        Host::OpenCode
    } else if user_agent.contains("codex") {
        Host::Codex
    } else {
        Host::Other
    }
}

/// The session id inside Claude Code's `metadata.user_id`: either a JSON object with a
/// `session_id`, or the older `user_…_account_…_session_<uuid>` string.
fn claude_session_in_user_id(user_id: &str) -> Option<String> {
    if user_id.trim_start().starts_with('{') {
        let value: serde_json::Value = serde_json::from_str(user_id).ok()?;
        return value
            .get("session_id")?
            .as_str()
            .filter(|id| !id.is_empty())
            .map(str::to_owned);
    }
    let (_, session) = user_id.rsplit_once("_session_")?;
    (!session.is_empty()).then(|| session.to_owned())
}

/// What keeps the hash chains of unrelated runs apart when the client names no session: the
/// project, else the system prompt (which states the host, its tools' wording, often the
/// folder), with the wire and the model family. The project comes first because it outlives
/// the system prompt's changes within one conversation (OpenCode's and Pi's state the date).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainScope {
    /// The scope's part of a session id: project or system prompt, wire and model family.
    id: String,
    /// What stores written before the wire counted named the scope: project or system
    /// prompt only.
    unwired_id: String,
    /// The ledger's name of the wire ([`Provider::as_str`]).
    wire: &'static str,
    /// The model family ([`model_family`]).
    family: String,
}

impl ChainScope {
    /// The scope of a request in `project` whose system prompt is `system_texts`, sent on
    /// `provider`'s wire for `model`.
    pub fn of(
        project: Option<&ProjectId>,
        system_texts: &[&str],
        provider: Provider,
        model: &str,
    ) -> Self {
        let mut hasher = blake3::Hasher::new();
        match project {
            Some(project) => {
                hasher.update(b"project\0");
                hasher.update(project.as_str().as_bytes());
            }
            None => {
                hasher.update(b"system\0");
                for text in system_texts {
                    hasher.update(text.as_bytes());
                    hasher.update(b"\0");
                }
            }
        }
        let unwired_id = hasher.finalize().to_hex()[..12].to_owned();
        let wire = provider.as_str();
        let family = model_family(model);
        hasher.update(b"wire\0");
        hasher.update(wire.as_bytes());
        hasher.update(b"\0family\0");
        hasher.update(family.as_bytes());
        Self {
            id: hasher.finalize().to_hex()[..12].to_owned(),
            unwired_id,
            wire,
            family,
        }
    }
}

/// Whether a ledger route names one of the three wires; a row under another route (a
/// stateful Responses call forwarded as sent) says nothing about the conversation's wire.
fn is_wire(route: &str) -> bool {
    [
        Provider::Anthropic,
        Provider::OpenAi,
        Provider::OpenAiResponses,
    ]
    .into_iter()
    .any(|provider| provider.as_str() == route)
}

/// Whether the stored session `id` ran on `scope`'s wire and model family, as its latest
/// calls on a wire say. A session with no such call passes: nothing says it is another's,
/// and a stored conversation must not be lost.
fn same_wire_and_family(
    tx: &ReadTx<'_>,
    id: &SessionId,
    scope: &ChainScope,
) -> Result<bool, ResolveError> {
    let calls = tx.calls(id, 8)?;
    Ok(calls
        .iter()
        .find(|call| is_wire(&call.route))
        .is_none_or(|call| call.route == scope.wire && model_family(&call.model) == scope.family))
}

/// Whether `id` is a chain session named before scopes (`chain-<lane>`, or a fork of one),
/// as opposed to a scoped one (`chain-<scope>-<lane>`) or one named by a client id.
fn is_unscoped_chain(id: &SessionId) -> bool {
    id.as_str()
        .strip_prefix("chain-")
        .and_then(|rest| rest.split('~').next())
        .is_some_and(|base| !base.contains('-'))
}

/// Where a request's session was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// The session to run the pass on (it may not exist yet).
    pub session: SessionId,
    /// How it was found, for logs.
    pub by: ResolvedBy,
    /// No stored session matched: the pass will create `session`.
    pub new: bool,
}

/// How a session was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResolvedBy {
    /// The explicit header.
    Explicit,
    /// The client's own id (and the conversation's lane).
    ClientId,
    /// The hash chain of a stored conversation.
    Chain,
    /// Nothing matched: a new conversation.
    New,
}

/// Resolves the session of a request whose conversation hashes to `chain`; `scope` matters
/// only when the request names no session.
pub fn resolve(
    tx: &ReadTx<'_>,
    hints: &SessionHints,
    chain: &HashChain,
    scope: &ChainScope,
) -> Result<Resolution, ResolveError> {
    let lane = || {
        chain.links().first().map_or_else(
            || "empty".to_owned(),
            |link| link.to_string()[..12].to_owned(),
        )
    };
    let keyed = if let Some(explicit) = &hints.explicit {
        Some((explicit.clone(), ResolvedBy::Explicit))
    } else {
        client_prefix(hints).map(|prefix| (format!("{prefix}{}", lane()), ResolvedBy::ClientId))
    };
    if let Some((base, by)) = keyed {
        let base =
            SessionId::new(base).map_err(|error| ResolveError::InvalidId(error.to_string()))?;
        let found = extended_branch(tx, &base, chain)?;
        let new = found.is_none();
        let session = found.unwrap_or(base);
        return Ok(Resolution { session, by, new });
    }
    // No id: the scoped lane's branch this conversation extends.
    let base = SessionId::new(format!("chain-{}-{}", scope.id, lane()))
        .map_err(|error| ResolveError::InvalidId(error.to_string()))?;
    if let Some(session) = extended_branch(tx, &base, chain)? {
        return Ok(Resolution {
            session,
            by: ResolvedBy::Chain,
            new: false,
        });
    }
    // Else the lane as stores written before the wire counted named it, when it ran on
    // this wire and family.
    let unwired = SessionId::new(format!("chain-{}-{}", scope.unwired_id, lane()))
        .map_err(|error| ResolveError::InvalidId(error.to_string()))?;
    if let Some(session) = extended_branch(tx, &unwired, chain)?
        && same_wire_and_family(tx, &session, scope)?
    {
        return Ok(Resolution {
            session,
            by: ResolvedBy::Chain,
            new: false,
        });
    }
    // Else a session stored before scopes (`chain-<lane>`) that this conversation extends,
    // probing from the newest link (a follow-up request extends the stored log by a message
    // or two). Another scope's session is never taken (that is the unrelated run the scope
    // keeps apart), nor one a client named by its id, nor one of another wire or family.
    for link in chain.links().iter().rev() {
        if let Some(found) = tx.find_by_chain(link)?
            && is_unscoped_chain(&found.session)
            && same_wire_and_family(tx, &found.session, scope)?
        {
            return Ok(Resolution {
                session: found.session,
                by: ResolvedBy::Chain,
                new: false,
            });
        }
    }
    Ok(Resolution {
        session: base,
        by: ResolvedBy::New,
        new: true,
    })
}

/// How long before a continuation its earlier conversation may have been last seen when it
/// is found by project rather than by the client's id: a host compacts right after a call,
/// or when its user comes back to the conversation (`/compact`).
pub const CONTINUATION_LOOKBACK_MS: i64 = 60 * 60 * 1000;

/// The conversation a new session continues, when its client compacted that one and goes on
/// with its summary (the caller checks [`mc_core::continues_compacted`]): the most recently
/// seen other primary session of the same client id, else of the same chain scope, but not a
/// branch that ends with the client asking for its summary (Claude Code's summary call shares
/// the conversation's lane, and branches off it when it resends the history changed). A
/// client that named its earlier conversation by another id continues the most recently seen
/// conversation of the same host and `project` within [`CONTINUATION_LOOKBACK_MS`] of
/// `now_ms`. Asked only for a session not stored yet (it carries what it carries from its
/// first pass on); `None` when the request names its session explicitly (the operator then
/// says which conversation it is).
pub fn continued_session(
    tx: &ReadTx<'_>,
    hints: &SessionHints,
    scope: &ChainScope,
    project: Option<&ProjectId>,
    session: &SessionId,
    now_ms: i64,
) -> Result<Option<SessionId>, StoreError> {
    if hints.explicit.is_some() {
        return Ok(None);
    }
    let prefix = client_prefix(hints).unwrap_or_else(|| format!("chain-{}-", scope.id));
    if let Some(found) = first_continuable(tx, tx.sessions_with_prefix(&prefix)?, session)? {
        return Ok(Some(found));
    }
    let Some(project) = project.filter(|_| hints.client_id.is_some()) else {
        return Ok(None);
    };
    let recent = tx
        .project_sessions_seen_since(project, now_ms.saturating_sub(CONTINUATION_LOOKBACK_MS))?
        .into_iter()
        .filter(|record| record.host == hints.host);
    first_continuable(tx, recent, session)
}

/// The first of `records` (most recently seen first) a continuation can carry: a primary
/// session other than `session`, and no branch that ends with the client asking for its
/// summary.
fn first_continuable(
    tx: &ReadTx<'_>,
    records: impl IntoIterator<Item = SessionRecord>,
    session: &SessionId,
) -> Result<Option<SessionId>, StoreError> {
    for record in records {
        if record.id == *session
            || record.mode != SessionMode::Primary
            || record.spawned_by.is_some()
        {
            continue;
        }
        if record.fork.is_some() {
            let count = tx.message_count(&record.id)?;
            let last: Vec<Message> = tx
                .messages(&record.id, count.saturating_sub(1)..)?
                .into_iter()
                .map(|stored| stored.message)
                .collect();
            if asks_for_summary(&last) {
                continue;
            }
        }
        return Ok(Some(record.id));
    }
    Ok(None)
}

/// What every session named by the request's client id starts with (`cc-<id>-`), one lane
/// per first message after it; `None` when the client names no session. The lanes of one
/// id are one client session's conversations: its main one and the subagents it spawned.
pub fn client_prefix(hints: &SessionHints) -> Option<String> {
    Some(client_id_prefix(hints.host, hints.client_id.as_deref()?))
}

/// What every session named by the client id `id` of `host` starts with.
pub fn client_id_prefix(host: Host, id: &str) -> String {
    let host = match host {
        Host::ClaudeCode => "cc",
        Host::OpenCode => "oc",
        Host::Codex => "codex",
        Host::Pi => "pi",
        Host::Other => "client",
    };
    format!("{host}-{}-", client_key(id))
}

/// Client ids up to this many bytes key their session as they are: with the host prefix,
/// the lane and a branch number the session id stays within [`SessionId::MAX_LEN`].
const CLIENT_ID_AS_IS_BYTES: usize = 200;

/// Bytes of a long client id kept readable in front of its digest.
const CLIENT_ID_HEAD_BYTES: usize = 64;

/// The part of a session id that stands for the client's own id. The client chose it and
/// sends it on every request, so an id no session id can hold (too long, control
/// characters) must not refuse every call: it is shortened to its head and a digest of the
/// whole, the same for the same id on every request.
fn client_key(id: &str) -> String {
    if id.len() <= CLIENT_ID_AS_IS_BYTES && !id.chars().any(char::is_control) {
        return id.to_owned();
    }
    let mut head = String::new();
    for c in id.chars().filter(|c| !c.is_control()) {
        if head.len() + c.len_utf8() > CLIENT_ID_HEAD_BYTES {
            break;
        }
        head.push(c);
    }
    let digest = blake3::hash(id.as_bytes()).to_hex();
    format!("{head}#{}", &digest[..32])
}

/// The branch of `base` that `chain` extends (its whole log is a prefix of the request),
/// else the most recently used branch, else `None` (a new session).
fn extended_branch(
    tx: &ReadTx<'_>,
    base: &SessionId,
    chain: &HashChain,
) -> Result<Option<SessionId>, ResolveError> {
    let branches = tx.branches(base)?;
    let extends = branches.iter().find(|branch| match &branch.head {
        None => true,
        Some(head) => {
            usize::try_from(branch.count)
                .ok()
                .and_then(|count| chain.links().get(count.checked_sub(1)?))
                == Some(head)
        }
    });
    Ok(extends
        .or(branches.first())
        .map(|branch| branch.session.id.clone()))
}

/// Why a request's session cannot be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The id the request names cannot be a session id (too long, control characters).
    #[error("{0}")]
    InvalidId(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[cfg(test)]
#[path = "session_resolve_capture_tests.rs"]
mod capture_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_id_no_session_id_can_hold_keys_its_session_by_head_and_digest() {
        let short = "5b3f0a2c-session";
        assert_eq!(client_key(short), short);
        let long = "x".repeat(1_000);
        let key = client_key(&long);
        assert_eq!(key, client_key(&long), "the same id keys the same session");
        assert!(key.starts_with(&"x".repeat(CLIENT_ID_HEAD_BYTES)));
        assert_ne!(key, client_key(&format!("{long}y")));
        let controlled = client_key("tab\tin-id");
        assert!(!controlled.chars().any(char::is_control), "{controlled}");
        let wide = client_key(&"é".repeat(300));
        assert!(wide.len() < CLIENT_ID_AS_IS_BYTES, "{wide}");
        let id = format!("client-{key}-0123456789ab~999999");
        assert!(SessionId::new(id).is_ok());
    }

    /// The project decides the scope when known (the system prompt's date may change under
    /// it); without one, each system prompt is a scope of its own.
    #[test]
    fn the_project_wins_over_the_system_prompt() {
        let project = ProjectId::new("git:abc123").unwrap();
        let monday = ["pi\nCurrent date: 2026-11-30"];
        let tuesday = ["pi\nCurrent date: 2026-12-01"];
        let of = |project: Option<&ProjectId>, texts: &[&str]| {
            ChainScope::of(project, texts, Provider::OpenAi, "fake-model")
        };
        assert_eq!(of(Some(&project), &monday), of(Some(&project), &tuesday));
        assert_ne!(of(None, &monday), of(None, &tuesday));
        assert_eq!(of(None, &monday), of(None, &monday));
        // Block boundaries count: two blocks are not their concatenation.
        assert_ne!(of(None, &["ab"]), of(None, &["a", "b"]));
    }

    #[test]
    fn responses_session_ids() {
        let mut headers = HeaderMap::new();
        headers.insert("user-agent", "codex_exec/0.171.0".parse().unwrap());
        let keyed = SessionHints::read(&headers, None).or_prompt_cache_key(Some("thread-9"));
        assert_eq!(
            (keyed.host, keyed.client_id.as_deref()),
            (Host::Codex, Some("thread-9"))
        );
        headers.insert("session-id", "thread-1".parse().unwrap());
        let named = SessionHints::read(&headers, None).or_prompt_cache_key(Some("other"));
        assert_eq!(
            named.client_id.as_deref(),
            Some("thread-1"),
            "a header id wins"
        );
        let mut pi = HeaderMap::new();
        pi.insert("session_id", "pi-uuid".parse().unwrap());
        let pi = SessionHints::read(&pi, None);
        assert_eq!(
            (pi.host, pi.client_id.as_deref()),
            (Host::Pi, Some("pi-uuid"))
        );
        let none = SessionHints::read(&HeaderMap::new(), None).or_prompt_cache_key(Some(""));
        assert_eq!(none.client_id, None);
    }

    #[test]
    fn unscoped_chain_ids_are_told_from_scoped_and_client_ones() {
        let is_unscoped = |id: &str| is_unscoped_chain(&SessionId::new(id).unwrap());
        assert!(!is_unscoped("chain-0123456789ab-ba9876543210"));
        assert!(!is_unscoped("chain-0123456789ab-ba9876543210~2"));
        assert!(is_unscoped("chain-0123456789ab"));
        assert!(is_unscoped("chain-0123456789ab~1"));
        assert!(!is_unscoped("oc-ses_1-0123456789ab"));
        assert!(!is_unscoped("pi-5b3f0a2c-0123456789ab"));
    }

    /// The wire and the model family part scopes; models of one family share one.
    #[test]
    fn the_wire_and_the_model_family_part_scopes() {
        let project = ProjectId::new("git:abc123").unwrap();
        let scope = |provider, model| ChainScope::of(Some(&project), &[], provider, model);
        let chat = scope(Provider::OpenAi, "gpt-5");
        assert_eq!(chat, scope(Provider::OpenAi, "gpt-5-codex"));
        assert_ne!(chat.id, scope(Provider::OpenAiResponses, "gpt-5").id);
        assert_ne!(chat.id, scope(Provider::OpenAi, "gpt-4o").id);
        assert_eq!(
            chat.unwired_id,
            scope(Provider::Anthropic, "claude-sonnet-4-5").unwired_id,
            "stores written before the wire counted named the scope by the project alone"
        );
    }
}
