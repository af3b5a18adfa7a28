//! One managed call's pass, as stages called in order from [`plan_once`]: decode the body
//! ([`crate::pass_decode`]), set a host's side call aside, resolve the session and its
//! window, run the engine (forking on a rewind), render the upstream body. Runs on a pass
//! thread ([`crate::pass_threads`]).
//!
//! A busy store is retried briefly; if it stays busy, an identical client request already
//! managed is answered with the same upstream bytes, else the call is refused (DESIGN §7).

use std::path::PathBuf;
use std::time::Duration;

use axum::http::HeaderMap;
use mc_core::pass_plan::usable_window;
use mc_core::{
    HashChain, Host, Message, ProjectId, SessionId, SessionMode, continues_compacted, session_mode,
};
use mc_engine::{Engine, EngineError, PassOutcome, PassRequest};
use mc_wire::openai::ChatRequest;

use crate::app::App;
use crate::chunked_body::ChunkedBody;
use crate::client_request::{ClientMessages, first_message_texts};
use crate::clock::unix_ms;
use crate::host_managed_body;
use crate::pass_decode::{BodyLayout, DecodedCall, Decoding, decode};
use crate::planned::{PassFacts, Planned};
use crate::provider::{ErrorKind, Provider, ProxyError};
use crate::reported_usage::ReportedUsage;
use crate::session_resolve::{ChainScope, ResolveError, SessionHints, continued_session, resolve};
use crate::side_call::{self, SideCall};
use crate::subagent;
use crate::windows::context_window;
use mc_wire::recent_bodies::KnownStart;

/// Attempts at a pass while the store reports busy (each already waited its busy timeout).
const BUSY_ATTEMPTS: u32 = 3;

/// Forks tried in one call: a rewind needs one; more means the resolution is confused.
const MAX_FORKS: u32 = 3;

enum Failure {
    Busy(String),
    Refuse(ProxyError),
}

/// Plans the upstream request for a client body; see the module docs for the busy rule.
pub fn plan_with_retries(
    app: &App,
    provider: Provider,
    headers: &HeaderMap,
    body: &ChunkedBody,
    known: Option<&KnownStart>,
    last_usage: Option<ReportedUsage>,
) -> Result<Planned, ProxyError> {
    let mut attempt = 0;
    loop {
        match plan_once(app, provider, headers, body, known, last_usage) {
            Ok(planned) => {
                // A side call needs no store, so a busy store never has to replay one.
                if let (Some(session), None) = (&planned.session, planned.side_call) {
                    app.last_good
                        .remember(session, body, planned.upstream_body.clone());
                }
                return Ok(planned);
            }
            Err(Failure::Refuse(error)) => return Err(error),
            Err(Failure::Busy(_)) if attempt + 1 < BUSY_ATTEMPTS => {
                attempt += 1;
                std::thread::sleep(Duration::from_millis(50 << attempt));
            }
            Err(Failure::Busy(reason)) => {
                return match app.last_good.replay(body) {
                    Some(upstream_body) => {
                        tracing::warn!(%reason, "store busy; resending the upstream request of an identical call");
                        // The client's own request says whether it asked for usage.
                        let hide_usage_chunk = provider == Provider::OpenAi
                            && ChatRequest::decode(&body.to_bytes(), usize::MAX).is_ok_and(
                                |request| request.is_stream() && !request.includes_stream_usage(),
                            );
                        Ok(Planned {
                            session: None,
                            project: None,
                            model: String::new(),
                            pass: None,
                            usable_window: None,
                            window_tokens: None,
                            upstream_body,
                            hide_usage_chunk,
                            side_call: None,
                        })
                    }
                    None => Err(ProxyError::new(
                        provider,
                        ErrorKind::Unavailable,
                        format!(
                            "the context store stayed busy ({reason}); the request was not sent unmanaged. Retry in a moment."
                        ),
                    )),
                };
            }
        }
    }
}

