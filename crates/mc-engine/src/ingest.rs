//! Ingest: the client's new messages join the raw log and get their tags.
//!
//! Clients resend the whole conversation on every call. The stored log is the truth, so the
//! request must extend it: the first `stored` messages of the request hash to the stored
//! chain. New messages are appended with their ordinals, and each new taggable unit gets the
//! next tag number, once, in the same transaction.

use mc_core::tags::{TagAssignment, TagNo, assign_tags};
use mc_core::{HashChain, Host, Message, ProjectId, SessionId};
use mc_store::{NewSession, SessionRecord, WriteTx};

use crate::error::{EngineError, Result};

/// What ingest found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ingested {
    /// How many messages the log held before this request.
    pub previous_count: u64,
    /// How many it holds now (the request's length).
    pub count: u64,
    /// The tags given to the new messages' units.
    pub assigned: Vec<TagAssignment>,
    /// The session's stored row, as this request found it (its mode before the pass).
    pub session: SessionRecord,
}

/// Appends the request's new messages and tags them; refuses a request whose history
/// contradicts the stored one. `chain`, when given, must be the hash chain of `messages`
/// (one of another length is ignored).
pub fn ingest(
    tx: &WriteTx<'_>,
    session: &SessionId,
    host: Host,
    project: Option<&ProjectId>,
    messages: &[Message],
    chain: Option<&HashChain>,
    now_ms: i64,
) -> Result<Ingested> {
    let record = tx.upsert_session(
        &NewSession {
            id: session.clone(),
            host,
            project: project.cloned(),
        },
        now_ms,
    )?;
    let end = tx.log_end(session)?;
    let stored = end.count;
    let stored_len = usize::try_from(stored).unwrap_or(usize::MAX);
    if stored_len > messages.len() {
        return Err(diverged(session, messages, stored, tx)?);
    }
    if stored > 0 {
        let ours = match chain.filter(|chain| chain.len() == messages.len()) {
            Some(chain) => chain.links().get(stored_len - 1).copied(),
            None => HashChain::of(&messages[..stored_len]).head().copied(),
        };
        if ours != end.head {
            return Err(diverged(session, messages, stored, tx)?);
        }
    }
    let new = &messages[stored_len..];
    let mut assignments = Vec::new();
    if !new.is_empty() {
        tx.append_messages(session, stored, new, now_ms)?;
        let mut next = tx
            .newest_tag(session)?
            .map_or(TagNo(1), |newest| newest.next().unwrap_or(newest));
        for (offset, message) in new.iter().enumerate() {
            let ordinal = stored + offset as u64;
            let assigned = assign_tags(next, ordinal, message);
            if let Some(last) = assigned.last() {
                next = last.tag.next().unwrap_or(last.tag);
            }
            assignments.extend(assigned);
        }
        tx.insert_tags(session, &assignments)?;
    }
    Ok(Ingested {
        previous_count: stored,
        count: messages.len() as u64,
        assigned: assignments,
        session: record,
    })
}

/// Builds the divergence error with the length of the shared prefix.
fn diverged(
    session: &SessionId,
    messages: &[Message],
    stored: u64,
    tx: &WriteTx<'_>,
) -> Result<EngineError> {
    let stored_messages = tx.messages(session, ..)?;
    let common = stored_messages
        .iter()
        .zip(messages)
        .take_while(|(stored, theirs)| stored.hash == theirs.content_hash())
        .count() as u64;
    Ok(EngineError::Diverged {
        session: session.clone(),
        common_prefix: common,
        stored,
    })
}
