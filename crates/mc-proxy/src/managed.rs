//! Managed model calls, as a pipeline of stages called in order from [`run`]: read the
//! call, prepare the agent tools, plan the pass (the session is resolved there), send the
//! rewritten request upstream, judge the answer, and tee it back to the client while the
//! usage is observed and the ledger row written (DESIGN §4).
//!
//! The order of failure handling follows DESIGN §7: a request that cannot be managed is
//! refused with a provider-shaped error, never forwarded unmanaged. The one exception is a
//! host's recognised side call (a title, a compaction summary): not a conversation, it goes
//! upstream byte for byte ([`crate::side_call`]). A context overflow from the upstream (an
//! HTTP error, or a Responses stream failed before any output) is retried once with an
//! emergency plan before the client sees anything.
//!
//! What the request carried becomes searchable, and the historian may summarise it, only
//! once the provider answered with a success ([`crate::acceptance`]).

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Response, StatusCode, header};
use axum::response::IntoResponse;
use bytes::Bytes;
use futures_util::StreamExt;

use crate::acceptance;
use crate::agent_tools;
use crate::app::App;
use crate::embedding_start;
use crate::forward::upstream_error;
use crate::headers::{client_response_headers, managed_request_headers};
use crate::historian_start;
use crate::ledger::{call_row, error_text, record_call, set_usage};
use crate::overflow::{Overflow, parse_overflow};
use crate::pass_decode::DecodedCall;
use crate::pass_run::plan_with_retries;
use crate::planned::Planned;
use crate::provider::{Provider, ProxyError};
use crate::reported_usage::ReportedUsage;
use crate::request_body::read_body;
use crate::settings::ProxySettings;
use crate::stream_overflow::{self, Peeked};
use crate::success_error;
use crate::tee::{BodyEnd, Teed, tee};
use crate::usage::UsageObserver;
use crate::usage_filter::UsageChunkFilter;

/// Largest upstream error body read whole (error bodies are small JSON).
const MAX_ERROR_BODY_BYTES: usize = 1024 * 1024;

/// The smallest context window an overflow error is believed to prove: no model a coding
/// agent runs on has less.
const MIN_PLAUSIBLE_WINDOW: u64 = 4_096;

/// `POST /v1/messages`.
pub async fn anthropic_messages(State(app): State<Arc<App>>, request: Request) -> Response<Body> {
    managed(app, Provider::Anthropic, request).await
}

/// `POST /v1/chat/completions`.
pub async fn openai_chat(State(app): State<Arc<App>>, request: Request) -> Response<Body> {
    managed(app, Provider::OpenAi, request).await
}

/// `POST /v1/responses`.
pub async fn openai_responses(State(app): State<Arc<App>>, request: Request) -> Response<Body> {
    managed(app, Provider::OpenAiResponses, request).await
}

async fn managed(app: Arc<App>, provider: Provider, request: Request) -> Response<Body> {
    match run(app, provider, request).await {
        Ok(response) => response,
        Err(error) => {
            tracing::warn!(status = %error.status(), message = %error.message, "refused a model call");
            error.into_response()
        }
    }
}

/// The managed path, as its stages in order: read the client's call, prepare the agent
/// tools, plan the pass (resolving the session, with its retries), then send, and answer
/// the client or retry once after an overflow ([`send_and_answer`]).
async fn run(
    app: Arc<App>,
    provider: Provider,
    request: Request,
) -> Result<Response<Body>, ProxyError> {
    let call = read_call(&app, provider, request).await?;
    // A store that could not be opened may be usable now; the pass refuses the call if not.
    app.store.open_if_closed().await;
    let mut prepared = prepare_tools(&app, provider, &call.headers, &call.body).await?;
    let body = prepared
        .as_ref()
        .map_or_else(|| call.body.clone(), agent_tools::Ready::body);
    let decoded = prepared.as_mut().and_then(agent_tools::Ready::take_decoded);
    let planned = plan_decoded(&app, provider, &call.headers, &body, decoded, None).await?;
    historian_start::start(&app, provider, &call.headers, &planned);
    embedding_start::start(&app);
    let call = ClientCall { body, ..call };
    send_and_answer(app, provider, call, prepared, planned).await
}

/// A client's model call as it arrived.
struct ClientCall {
    headers: Arc<HeaderMap>,
    /// The path and query the client called.
    path: String,
    /// The body the pass reads (the client's, or with the proxy's tools added).
    body: Bytes,
}

