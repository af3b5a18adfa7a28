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
//! From its plan until its answer is sent, the call is counted in flight for the dreamer
//! ([`crate::call_in_flight`]).
//!
//! What the request carried becomes searchable, and the historian may summarise it, only
//! once the provider answered with a success ([`crate::acceptance`]).

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::Response;
use axum::response::IntoResponse;

use crate::acceptance;
use crate::agent_tools;
use crate::app::App;
use crate::call_in_flight;
use crate::chunked_body::ChunkedBody;
use crate::client_call::{ClientCall, read_call};
use crate::embedding_start;
use crate::historian_start;
use crate::plan::{plan, replan_after_overflow};
use crate::planned::Planned;
use crate::provider::{Provider, ProxyError};
use crate::search_index_start;
use crate::stream_back::stream_back;
use crate::upstream::{Upstream, judge, send};

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
    let prepared = agent_tools::prepare(&app, provider, &call.headers, &call.body).await?;
    // The pass reads the prepared request when the call gets the agent tools.
    let body = prepared.as_ref().map_or_else(
        || ChunkedBody::from(call.body.clone()),
        agent_tools::Ready::body,
    );
    let known = prepared.as_ref().and_then(agent_tools::Ready::known_start);
    let planned = plan(&app, provider, &call.headers, &body, known, None).await?;
    historian_start::start(&app, provider, &call.headers, &planned);
    embedding_start::start(&app);
    search_index_start::start(&app);
    let in_flight = call_in_flight::begin(&app, provider, &call.headers, &planned);
    let response = send_and_answer(app, provider, call, prepared, planned).await?;
    Ok(call_in_flight::until_sent(response, in_flight))
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
        // The retry plans the request the pass read: with the proxy's tools when it had them.
        let body = prepared.as_ref().map_or_else(
            || ChunkedBody::from(call.body.clone()),
            agent_tools::Ready::body,
        );
        planned =
            replan_after_overflow(&app, provider, &call.headers, &body, &planned, overflow).await?;
        retried = true;
    }
}