/// One attempt at the pass, as its stages in order: decode the body, set a host's side call
/// aside, resolve the session and its window, run the engine, render the upstream body.
fn plan_once(
    app: &App,
    provider: Provider,
    headers: &HeaderMap,
    body: &ChunkedBody,
    known: Option<&KnownStart>,
    last_usage: Option<ReportedUsage>,
) -> Result<Planned, Failure> {
    let decoded = match decode(app, provider, body, known).map_err(Failure::Refuse)? {
        Decoding::Managed(decoded) => decoded,
        Decoding::Stateful { model } => {
            return Ok(Planned::as_sent(model, body, SideCall::StatefulResponses));
        }
    };
    let model = decoded.client.model().to_owned();
    // A host's side call goes up as the client sent it, needing no store (module docs of
    // `side_call`); everything else is managed or refused.
    if let Some(side_call) = side_call::recognise(headers, &decoded.client, &decoded.conversation) {
        tracing::debug!(
            side_call = side_call.as_str(),
            "a host's side call; forwarded as sent"
        );
        return Ok(Planned::as_sent(model, body, side_call));
    }
    let engine = app.engine().map_err(|reason| {
        Failure::Refuse(ProxyError::new(
            provider,
            ErrorKind::Unavailable,
            format!("the context store is unavailable ({reason}); the request was not sent unmanaged. Retry once the cause is gone (no restart needed); `magic-context doctor` shows what is wrong."),
        ))
    })?;
    let mut target = resolve_target(app, engine, provider, headers, &decoded, model)?;
    let outcome = run_pass(app, engine, provider, &decoded, &mut target, last_usage)?;
    if target.mode == SessionMode::CompactionOff
        && let Some(upstream_body) = host_managed_body::splice_head(
            provider,
            body,
            decoded.layout.as_ref().and_then(BodyLayout::list_open),
            &outcome.messages[..2],
        )
    {
        let pass = pass_facts(&decoded, &target, &outcome);
        let decoded = *decoded;
        remember_decoded(
            app,
            decoded.layout,
            decoded.client.into_client_messages(),
            decoded.conversation,
            decoded.chain,
        );
        return Ok(Planned {
            pass: Some(pass),
            session: Some(target.session),
            project: target.project,
            model: target.model,
            usable_window: target.usable_window,
            window_tokens: target.window,
            upstream_body,
            hide_usage_chunk: false,
            side_call: None,
        });
    }
    Ok(render_pass(app, *decoded, target, &outcome, last_usage))
}

/// Where a call's pass runs and against what: the session it belongs to, its project, its
/// model's window, and the fixed prefix every rendering carries.
struct Target {
    session: SessionId,
    host: Host,
    /// How the session is managed: the config's compaction switch, and whether the host
    /// spawned it as a subagent.
    mode: SessionMode,
    /// The session a subagent works for, when one is stored.
    spawned_by: Option<SessionId>,
    /// The conversation this one continues after the client compacted it, when it is new.
    continues: Option<SessionId>,
    project: Option<ProjectId>,
    model: String,
    window: Option<u64>,
    usable_window: Option<u64>,
    prefix_identity: String,
    fixed_tokens: u64,
    /// The working directory the prompt states, when the project was identified from it.
    folder: Option<PathBuf>,
}

/// Resolves the session a decoded call belongs to (its id, else its hash chain within its
/// project, wire and model family), its project and its model's window.
fn resolve_target(
    app: &App,
    engine: &Engine,
    provider: Provider,
    headers: &HeaderMap,
    decoded: &DecodedCall,
    model: String,
) -> Result<Target, Failure> {
    let client = &decoded.client;
    let hints = SessionHints::read(headers, client.metadata_user_id())
        .or_prompt_cache_key(client.prompt_cache_key());
    let texts = client.system_texts();
    let first = first_message_texts(&decoded.conversation);
    let (project, folder) = app
        .projects
        .resolve_with_folder(headers, texts.iter().copied().chain(first));
    let folder = folder.map(PathBuf::from);
    note_project_folders(app, engine);
    let scope = ChainScope::of(project.as_ref(), &texts, provider, &model);
    let betas = headers
        .get("anthropic-beta")
        .and_then(|value| value.to_str().ok());
    let window = app.proven_windows.window(
        &model,
        context_window(&model, app.settings.context_window, betas),
    );
    let usable_window = window
        .map(|window| usable_window(window, client.max_output_tokens(), client.thinking_budget()));
    let is_subagent = subagent::is_subagent(&hints, &texts);
    let (resolution, spawned_by, continues) = engine
        .store()
        .read_warm(|tx| {
            Ok(
                resolve(tx, &hints, &decoded.chain, &scope).and_then(|resolution| {
                    let spawned_by = if is_subagent {
                        subagent::spawned_by(tx, &hints, &resolution.session)?
                    } else {
                        None
                    };
                    // Only a new conversation is looked at: one already stored carries what
                    // it carries from its first pass on.
                    let continues = if resolution.new
                        && !is_subagent
                        && continues_compacted(&decoded.conversation)
                    {
                        continued_session(
                            tx,
                            &hints,
                            &scope,
                            project.as_ref(),
                            &resolution.session,
                            i64::try_from(unix_ms()).unwrap_or(i64::MAX),
                        )?
                    } else {
                        None
                    };
                    Ok((resolution, spawned_by, continues))
                }),
            )
        })
        .map_err(|error| store_failure(provider, &error))?
        .map_err(|error| match error {
            ResolveError::InvalidId(reason) => Failure::Refuse(ProxyError::new(
                provider,
                ErrorKind::InvalidRequest,
                format!("the request's session id is unusable: {reason}"),
            )),
            ResolveError::Store(error) => store_failure(provider, &error),
        })?;
    let prefix_identity = match decoded
        .layout
        .as_ref()
        .and_then(BodyLayout::prefix_identity)
    {
        Some(identity) => identity.to_owned(),
        None => client.prefix_identity(),
    };
    let fixed_tokens = app
        .fixed_tokens
        .of(client, &prefix_identity, &|text: &str| {
            app.tokens.count(&model, text)
        });
    Ok(Target {
        session: resolution.session,
        host: hints.host,
        mode: session_mode(engine.config().compaction.enabled, is_subagent),
        spawned_by,
        continues,
        project,
        model,
        window,
        usable_window,
        prefix_identity,
        fixed_tokens,
        folder,
    })
}

