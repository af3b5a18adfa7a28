//! The part of a request around its message list (model, system prompt, tools,
//! parameters), decoded once for all requests that repeat its bytes.
//!
//! Claude Code sends the same system prompt and tool definitions, tens of KB, on every call
//! of a conversation (and of its subagents'). Equal bytes decode to equal values, so a head
//! whose bytes equal a remembered head's reuses its decoded request, its 1-hour marker
//! reading and its prefix identity.
//!
//! A head is only decoded from a body whose whole JSON was scanned ([`mc_wire::list_split`]), so
//! its bytes hold no second `messages` key, and a body matching them both before and after
//! its list is valid there as that body was: this is the proof the extension leaves to it.

use std::sync::{Arc, OnceLock};

use crate::anthropic::{self, MessagesRequest};
use crate::chunked_body::ChunkedBody;
use crate::list_split::Split;
use bytes::Bytes;
use mc_core::breakpoints::CacheTtlChoice;

/// A decoded head and the bytes it came from.
#[derive(Debug)]
pub struct Head {
    /// The body up to and including the `[` opening the message list.
    before: Bytes,
    /// The body from the `]` closing it.
    after: Bytes,
    /// The request with its message list empty, shared by every request with this head.
    request: Arc<MessagesRequest>,
    /// A client 1-hour marker on the system prompt or a tool.
    pub one_hour: bool,
    /// See [`Self::prefix_identity`].
    identity: OnceLock<String>,
}

impl Head {
    /// Decodes the head of a scanned body; `None` when it does not decode as a request (the
    /// full decode then reports why).
    pub fn decode(body: &[u8], split: &Split, limit_bytes: usize) -> Option<Self> {
        let before = body.get(..=split.open)?;
        let after = body.get(split.close..)?;
        let mut rest = Vec::with_capacity(before.len() + after.len());
        rest.extend_from_slice(before);
        rest.extend_from_slice(after);
        let request = MessagesRequest::decode(&rest, limit_bytes).ok()?;
        if !request.messages.is_empty() {
            return None;
        }
        let one_hour = anthropic::client_ttl(&request) == CacheTtlChoice::OneHour;
        let rest = Bytes::from(rest);
        Some(Self {
            before: rest.slice(..before.len()),
            after: rest.slice(before.len()..),
            request: Arc::new(request),
            one_hour,
            identity: OnceLock::new(),
        })
    }

    /// Whether `body` split at `split` has exactly this head's bytes.
    pub fn matches(&self, body: &ChunkedBody, split: &Split) -> bool {
        body.get(0..split.open + 1).as_deref() == Some(&self.before[..])
            && body.get(split.close..body.len()).as_deref() == Some(&self.after[..])
    }

    /// Where the message list opens in a body with this head.
    pub fn open(&self) -> Option<usize> {
        self.before.len().checked_sub(1)
    }

    /// The decoded request, its message list empty.
    pub fn request(&self) -> Arc<MessagesRequest> {
        Arc::clone(&self.request)
    }

    /// [`anthropic::prefix_identity`] of the request with the client's markers
    /// stripped, as the pass takes it; computed on first use.
    pub fn prefix_identity(&self) -> &str {
        self.identity.get_or_init(|| {
            let mut request = MessagesRequest::clone(&self.request);
            anthropic::strip_client_markers(&mut request);
            anthropic::prefix_identity(&request)
        })
    }
}