/// Reads the client's call: its headers, path and body (within the size and time limits).
async fn read_call(
    app: &App,
    provider: Provider,
    request: Request,
) -> Result<ClientCall, ProxyError> {
    let (parts, body) = request.into_parts();
    let body = read_body(
        provider,
        &parts.headers,
        body,
        app.settings.max_request_bytes,
        app.settings.client_limits.idle_timeout,
    )
    .await?;
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |pq| pq.as_str())
        .to_owned();
    Ok(ClientCall {
        headers: Arc::new(parts.headers),
        path,
        body,
    })
}

/// What an upstream answer means for the call.
enum Upstream {
    /// A success: the client gets it.
    Success(reqwest::Response),
    /// The provider refused the request as too long: retried once with an emergency plan.
    Overflow(Overflow),
    /// Any other refusal: the client gets the provider's answer as it is.
    Refused(Response<Body>),
}

/// Sends the planned call and answers the client: a success streams back (through the
/// agent tools' rounds when the call has them), an overflow is retried once with a new
/// plan, any other refusal reaches the client as the provider sent it.
async fn send_and_answer(
    app: Arc<App>,
    provider: Provider,
    call: ClientCall,
    prepared: Option<agent_tools::Ready>,
    mut planned: Planned,
) -> Result<Response<Body>, ProxyError> {
    let mut retried = false;
    loop {
        let started = Instant::now();
        let response = send(&app, provider, &call, &planned, retried, started).await?;
        let overflow =
            match judge(&app, provider, &call, &planned, retried, started, response).await {
                Upstream::Success(response) => {
                    acceptance::accepted(&app, &planned);
                    let Some(prepared) = prepared else {
                        return Ok(stream_back(
                            app, provider, planned, retried, response, started,
                        ));
                    };
                    let call = agent_tools::Call {
                        headers: call.headers,
                        path: call.path,
                        planned,
                        retried,
                        started,
                    };
                    return Ok(agent_tools::answer(app, prepared, call, response).await);
                }
                Upstream::Refused(response) => return Ok(response),
                Upstream::Overflow(overflow) => overflow,
            };
        planned = replan_after_overflow(
            &app,
            provider,
            &call.headers,
            &call.body,
            &planned,
            overflow,
        )
        .await?;
        retried = true;
    }
}

/// Sends one attempt upstream; a call that could not be made is recorded and refused in
/// the provider's shape.
async fn send(
    app: &App,
    provider: Provider,
    call: &ClientCall,
    planned: &Planned,
    retried: bool,
    started: Instant,
) -> Result<reqwest::Response, ProxyError> {
    let body = planned.upstream_body.clone();
    match send_upstream(app, provider, &call.headers, &call.path, body).await {
        Ok(response) => Ok(success_error::reclassify(response).await),
        Err(error) => {
            let refusal = upstream_error(provider, &error);
            let mut row = call_row(provider, planned, retried, started);
            row.status = refusal.status().as_u16();
            row.error = Some(refusal.message.clone());
            record_call(app, row);
            Err(refusal)
        }
    }
}