/// Runs the engine's pass for the call, forking a branch when the client rewound its
/// history (the target then names the branch).
fn run_pass(
    app: &App,
    engine: &Engine,
    provider: Provider,
    decoded: &DecodedCall,
    target: &mut Target,
    last_usage: Option<ReportedUsage>,
) -> Result<PassOutcome, Failure> {
    let now_ms = unix_ms();
    let count = |text: &str| app.tokens.count(&target.model, text);
    // The overflow retry passes what the provider counted; otherwise the session's latest
    // reported usage, kept in memory as its call ended (the ledger writes it later).
    let planning_usage = last_usage.or_else(|| app.recent_usage.get(&target.session));
    let reduce_tool = decoded.client.offers_tool("ctx_reduce");
    let docs_config = &engine.config().project_docs;
    let project_docs = match &target.folder {
        Some(folder) if docs_config.enabled => app.project_docs.read(folder, &docs_config.files),
        _ => Vec::new(),
    };
    let mut session = target.session.clone();
    let mut forks = 0;
    let outcome = loop {
        let request = PassRequest {
            session: &session,
            host: target.host,
            mode: target.mode,
            spawned_by: target.spawned_by.as_ref(),
            continues: target.continues.as_ref(),
            project: target.project.as_ref(),
            model: &target.model,
            prefix_identity: &target.prefix_identity,
            system_blocks: decoded.client.system_blocks(),
            messages: &decoded.conversation,
            chain: Some(&decoded.chain),
            now_ms,
            usable_window: target.usable_window,
            fixed_tokens: target.fixed_tokens,
            last_usage_tokens: planning_usage.map(|usage| usage.tokens),
            last_usage_pass: planning_usage.and_then(|usage| usage.pass),
            operator_flush: false,
            reduce_tool,
            project_docs: &project_docs,
            client_ttl: decoded.client_ttl,
            count_text: &count,
        };
        match engine.pass(&request) {
            Ok(outcome) => break outcome,
            Err(EngineError::Diverged { common_prefix, .. }) if forks < MAX_FORKS => {
                forks += 1;
                // A client that compacted and kept the conversation's start (Codex keeps
                // its task) rewrote the history after it: the branch continues this one.
                if target.mode == SessionMode::Primary && continues_compacted(&decoded.conversation)
                {
                    target.continues = Some(session.clone());
                }
                let branch = engine
                    .fork(&session, common_prefix, now_ms)
                    .map_err(|error| engine_failure(provider, error))?;
                tracing::info!(from = %session, to = %branch, at = common_prefix, "history diverged; forked a branch");
                session = branch;
            }
            Err(error) => return Err(engine_failure(provider, error)),
        }
    };
    target.session = session;
    tracing::debug!(
        session = %target.session,
        seq = outcome.seq,
        kind = ?outcome.plan.kind,
        cause = ?outcome.plan.cause,
        tokens_removed = outcome.tokens_removed,
        "pass"
    );
    Ok(outcome)
}

