//! The encoded message list of a session's last upstream Anthropic request, kept so the next
//! request encodes only what changed.
//!
//! A cache-hit pass re-sends the whole previous conversation plus the new turn, and encoding
//! every message again was the largest part of rendering a long session's request. The engine
//! returns the very same shared message for each tail message it rendered as on the previous
//! pass ([`mc_engine::PassOutcome::messages`]), so a message is recognised by identity
//! (`Arc::ptr_eq`; the kept `Arc` holds the allocation, so its address cannot be taken by
//! another message meanwhile) and its kept bytes are copied. Messages carrying a cache marker
//! are encoded afresh and never kept: their bytes differ from the unmarked ones the next
//! request will want.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use mc_core::Message;
use mc_wire::anthropic;
use serde_json::Value;

/// A message list as encoded in one upstream request body.
#[derive(Debug, Default)]
pub struct EncodedMessages {
    /// The body the list lies in.
    body: Bytes,
    /// Per message: the message and where its unmarked encoding lies in `body` (`None` for
    /// a marked message).
    kept: Vec<Option<(Arc<Message>, Range<usize>)>>,
}

impl EncodedMessages {
    /// Appends the list (`[`, the messages, `]`) for `messages` with `marks` (per message
    /// index, the cache markers of its blocks) to `out`, copying each unmarked message that
    /// `previous` holds at the same index. The result names where each message went in
    /// `out`; [`Self::new`] makes it the list of the finished body. `previous`'s records are
    /// written over in place, and one that stays is not even written when its bytes keep
    /// their place (a new list of them, each holding a clone of its message, cost every pass
    /// a write of fresh memory and a cache miss per message).
    pub fn write(
        out: &mut Vec<u8>,
        messages: &[Arc<Message>],
        marks: &BTreeMap<usize, Vec<(usize, Value)>>,
        previous: Option<Self>,
    ) -> Written {
        let (body, mut kept) = match previous {
            Some(previous) => (previous.body, previous.kept),
            None => (Bytes::new(), Vec::with_capacity(messages.len())),
        };
        out.push(b'[');
        for (index, message) in messages.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            let start = out.len();
            let marked = marks.get(&index);
            let reusable = unmarked(&body, &kept, index, message).filter(|_| marked.is_none());
            match reusable {
                Some(encoded) => out.extend_from_slice(encoded),
                None => {
                    let mut wire = anthropic::into_wire_message(Message::clone(message));
                    for (block, marker) in marked.into_iter().flatten() {
                        wire.mark_block(*block, marker.clone());
                    }
                    // Encoding a wire value into memory cannot fail.
                    let _ = serde_json::to_writer(&mut *out, &wire);
                }
            }
            let range = start..out.len();
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
        out.push(b']');
        Written { kept }
    }

    /// The length of the body the list lies in.
    pub fn body_len(&self) -> usize {
        self.body.len()
    }

    /// The list written into `body`, which was moved by `shift` bytes since (a body rebuilt
    /// around the same list).
    pub fn new(body: Bytes, written: Written, shift: isize) -> Self {
        if shift == 0 {
            return Self {
                body,
                kept: written.kept,
            };
        }
        let kept = written
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

/// The unmarked bytes (in `body`) `kept` holds for message `index`, when it is `message`
/// itself.
fn unmarked<'a>(
    body: &'a [u8],
    kept: &[Option<(Arc<Message>, Range<usize>)>],
    index: usize,
    message: &Arc<Message>,
) -> Option<&'a [u8]> {
    let (kept, range) = kept.get(index)?.as_ref()?;
    Arc::ptr_eq(kept, message)
        .then(|| body.get(range.clone()))
        .flatten()
}

impl mc_core::HeldBytes for EncodedMessages {
    /// The body (its allocation, shared with the busy-store memory of the same request) and
    /// one slot per message; the messages themselves belong to the engine's rendered tail.
    fn held_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.body.len()
            + self.kept.capacity() * std::mem::size_of::<Option<(Arc<Message>, Range<usize>)>>()
    }
}

/// Where [`EncodedMessages::write`] put each message.
#[derive(Debug)]
pub struct Written {
    kept: Vec<Option<(Arc<Message>, Range<usize>)>>,
}

#[cfg(test)]
mod tests {
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
        let mut out = b"{\"messages\":".to_vec();
        let list_start = out.len();
        let written = EncodedMessages::write(&mut out, messages, marks, previous);
        out.push(b'}');
        let list = out[list_start..out.len() - 1].to_vec();
        assert_eq!(list, whole(messages, marks));
        EncodedMessages::new(Bytes::from(out), written, 0)
    }

    impl EncodedMessages {
        fn unmarked(&self, index: usize, message: &Arc<Message>) -> Option<&[u8]> {
            unmarked(&self.body, &self.kept, index, message)
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
        // A body rebuilt around the same list keeps finding its messages.
        let mut moved = b"{\"model\":\"m\",".to_vec();
        moved.extend_from_slice(&three.body[1..]);
        let written = Written {
            kept: three.kept.clone(),
        };
        let shifted = EncodedMessages::new(Bytes::from(moved), written, 12);
        assert_eq!(shifted.unmarked(1, &third[1]), three.unmarked(1, &third[1]));
    }
}
