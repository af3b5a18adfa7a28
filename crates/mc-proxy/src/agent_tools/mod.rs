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
//! answer is read whole ([`rounds`], [`chat_rounds`], [`responses_rounds`]). Either way, once
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
//! since no client will send their answer back ([`live`]). At most [`MAX_ROUNDS`] rounds run
//! per client request; the last one forbids tool calls, so the model has to answer in text
//! (one that calls our tools anyway gets its answer shown without them, as a turn that
//! ended, with a line saying the limit was reached: [`round_cap`]).

mod answer_key;
mod chat;
mod chat_rounds;
mod execute;
mod live;
mod live_anthropic;
mod live_chat;
mod live_responses;
mod live_round;
mod prepare;
mod recent_walks;
mod reply;
mod responses;
mod responses_rounds;
mod round_cap;
mod round_driver;
mod rounds;
mod splice;

use std::sync::{Arc, LazyLock};

use axum::body::Body;
use axum::http::{HeaderMap, Response};
use bytes::Bytes;
use mc_core::Host;
use mc_core::config::ToolsMode;
use mc_engine::tools::{ToolSpec, tool_specs};

pub use recent_walks::RecentWalks;
pub use rounds::Call;

use crate::app::App;
use crate::client_request::names_tool;
use crate::pass_decode::DecodedCall;
use crate::provider::{Provider, ProxyError};
use crate::session_resolve::SessionHints;

/// A client request made ready for the proxy's tools, on its wire.
pub enum Ready {
    /// Anthropic Messages.
    Anthropic(prepare::Prepared),
    /// OpenAI Chat Completions.
    Chat(chat::ChatPrepared),
    /// OpenAI Responses.
    Responses(responses::ResponsesPrepared),
}

impl Ready {
    /// The body the pass reads instead of the client's.
    pub fn body(&self) -> Bytes {
        match self {
            Self::Anthropic(prepared) => prepared.body.clone(),
            Self::Chat(prepared) => prepared.body.clone(),
            Self::Responses(prepared) => prepared.body.clone(),
        }
    }

    /// [`Self::body`] as the pass reads it, when the preparation already has it decoded
    /// (an Anthropic body's is the pass's own incremental decode's to make); once.
    pub fn take_decoded(&mut self) -> Option<Box<DecodedCall>> {
        match self {
            Self::Anthropic(_) => None,
            Self::Chat(prepared) => prepared.decoded.take(),
            Self::Responses(prepared) => prepared.decoded.take(),
        }
    }
}

/// Whether a call may get our tools, from the mode and its headers alone: the cheap test
/// every managed call takes, so that a call which cannot get them (`off`, `mcp`, Claude
/// Code's headers under `auto`) is not decoded a second time.
///
/// A call with no credentials to a provider that needs them never gets them: the tools read
/// the project's history, and a caller without a key is not the user's agent.
pub fn may_serve(app: &App, provider: Provider, headers: &HeaderMap) -> bool {
    let upstream = match provider {
        Provider::Anthropic => &app.settings.upstream_anthropic,
        Provider::OpenAi | Provider::OpenAiResponses => &app.settings.upstream_openai,
    };
    (carries_credentials(headers) || is_local_upstream(upstream))
        && app
            .engine()
            .is_ok_and(|engine| served_here(engine.config().tools.mode, headers, None))
}

/// Whether a request carries a provider credential (an API key or a login's token).
fn carries_credentials(headers: &HeaderMap) -> bool {
    ["x-api-key", "authorization", "api-key"]
        .iter()
        .any(|name| headers.get(*name).is_some_and(|value| !value.is_empty()))
}