/// What an upstream answer means ([`Upstream`]). A refusal's ledger row is written here;
/// a success's when its body ends. A Responses backend may refuse an overflow inside a 200
/// stream: caught before any of it is forwarded, it is an overflow like the HTTP error
/// ([`crate::stream_overflow`]). A side call's overflow is the host's to handle, and only
/// the first attempt is retried.
async fn judge(
    app: &App,
    provider: Provider,
    call: &ClientCall,
    planned: &Planned,
    retried: bool,
    started: Instant,
    response: reqwest::Response,
) -> Upstream {
    let status = response.status();
    let retriable = !retried && planned.side_call.is_none();
    if status.is_success() {
        if !(retriable
            && provider == Provider::OpenAiResponses
            && is_event_stream(response.headers()))
        {
            return Upstream::Success(response);
        }
        return match stream_overflow::peek(response).await {
            Peeked::Stream(response) => Upstream::Success(response),
            Peeked::Overflow { overflow, error } => {
                let mut row = call_row(provider, planned, retried, started);
                row.status = status.as_u16();
                row.first_byte_ms = Some(row.total_ms);
                row.error = Some(error_text(&error, &call.headers));
                record_call(app, row);
                Upstream::Overflow(overflow)
            }
        };
    }
    let upstream_headers = client_response_headers(response.headers());
    let error_body = read_limited(response).await;
    let overflow = parse_overflow(status.as_u16(), &error_body);
    let mut row = call_row(provider, planned, retried, started);
    row.status = status.as_u16();
    row.first_byte_ms = Some(row.total_ms);
    row.error = Some(error_text(&error_body, &call.headers));
    record_call(app, row);
    if let (Some(overflow), true) = (overflow, retriable) {
        return Upstream::Overflow(overflow);
    }
    let mut out = Response::new(Body::from(error_body));
    *out.status_mut() = StatusCode::from_u16(status.as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    *out.headers_mut() = upstream_headers;
    Upstream::Refused(out)
}

/// The plan of the one retry after the provider refused `planned` as too long: the limit it
/// stated is recorded as the model's and the session's proven window, and its count of the
/// refused request pairs with the pass that sent it, so the retry plans with both and the
/// model's token correction learns from it.
async fn replan_after_overflow(
    app: &Arc<App>,
    provider: Provider,
    headers: &Arc<HeaderMap>,
    client_body: &Bytes,
    planned: &Planned,
    overflow: Overflow,
) -> Result<Planned, ProxyError> {
    tracing::warn!(session = ?planned.session, ?overflow, "context overflow upstream; retrying once with an emergency plan");
    // A provider that states no figure (a local server's "context length exceeded") still
    // proved the request it refused too large: the window is taken as a tenth under what was
    // sent, so the retry plans smaller instead of sending the same bytes again. Windows only
    // ever shrink this way, and one more refusal shrinks them further.
    let sent = planned
        .pass
        .as_ref()
        .map(|pass| pass.estimated_prompt_tokens);
    let unstated = overflow.limit_tokens.is_none() && overflow.prompt_tokens.is_none();
    let limit = if unstated {
        sent.map(|tokens| tokens * 9 / 10)
    } else {
        overflow.limit_tokens
    };
    // A window smaller than the request's own system prompt and tools, or than any model
    // serves, is not a window: kept, it refused every later request of the session. The
    // retry then plans as before, and the provider's answer to it reaches the client.
    let floor = planned.pass.as_ref().map_or(MIN_PLAUSIBLE_WINDOW, |pass| {
        pass.fixed_tokens.max(MIN_PLAUSIBLE_WINDOW)
    });
    if let Some(claimed) = limit.filter(|&limit| limit < floor) {
        tracing::warn!(
            session = ?planned.session,
            claimed,
            floor,
            "ignored an implausible context limit from the provider (smaller than the system prompt and tools, or than {MIN_PLAUSIBLE_WINDOW} tokens); it is not stored"
        );
        return plan(app, provider, headers, client_body, None).await;
    }
    if let Some(limit) = limit {
        app.proven_windows.record(&planned.model, limit);
    }
    if let (Some(limit), Ok(engine), Some(session)) = (limit, app.engine(), planned.session.clone())
    {
        let engine = Arc::clone(engine);
        let now_ms = crate::clock::unix_ms();
        let recorded = tokio::task::spawn_blocking(move || {
            engine.record_proven_window(&session, limit, now_ms)
        })
        .await;
        if !matches!(recorded, Ok(Ok(()))) {
            tracing::warn!("could not record the proven window; the retry plans without it");
        }
    }
    let seq = planned.pass.as_ref().map(|pass| pass.seq);
    let usage = match overflow.prompt_tokens {
        Some(tokens) => Some(ReportedUsage { tokens, pass: seq }),
        // Our own count of the refused request, paired with its pass so the retry is judged
        // over the limit; being the pass's own estimate, it teaches the correction nothing.
        None if unstated => sent.map(|tokens| ReportedUsage { tokens, pass: seq }),
        None => limit.map(|tokens| ReportedUsage { tokens, pass: None }),
    };
    plan(app, provider, headers, client_body, usage).await
}

/// Whether a response's body is an SSE stream.
fn is_event_stream(headers: &reqwest::header::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|kind| kind.starts_with("text/event-stream"))
}

/// Sends a planned body upstream on the client's path, with the client's headers.
pub async fn send_upstream(
    app: &App,
    provider: Provider,
    headers: &HeaderMap,
    path_and_query: &str,
    body: Bytes,
) -> Result<reqwest::Response, reqwest::Error> {
    let base = match provider {
        Provider::Anthropic => &app.settings.upstream_anthropic,
        Provider::OpenAi | Provider::OpenAiResponses => &app.settings.upstream_openai,
    };
    app.client
        .post(ProxySettings::upstream_url(base, path_and_query))
        .headers(managed_request_headers(headers))
        .body(body)
        .send()
        .await
}

