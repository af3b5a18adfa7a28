//! An Anthropic request with our tools: our tools after the client's, the guidance last in
//! the system prompt, and every stored exchange put back, encoded; the same bytes on every
//! request of a session.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use mc_core::ProjectId;
use mc_engine::tools::Offer;
use mc_store::{ReadTx, StoreError};
use mc_wire::anthropic::{self, MessagesRequest};
use mc_wire::chunked_body::ChunkedBody;
use mc_wire::recent_bodies::KnownStart;
use serde_json::json;

use crate::anthropic_exchange::add_tools;
use crate::splice::{Point, Used, splice_in};
use crate::walk_steps::list_with;

/// A client request made ready for the pass, and what later rounds need of it.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The request with our tools and the guidance, its message list empty: the head later
    /// rounds are sent with.
    pub head: Arc<MessagesRequest>,
    /// The request with the hidden exchanges spliced in, encoded: what the pass reads
    /// instead of the client's body.
    pub body: ChunkedBody,
    /// Where the message list (`[` … `]`) lies in `body`.
    pub list: Range<usize>,
    /// What `body` is known to share with the previous prepared body (the walk's).
    pub known: Option<KnownStart>,
    /// Where the conversation stands after its last message: the anchor of the answer.
    pub point: Point,
    /// The project our tools act in.
    pub project: Option<ProjectId>,
}

impl Prepared {
    /// The body of the next round: the prepared messages, then `hidden` (the rounds run
    /// here so far), with tool calls forbidden on the `last` round allowed. The bytes are
    /// the prepared request's encoding with `hidden` appended to its messages.
    pub fn next_round(&self, hidden: &[anthropic::Message], last: bool) -> Bytes {
        let mut next = MessagesRequest::clone(&self.head);
        if last {
            next.rest
                .insert("tool_choice".to_owned(), json!({"type": "none"}));
        }
        let (before, after) = next.encode_around_messages();
        next.messages = hidden.to_vec();
        let appended = next.encode();
        let prepared = self
            .body
            .get(self.list.clone())
            .unwrap_or(Cow::Borrowed(b"[]"));
        let list = list_with(&prepared, &appended, (before.len(), after.len()));
        Bytes::from(next.encode_with_messages(&list))
    }
}

/// A whole client request with its exchanges put back, our tools and the guidance added,
/// encoded: the reference every incremental preparation must equal byte for byte.
pub fn splice_whole(
    tx: &ReadTx<'_>,
    project: Option<ProjectId>,
    mut request: MessagesRequest,
    offer: Offer,
    used: &mut Used,
) -> Result<Prepared, StoreError> {
    let messages = std::mem::take(&mut request.messages);
    let (messages, point) = splice_in(tx, project, messages, used)?;
    request.messages = messages;
    add_tools(&mut request, offer);
    let body = Bytes::from(request.encode());
    request.messages = Vec::new();
    let (before, after) = request.encode_around_messages();
    let list = before.len()..body.len().saturating_sub(after.len());
    Ok(Prepared {
        head: Arc::new(request),
        body: body.into(),
        list,
        known: None,
        point,
        project: None,
    })
}
