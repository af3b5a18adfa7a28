//! The encoded message list of a session's last upstream Anthropic request, kept so the next
//! request encodes only what changed.
//!
//! A cache-hit pass re-sends the whole previous conversation plus the new turn, and encoding
//! every message again was the largest part of rendering a long session's request. The engine
//! returns the very same shared message for each tail message it rendered as on the previous
//! pass ([`mc_engine::PassOutcome::messages`]), so a message is recognised by identity
//! (`Arc::ptr_eq`; the kept `Arc` holds the allocation, so its address cannot be taken by
//! another message meanwhile) and its kept bytes are shared with the new body
//! ([`crate::list_writer`]). Messages carrying a cache marker
//! are encoded afresh and never kept: their bytes differ from the unmarked ones the next
//! request will want.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use mc_core::Message;
use mc_wire::anthropic;
use serde_json::Value;

use crate::chunked_body::ChunkedBody;
use crate::list_writer::ListWriter;

/// A message list as encoded in one upstream request body.
#[derive(Debug, Default)]
pub struct EncodedMessages {
    /// The body the list lies in.
    body: ChunkedBody,
    /// Per message: the message and where its unmarked encoding lies in `body` (`None` for
    /// a marked message).
    kept: Vec<Option<(Arc<Message>, Range<usize>)>>,
}

impl EncodedMessages {
    /// The body `before`, the list (`[`, the messages, `]`) for `messages` with `marks` (per
    /// message index, the cache markers of its blocks), then `after`; each unmarked message
    /// that `previous` holds at the same index is shared with its body, not encoded again.
    /// Returns the body and the list as the next request will find it. `previous`'s records
    /// are written over in place, and one that stays is not even written when its bytes
    /// keep their place (a new list of them, each holding a clone of its message, cost
    /// every pass a write of fresh memory and a cache miss per message).
    pub fn write(
        before: ChunkedBody,
        after: ChunkedBody,
        messages: &[Arc<Message>],
        marks: &BTreeMap<usize, Vec<(usize, Value)>>,
        previous: Option<Self>,
    ) -> (ChunkedBody, Self) {
        let (then, mut kept) = match previous {
            Some(previous) => (previous.body, previous.kept),
            None => (ChunkedBody::new(), Vec::with_capacity(messages.len())),
        };
        let mut list = ListWriter::open(before);
        for (index, message) in messages.iter().enumerate() {
            let marked = marks.get(&index);
            let reusable = unmarked(&then, &kept, index, message).filter(|_| marked.is_none());
            let range = match reusable {
                Some(range) => list.share(&then, range),
                None => {
                    let mut wire = anthropic::into_wire_message(Message::clone(message));
                    for (block, marker) in marked.into_iter().flatten() {
                        wire.mark_block(*block, marker.clone());
                    }
                    let start = list.write(&wire);
                    start..list.len()
                }
            };
            match kept.get_mut(index) {
                Some(Some((was, at))) if marked.is_none() && Arc::ptr_eq(was, message) => {
                    if *at != range {
                        *at = range;
                    }
                }
                slot => {
                    let now = marked.is_none().then(|| (Arc::clone(message), range));
                    match slot {
                        Some(slot) => *slot = now,
                        None => kept.push(now),
                    }
                }
            }
        }
        kept.truncate(messages.len());
        let (body, _) = list.close(after);
        let encoded = Self {
            body: body.clone(),
            kept,
        };
        (body, encoded)
    }

    /// The length of the body the list lies in.
    pub fn body_len(&self) -> usize {
        self.body.len()
    }

    /// The same list in `body`, which holds it `shift` bytes further on (a body rebuilt
    /// around the same list).
    pub fn moved(self, body: ChunkedBody, shift: isize) -> Self {
        let kept = self
            .kept
            .into_iter()
            .map(|entry| {
                entry.and_then(|(message, range)| {
                    let start = range.start.checked_add_signed(shift)?;
                    let end = range.end.checked_add_signed(shift)?;
                    Some((message, start..end))
                })
            })
            .collect();
        Self { body, kept }
    }
}

/// Where (in `body`) `kept` holds the unmarked bytes of message `index`, when it is
/// `message` itself.
fn unmarked(
    body: &ChunkedBody,
    kept: &[Option<(Arc<Message>, Range<usize>)>],
    index: usize,
    message: &Arc<Message>,
) -> Option<Range<usize>> {
    let (kept, range) = kept.get(index)?.as_ref()?;
    (Arc::ptr_eq(kept, message) && range.end <= body.len()).then(|| range.clone())
}

