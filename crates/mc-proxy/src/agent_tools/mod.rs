//! The agent tools served inside the proxy, for clients with no MCP server of ours
//! (DESIGN §6, "by the proxy itself").
//!
//! With `tools.mode` `proxy` (the `auto` choice for every client but Claude Code, whose setup
//! registers `magic-context mcp`, and clients whose tool list shows our MCP server), a
//! request goes up with the five tools after the client's own and the guidance block after
//! the client's instructions (the last Anthropic system block; one more leading Chat
//! `system` message; one more Responses `developer` item after the leading instruction
//! items), the same bytes on every request so the cached prefix holds ([`prepare`], [`chat`],
//! [`responses`]).
//!
//! A streamed answer goes to the client live ([`live_anthropic`], [`live_chat`],
//! [`live_responses`]): each upstream event passes as it arrives, except a call to one of
//! our tools, which the client never sees, and the round's end (Anthropic
//! `message_delta`/`message_stop`; Chat's finish reason, usage chunk and `[DONE]`; Responses
//! `response.completed`), held until the proxy knows whether another round follows. A JSON
//! answer is read whole ([`anthropic_rounds`], [`chat_rounds`], [`responses_rounds`]). Either way, once
//! a round has ended:
//!
//! - no call to our tools: the answer ends as the provider sent it;
//! - calls to our tools only: the proxy runs them (`mc_engine::tools::call_tool`, bound to
//!   the session and project of the pass), appends the model's turn and the results, and
//!   asks again, as a client would. A stream goes on in the same client message (Anthropic
//!   block indexes continue where the last round's stopped, one `message_start`; Chat chunks
//!   keep the first round's id); a JSON client gets the final answer only. Either way the
//!   usage figures at the end are the final call's (they describe the prompt the session now
//!   has, which is what clients read to judge how full the window is; summing would count
//!   the same prompt once per round);
//! - our calls beside the client's: ours run here, and the client gets the answer without
//!   them (a stream already carried the client's calls live); their results wait for the
//!   client's next request, which carries its own results.
//!
//! Each exchange the client did not see is stored ([`splice`]) under an anchor hash of the
//! conversation before it, and spliced back into every later request at the same place, so
//! every call keeps its result and the upstream bytes repeat the first sending. What a
//! streaming client saw of the hidden rounds (their text) comes back in its copy of the
//! answer; the splice keeps that text in the rounds that wrote it upstream. A tool that fails
//! answers the model with an error result; the client's call never fails for it. A round that
//! fails after the stream began (an upstream error, a cut stream) ends the stream with the
//! provider's kind of error event; what was stored stays. A streaming client that goes away
//! stops the answer where it is: the round in flight is cancelled, no further round starts
//! (each would be a model call nobody reads), and the hidden rounds so far are not stored,
//! since no client will send their answer back ([`live`]). At most [`mc_agent_tools::MAX_ROUNDS`] rounds run
//! per client request; the last one forbids tool calls, so the model has to answer in text
//! (one that calls our tools anyway gets its answer shown without them, as a turn that
//! ended, with a line saying the limit was reached: [`mc_agent_tools::round_cap`]).

mod anthropic_rounds;
mod chat;
mod chat_rounds;
mod execute;
mod live;
mod live_anthropic;
mod live_chat;
mod live_responses;
mod live_round;
mod prepare;
mod reply;
mod responses;
mod responses_rounds;
mod round_call;
mod serve_choice;
mod settle;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, Response};
use bytes::Bytes;

pub use round_call::Call;
use serve_choice::may_serve;

use crate::app::App;
use crate::chunked_body::ChunkedBody;
use crate::provider::{ErrorKind, Provider, ProxyError};
use mc_wire::recent_bodies::KnownStart;

/// A client request made ready for the proxy's tools, on its wire.
pub enum Ready {
    /// Anthropic Messages.
    Anthropic(mc_agent_tools::anthropic_splice::Prepared),
    /// OpenAI Chat Completions.
    Chat(mc_agent_tools::chat_splice::ChatPrepared),
    /// OpenAI Responses.
    Responses(mc_agent_tools::responses_splice::ResponsesPrepared),
}

impl Ready {
    /// The body the pass reads instead of the client's: the prepared request, encoded.
    pub fn body(&self) -> ChunkedBody {
        match self {
            Self::Anthropic(prepared) => prepared.body.clone(),
            Self::Chat(prepared) => prepared.body.clone(),
            Self::Responses(prepared) => prepared.body.clone(),
        }
    }

    /// What the walk that made the body knows of its first bytes: the previous prepared
    /// body's, which the pass's decode remembered.
    pub fn known_start(&self) -> Option<KnownStart> {
        match self {
            Self::Anthropic(prepared) => prepared.known.clone(),
            Self::Chat(prepared) => prepared.known.clone(),
            Self::Responses(prepared) => prepared.known.clone(),
        }
    }
}

/// The request with the proxy's tools, when this call gets them. It reads the store, so it
/// runs on a pass thread under a pass permit, as the pass does: the thread the session's
/// pass then runs on is already awake, where a blocking-pool thread had to be woken first.
pub async fn prepare(
    app: &Arc<App>,
    provider: Provider,
    headers: &Arc<HeaderMap>,
    client_body: &Bytes,
) -> Result<Option<Ready>, ProxyError> {
    if !may_serve(app, provider, headers) {
        return Ok(None);
    }
    let permit = Arc::clone(&app.pass_permits).acquire_owned().await.ok();
    app.note_pass_started();
    let (for_thread, headers, body) = (Arc::clone(app), Arc::clone(headers), client_body.clone());
    app.pass_threads
        .run(move || (ready(&for_thread, provider, &headers, &body), permit))
        .await
        .map_or_else(
            |lost| {
                Err(ProxyError::new(
                    provider,
                    ErrorKind::Unavailable,
                    format!("preparing the agent tools failed unexpectedly ({})", lost.0),
                ))
            },
            |(ready, _permit)| ready,
        )
}

/// Makes a request ready for the proxy's tools, or `None` when it does not get them.
fn ready(
    app: &App,
    provider: Provider,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Option<Ready>, ProxyError> {
    let body = &ChunkedBody::from(body.clone());
    Ok(match provider {
        Provider::Anthropic => prepare::prepare(app, headers, body)?.map(Ready::Anthropic),
        Provider::OpenAi => chat::prepare_chat(app, headers, body)?.map(Ready::Chat),
        Provider::OpenAiResponses => {
            responses::prepare_responses(app, headers, body)?.map(Ready::Responses)
        }
    })
}

/// Answers the client from the first successful upstream response of a ready request: a
/// stream goes to the client live, round after round; a JSON answer is read whole.
pub async fn answer(
    app: Arc<App>,
    ready: Ready,
    call: Call,
    response: reqwest::Response,
) -> Response<Body> {
    let live = live::is_stream(response.headers());
    match ready {
        Ready::Anthropic(prepared) if live => {
            live_anthropic::answer_live(app, prepared, call, response)
        }
        Ready::Anthropic(prepared) => anthropic_rounds::answer(app, prepared, call, response).await,
        Ready::Chat(prepared) if live => live_chat::answer_live(app, prepared, call, response),
        Ready::Chat(prepared) => chat_rounds::answer_chat(app, prepared, call, response).await,
        Ready::Responses(prepared) if live => {
            live_responses::answer_live(app, prepared, call, response)
        }
        Ready::Responses(prepared) => {
            responses_rounds::answer_responses(app, prepared, call, response).await
        }
    }
}