/// The request with the proxy's tools, when this call gets them ([`agent_tools`]); it reads
/// the store, so it runs where blocking is allowed, as the pass does.
async fn prepare_tools(
    app: &Arc<App>,
    provider: Provider,
    headers: &Arc<HeaderMap>,
    client_body: &Bytes,
) -> Result<Option<agent_tools::Ready>, ProxyError> {
    if !agent_tools::may_serve(app, provider, headers) {
        return Ok(None);
    }
    let (app, headers, body) = (Arc::clone(app), Arc::clone(headers), client_body.clone());
    tokio::task::spawn_blocking(move || agent_tools::ready(&app, provider, &headers, &body))
        .await
        .unwrap_or_else(|error| {
            Err(ProxyError::new(
                provider,
                crate::provider::ErrorKind::Unavailable,
                format!("preparing the agent tools failed unexpectedly ({error})"),
            ))
        })
}

/// Runs the pass on a pass thread ([`crate::pass_threads`]): SQLite and rendering are
/// synchronous CPU work, and one thread per concurrent pass keeps one tokenizer cache each.
pub async fn plan(
    app: &Arc<App>,
    provider: Provider,
    headers: &Arc<HeaderMap>,
    client_body: &Bytes,
    last_usage: Option<ReportedUsage>,
) -> Result<Planned, ProxyError> {
    plan_decoded(app, provider, headers, client_body, None, last_usage).await
}

/// [`plan`] with `client_body` already `decoded` as the pass reads it (the agent tools'
/// preparation made it), so the pass does not decode it again.
async fn plan_decoded(
    app: &Arc<App>,
    provider: Provider,
    headers: &Arc<HeaderMap>,
    client_body: &Bytes,
    decoded: Option<Box<DecodedCall>>,
    last_usage: Option<ReportedUsage>,
) -> Result<Planned, ProxyError> {
    // Closed only if the semaphore is closed, which nothing does; a pass then runs unbounded.
    // The pass holds its permit to its end, on its thread, and hands it over with its result
    // (after the thread is idle again): a client that disconnects stops waiting for the pass,
    // not the pass, so its permit is not free while the pass still runs. Passes running, and
    // so pass threads, never outnumber the permits.
    let permit = Arc::clone(&app.pass_permits).acquire_owned().await.ok();
    let (for_pass, headers, body) = (Arc::clone(app), Arc::clone(headers), client_body.clone());
    app.pass_threads
        .run(move || {
            let planned =
                plan_with_retries(&for_pass, provider, &headers, &body, decoded, last_usage);
            (planned, permit)
        })
        .await
        .map_or_else(
            |lost| {
                Err(ProxyError::new(
                    provider,
                    crate::provider::ErrorKind::Unavailable,
                    format!("the pass failed unexpectedly ({})", lost.0),
                ))
            },
            |(planned, _permit)| planned,
        )
}

async fn read_limited(response: reqwest::Response) -> Bytes {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        let room = MAX_ERROR_BODY_BYTES.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if room <= chunk.len() {
            break;
        }
    }
    Bytes::from(body)
}

fn stream_back(
    app: Arc<App>,
    provider: Provider,
    planned: Planned,
    retried: bool,
    response: reqwest::Response,
    started: Instant,
) -> Response<Body> {
    let status = response.status();
    let headers = client_response_headers(response.headers());
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let sse = content_type
        .as_deref()
        .is_some_and(|kind| kind.starts_with("text/event-stream"));
    let observer = UsageObserver::new(provider, content_type.as_deref());
    let filter = (sse && planned.hide_usage_chunk).then(UsageChunkFilter::default);
    let mut row = call_row(provider, &planned, retried, started);
    row.status = status.as_u16();
    let on_end = move |teed: Teed| {
        row.error = match teed.end {
            BodyEnd::Complete => teed.usage.stream_error.clone(),
            BodyEnd::UpstreamFailed => Some("upstream failed mid-body".to_owned()),
            BodyEnd::EndedMidEvent => Some("upstream stream ended mid-event".to_owned()),
            BodyEnd::ClientGone => Some("client disconnected".to_owned()),
        };
        set_usage(&mut row, teed.usage);
        row.first_byte_ms = teed.first_byte_ms;
        row.total_ms = teed.total_ms;
        record_call(&app, row);
    };
    let body = tee(
        provider,
        sse,
        filter,
        response.bytes_stream(),
        observer,
        started,
        on_end,
    );
    let mut out = Response::new(Body::from_stream(body));
    *out.status_mut() = StatusCode::from_u16(status.as_u16()).unwrap_or(StatusCode::OK);
    *out.headers_mut() = headers;
    out
}