impl mc_core::HeldBytes for EncodedMessages {
    /// The body (its chunks, shared with the busy-store memory of the same request) and one
    /// slot per message; the messages themselves belong to the engine's rendered tail.
    fn held_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.body.len()
            + self.kept.capacity() * std::mem::size_of::<Option<(Arc<Message>, Range<usize>)>>()
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use mc_core::{Part, Role};
    use serde_json::json;

    use super::*;

    fn message(text: &str) -> Arc<Message> {
        Arc::new(Message::new(
            Role::User,
            vec![Part::text(text), Part::text("more")],
        ))
    }

    fn whole(messages: &[Arc<Message>], marks: &BTreeMap<usize, Vec<(usize, Value)>>) -> Vec<u8> {
        let mut wire: Vec<_> = messages
            .iter()
            .map(|message| anthropic::into_wire_message(Message::clone(message)))
            .collect();
        for (&index, blocks) in marks {
            for (block, marker) in blocks {
                wire[index].mark_block(*block, marker.clone());
            }
        }
        serde_json::to_vec(&wire).unwrap()
    }

    fn encode(
        messages: &[Arc<Message>],
        marks: &BTreeMap<usize, Vec<(usize, Value)>>,
        previous: Option<EncodedMessages>,
    ) -> EncodedMessages {
        // A head before the list, as in a request body.
        let before = ChunkedBody::from(Bytes::from_static(b"{\"messages\":"));
        let after = ChunkedBody::from(Bytes::from_static(b"}"));
        let (body, encoded) = EncodedMessages::write(before, after, messages, marks, previous);
        let body = body.to_bytes();
        assert_eq!(&body[12..body.len() - 1], whole(messages, marks));
        encoded
    }

    impl EncodedMessages {
        fn unmarked(&self, index: usize, message: &Arc<Message>) -> Option<Vec<u8>> {
            let range = unmarked(&self.body, &self.kept, index, message)?;
            Some(self.body.get(range)?.into_owned())
        }
    }

    #[test]
    fn reused_and_fresh_encodings_equal_encoding_the_whole_list() {
        let marker = json!({"type": "ephemeral"});
        let first = vec![message("a"), message("b"), message("c")];
        let marks = BTreeMap::from([(2, vec![(1, marker.clone())])]);
        let one = encode(&first, &marks, None);

        // The marker moves to the new last message; an equal but distinct message at index
        // 1 is encoded again (identity, not equality, decides reuse).
        let second = vec![
            Arc::clone(&first[0]),
            message("b"),
            Arc::clone(&first[2]),
            message("d"),
        ];
        let marks = BTreeMap::from([(3, vec![(0, marker.clone())])]);
        let two = encode(&second, &marks, Some(one));
        assert!(two.unmarked(0, &second[0]).is_some());
        assert!(two.unmarked(1, &first[1]).is_none(), "another allocation");
        assert!(two.unmarked(3, &second[3]).is_none(), "marked: not kept");

        let third = vec![Arc::clone(&second[0]), Arc::clone(&second[1])];
        let three = encode(&third, &BTreeMap::new(), Some(two));
        let before = three.unmarked(1, &third[1]);
        // A body rebuilt around the same list keeps finding its messages.
        let mut moved = ChunkedBody::from(Bytes::from_static(b"{\"model\":\"m\","));
        moved.append(three.body.slice(1..three.body.len()).unwrap());
        let shifted = three.moved(moved, 12);
        assert_eq!(shifted.unmarked(1, &third[1]), before);
    }

    /// Messages the previous body holds are slices of its chunks, one slice for those that
    /// follow each other there: the conversation is not copied.
    #[test]
    fn unchanged_messages_are_shared_with_the_previous_body_not_copied() {
        let first: Vec<_> = (0..50).map(|at| message(&format!("m{at}"))).collect();
        let one = encode(&first, &BTreeMap::new(), None);
        let mut second = first.clone();
        second.push(message("new"));
        let before = ChunkedBody::from(Bytes::from_static(b"{\"messages\":"));
        let after = ChunkedBody::from(Bytes::from_static(b"}"));
        let old = one.body.clone();
        let (body, _) = EncodedMessages::write(before, after, &second, &BTreeMap::new(), Some(one));
        assert!(
            body.chunks().len() <= 5,
            "head, [, the shared run, the new message, the tail: {}",
            body.chunks().len()
        );
        let shared = body
            .chunks()
            .iter()
            .find(|chunk| chunk.len() > 500)
            .unwrap();
        let list = old.chunks().iter().max_by_key(|chunk| chunk.len()).unwrap();
        let old_start = list.as_ptr() as usize;
        let old_end = old_start + list.len();
        let at = shared.as_ptr() as usize;
        assert!(
            (old_start..old_end).contains(&at),
            "a slice of the old body"
        );
        assert_eq!(
            &body.to_bytes()[12..body.len() - 1],
            whole(&second, &BTreeMap::new())
        );
    }
}