/// Renders the pass's upstream body, keeping what the session's next request reuses (the
/// encoded messages, the decoded body's layout).
fn render_pass(
    app: &App,
    decoded: DecodedCall,
    target: Target,
    outcome: &PassOutcome,
    last_usage: Option<ReportedUsage>,
) -> Planned {
    let pass = pass_facts(&decoded, &target, outcome);
    let session = target.session;
    let previous = app.encoded_messages.take(&session);
    let rendered = decoded.client.render(
        outcome,
        target.window,
        last_usage.map(|usage| usage.tokens),
        previous,
        decoded.layout.as_ref(),
        &app.encoded_heads,
    );
    if let Some(encoded) = rendered.encoded {
        app.encoded_messages.put(&session, encoded);
    }
    remember_decoded(
        app,
        decoded.layout,
        rendered.client_messages,
        decoded.conversation,
        decoded.chain,
    );
    Planned {
        session: Some(session),
        project: target.project,
        model: target.model,
        pass: Some(pass),
        usable_window: target.usable_window,
        window_tokens: target.window,
        upstream_body: rendered.body,
        hide_usage_chunk: rendered.hide_usage_chunk,
        side_call: None,
    }
}

/// Keeps what the session's next request is decoded by (the body's layout, its messages
/// on the client's wire and in the neutral model), so that request decodes only what it
/// adds: every managed call, rendered or sent up as the client wrote it.
fn remember_decoded(
    app: &App,
    layout: Option<BodyLayout>,
    client_messages: Option<ClientMessages>,
    conversation: Vec<Message>,
    chain: HashChain,
) {
    match (layout, client_messages) {
        (Some(BodyLayout::Anthropic(layout)), _) => {
            app.recent_requests.remember(layout, conversation, chain);
        }
        (Some(BodyLayout::Chat(layout)), Some(ClientMessages::Chat(messages))) => {
            app.recent_chats
                .remember(layout, messages, conversation, chain);
        }
        (Some(BodyLayout::Responses(layout)), Some(ClientMessages::Responses(items))) => {
            app.recent_responses
                .remember(layout, items, conversation, chain);
        }
        _ => {}
    }
}

/// What the ledger, the historian and acceptance read about a pass.
fn pass_facts(decoded: &DecodedCall, target: &Target, outcome: &PassOutcome) -> PassFacts {
    PassFacts {
        seq: outcome.seq,
        kind: outcome.plan.kind.as_str().to_owned(),
        cause: outcome.plan.cause.map(|cause| cause.as_str().to_owned()),
        estimated_prompt_tokens: outcome.estimated_prompt_tokens,
        messages: decoded.conversation.len() as u64,
        fixed_tokens: target.fixed_tokens,
        mode: target.mode,
        client_prompt_tokens: outcome.client_prompt_tokens,
        client_fixed_tokens: outcome.client_fixed_tokens,
    }
}

/// Writes the folders projects were newly identified from (for `status` to name them by);
/// naming only, so a store that cannot take them now loses nothing the call needs.
fn note_project_folders(app: &App, engine: &Engine) {
    let new_folders = app.projects.take_new_folders();
    if new_folders.is_empty() {
        return;
    }
    let now_ms = crate::clock::now_ms();
    let written = engine.store().write(|tx| {
        for (project, folder) in &new_folders {
            tx.note_project_folder(project, folder, now_ms)?;
        }
        Ok(())
    });
    if let Err(error) = written {
        tracing::debug!(%error, "could not record the folders of newly seen projects");
    }
}

fn store_failure(provider: Provider, error: &mc_store::StoreError) -> Failure {
    if error.is_retryable() {
        Failure::Busy(error.to_string())
    } else {
        Failure::Refuse(ProxyError::new(
            provider,
            ErrorKind::Unavailable,
            format!("the context store failed ({error}); the request was not sent unmanaged"),
        ))
    }
}

fn engine_failure(provider: Provider, error: EngineError) -> Failure {
    match error {
        EngineError::Store(error) => store_failure(provider, &error),
        EngineError::Refused { message } => Failure::Refuse(ProxyError::new(
            provider,
            ErrorKind::InvalidRequest,
            message,
        )),
        other => Failure::Refuse(ProxyError::new(
            provider,
            ErrorKind::Unavailable,
            format!("the engine could not manage this request ({other})"),
        )),
    }
}
