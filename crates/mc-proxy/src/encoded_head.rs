//! The encoded upstream request around its message list, kept per client head and pass
//! choices.
//!
//! Claude Code sends the same system prompt and tools, tens of KB, on every call, and the
//! decode shares one decoded head between the requests that repeat its bytes
//! ([`crate::incremental`]). Rendering copied that head, edited it and encoded it again on
//! every call. The edits are a pure function of the head and of two choices a pass makes
//! ([`HeadEdits`]), so the encoding is kept per (head, choices); the head is recognised by
//! identity (the kept `Arc` holds it, so its address cannot be reused meanwhile).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use mc_wire::anthropic::MessagesRequest;

use crate::head_edits::{HeadEdits, edit_head};

/// Encodings kept: a proxy serves a few distinct heads at a time (a main agent, its
/// subagents, side calls).
const KEPT: usize = 8;

/// A request's bytes before and after its message list.
#[derive(Debug)]
pub struct EncodedHead {
    /// Up to the message list (shared by every body written with it).
    pub before: Bytes,
    /// From the end of the message list.
    pub after: Bytes,
}

/// A client head, the edits applied to it, and the encoding.
type Kept = (Arc<MessagesRequest>, HeadEdits, Arc<EncodedHead>);

/// Recently encoded heads, most recent last.
#[derive(Debug, Default)]
pub struct EncodedHeads {
    kept: Mutex<VecDeque<Kept>>,
}

impl EncodedHeads {
    /// The encoding of `head` (a client request, its messages not used) under `edits`.
    pub fn encode(&self, head: &Arc<MessagesRequest>, edits: HeadEdits) -> Arc<EncodedHead> {
        let same = |(kept, kept_edits, _): &Kept| Arc::ptr_eq(kept, head) && *kept_edits == edits;
        if let Some(found) = self.lock().iter().find(|entry| same(entry)) {
            return Arc::clone(&found.2);
        }
        let mut request = MessagesRequest::clone(head);
        edit_head(&mut request, edits);
        let (before, after) = request.encode_around_messages();
        let encoded = Arc::new(EncodedHead {
            before: Bytes::from(before),
            after: Bytes::from(after),
        });
        let mut kept = self.lock();
        kept.push_back((Arc::clone(head), edits, Arc::clone(&encoded)));
        while kept.len() > KEPT {
            kept.pop_front();
        }
        encoded
    }

    /// The kept encodings; a thread that panicked while holding them left whole entries.
    fn lock(&self) -> MutexGuard<'_, VecDeque<Kept>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use mc_core::breakpoints::Ttl;

    use super::*;

    fn head(system_marker: bool) -> Arc<MessagesRequest> {
        let system = if system_marker {
            r#"[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}]"#
        } else {
            r#"[{"type":"text","text":"Be brief."}]"#
        };
        let body = format!(
            r#"{{"model":"claude-sonnet-4-5","max_tokens":64000,"system":{system},"messages":[],"stream":true}}"#
        );
        Arc::new(MessagesRequest::decode(body.as_bytes(), usize::MAX).unwrap())
    }

    #[test]
    fn kept_encodings_equal_editing_and_encoding_the_request() {
        let heads = EncodedHeads::default();
        let client = head(true);
        for edits in [
            HeadEdits {
                system_marker: None,
                max_tokens: None,
            },
            HeadEdits {
                system_marker: Some(Ttl::OneHour),
                max_tokens: Some(20_000),
            },
        ] {
            let mut edited = MessagesRequest::clone(&client);
            edit_head(&mut edited, edits);
            let list = br#"[{"role":"user","content":"hi"}]"#;
            let first = heads.encode(&client, edits);
            assert_eq!(
                [&first.before[..], list, &first.after[..]].concat(),
                edited.encode_with_messages(list)
            );
            assert!(Arc::ptr_eq(&first, &heads.encode(&client, edits)), "kept");
        }
        // An equal head that is another allocation is encoded on its own.
        let other = head(true);
        let edits = HeadEdits {
            system_marker: None,
            max_tokens: None,
        };
        assert!(!Arc::ptr_eq(
            &heads.encode(&client, edits),
            &heads.encode(&other, edits)
        ));
        let unmarked = heads.encode(&head(false), edits);
        assert_eq!(unmarked.before, heads.encode(&client, edits).before);
    }
}