/// Whether an upstream base URL is a server on this machine (a local model server, which
/// may need no key; a remote provider always does).
fn is_local_upstream(base: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(base) else {
        return false;
    };
    let host = url.host_str().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

/// Makes a request ready for the proxy's tools, or `None` when it does not get them.
pub fn ready(
    app: &App,
    provider: Provider,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Option<Ready>, ProxyError> {
    Ok(match provider {
        Provider::Anthropic => prepare::prepare(app, headers, body)?.map(Ready::Anthropic),
        Provider::OpenAi => chat::prepare_chat(app, headers, body)?.map(Ready::Chat),
        Provider::OpenAiResponses => {
            responses::prepare_responses(app, headers, body)?.map(Ready::Responses)
        }
    })
}

/// Answers the client from the first successful upstream response of a ready request.
pub async fn answer(
    app: Arc<App>,
    ready: Ready,
    call: Call,
    response: reqwest::Response,
) -> Response<Body> {
    match ready {
        Ready::Anthropic(prepared) => rounds::answer(app, prepared, call, response).await,
        Ready::Chat(prepared) => chat_rounds::answer_chat(app, prepared, call, response).await,
        Ready::Responses(prepared) => {
            responses_rounds::answer_responses(app, prepared, call, response).await
        }
    }
}

/// Most upstream calls the proxy makes for its own tools per client request. A model that
/// keeps calling them (a search after a search) is stopped before it costs the user much.
pub const MAX_ROUNDS: usize = 8;

/// Whether calls of this client get our tools from the proxy: `auto` leaves Claude Code and
/// Codex, whose setup registers our MCP server, to it (recognised by their session headers,
/// Claude Code's `metadata.user_id` or the user agent, as session resolution does), so the
/// model never sees the tools twice (Codex can hide MCP tools behind its tool search, where
/// no tool list shows them); other clients with our MCP server are recognised by their tool
/// list ([`offers_ours`]).
pub fn served_here(mode: ToolsMode, headers: &HeaderMap, metadata_user_id: Option<&str>) -> bool {
    match mode {
        ToolsMode::Proxy => true,
        ToolsMode::Mcp | ToolsMode::Off => false,
        ToolsMode::Auto => !matches!(
            SessionHints::read(headers, metadata_user_id).host,
            Host::ClaudeCode | Host::Codex
        ),
    }
}

/// The tools' definitions, built once: their schemas are generated, and the bytes must be
/// the same on every request.
static SPECS: LazyLock<Vec<ToolSpec>> = LazyLock::new(tool_specs);

/// Whether `name` is one of our tools.
pub fn is_ours(name: &str) -> bool {
    SPECS.iter().any(|spec| spec.name == name)
}

/// Whether a client's tool list already offers our tools: under their own names, or under
/// the names hosts give an MCP server's tools (`mcp__magic-context__ctx_search` in Claude
/// Code and Codex, `magic-context_ctx_search` in OpenCode). Such a client has our MCP
/// server, so the proxy adds nothing: the model would see every tool twice, and a tool of
/// the same name twice is an error upstream.
pub fn offers_ours<'a>(mut names: impl Iterator<Item = &'a str>) -> bool {
    names.any(|name| SPECS.iter().any(|spec| names_tool(name, spec.name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_tools_are_recognised_under_the_names_hosts_give_mcp_tools() {
        for names in [
            ["read_file", "ctx_search"],
            ["read_file", "mcp__magic-context__ctx_memory"],
            ["magic-context_ctx_note", "bash"],
        ] {
            assert!(offers_ours(names.into_iter()), "{names:?}");
        }
        assert!(!offers_ours(
            ["read_file", "my_ctx_searcher", "xctx_search"].into_iter()
        ));
    }

    #[test]
    fn only_a_caller_with_a_key_gets_tools_from_a_remote_provider() {
        let mut headers = HeaderMap::new();
        assert!(!carries_credentials(&headers));
        headers.insert("x-api-key", "".parse().unwrap());
        assert!(!carries_credentials(&headers), "an empty key is none");
        for name in ["x-api-key", "authorization", "api-key"] {
            let mut headers = HeaderMap::new();
            headers.insert(name, "secret".parse().unwrap());
            assert!(carries_credentials(&headers), "{name}");
        }
        for local in [
            "http://127.0.0.1:11434",
            "http://localhost:8080/v1",
            "http://[::1]:9000",
        ] {
            assert!(is_local_upstream(local), "{local}");
        }
        for remote in [
            "https://api.anthropic.com",
            "https://api.openai.com",
            "http://10.0.0.5:8080",
            "http://localhost.example",
            "not a url",
        ] {
            assert!(!is_local_upstream(remote), "{remote}");
        }
    }
}
