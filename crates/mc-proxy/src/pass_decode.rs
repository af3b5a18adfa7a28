//! The pass's first stage: the client's body read as its wire's request, with the
//! conversation in the neutral model and its hash chain.
//!
//! A Responses request that leans on history stored at the provider (or carries no input)
//! has no conversation to manage; it is named here and forwarded as sent.

use mc_core::breakpoints::CacheTtlChoice;
use mc_core::{HashChain, Message};

use crate::app::App;
pub use crate::body_layout::BodyLayout;
use crate::client_request::ClientRequest;
use crate::provider::{ErrorKind, Provider, ProxyError};
use mc_wire::chunked_body::ChunkedBody;
use mc_wire::recent_bodies::KnownStart;

/// A client body read whole.
pub struct DecodedCall {
    /// The request.
    pub client: ClientRequest,
    /// Its conversation in the neutral model.
    pub conversation: Vec<Message>,
    /// The conversation's hash chain.
    pub chain: HashChain,
    /// The client's cache TTL choice (Anthropic's markers; the default elsewhere).
    pub client_ttl: CacheTtlChoice,
    /// Where the body's messages lie, to remember for the session's next request.
    pub layout: Option<BodyLayout>,
}

/// What the body is.
pub enum Decoding {
    /// A conversation to manage.
    Managed(Box<DecodedCall>),
    /// A Responses call on history stored at the provider, for `model`: nothing to manage.
    Stateful {
        /// The model it names.
        model: String,
    },
}

/// Reads `body` as `provider`'s request; a body that is not one is the client's error.
/// `known` is what the body's maker (the agent tools' walk) vouches for of its first bytes.
pub fn decode(
    app: &App,
    provider: Provider,
    body: &ChunkedBody,
    known: Option<&KnownStart>,
) -> Result<Decoding, ProxyError> {
    let invalid = |error: mc_wire::WireError| {
        ProxyError::new(provider, ErrorKind::InvalidRequest, error.to_string())
    };
    let decoded = match provider {
        Provider::Anthropic => {
            let decoded = app
                .recent_requests
                .decode(body, usize::MAX, known)
                .map_err(invalid)?;
            DecodedCall {
                client: ClientRequest::Anthropic(decoded.request),
                conversation: decoded.conversation,
                chain: decoded.chain,
                client_ttl: decoded.client_ttl,
                layout: Some(BodyLayout::Anthropic(decoded.layout)),
            }
        }
        Provider::OpenAi => {
            let decoded = app.recent_chats.decode(body, known).map_err(invalid)?;
            // Chat requests carry no cache markers: OpenAI caches on its own.
            DecodedCall {
                client: ClientRequest::OpenAi(decoded.request),
                conversation: decoded.conversation,
                chain: decoded.chain,
                client_ttl: CacheTtlChoice::Default,
                layout: decoded.layout.map(BodyLayout::Chat),
            }
        }
        Provider::OpenAiResponses => {
            let decoded = app.recent_responses.decode(body, known).map_err(invalid)?;
            let request = &decoded.request;
            let stateful = request
                .stateful_reason()
                .or_else(|| request.input.is_none().then_some("no input"));
            if let Some(reason) = stateful {
                app.note_stateful(reason);
                return Ok(Decoding::Stateful {
                    model: decoded.request.model,
                });
            }
            // OpenAI caches on its own; `prompt_cache_key` goes up as sent.
            DecodedCall {
                client: ClientRequest::Responses(decoded.request),
                conversation: decoded.conversation,
                chain: decoded.chain,
                client_ttl: CacheTtlChoice::Default,
                layout: decoded.layout.map(BodyLayout::Responses),
            }
        }
    };
    Ok(Decoding::Managed(Box::new(decoded)))
}
