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

use mc_core::Message;
use mc_wire::anthropic;
use serde_json::Value;

/// A message list as encoded for one upstream request: `[`, the messages, `]`.
#[derive(Debug, Default)]
pub struct EncodedMessages {
    bytes: Vec<u8>,
    /// Per message: the message and where its unmarked encoding lies in `bytes` (`None` for
    /// a marked message).
    kept: Vec<Option<(Arc<Message>, Range<usize>)>>,
}

impl EncodedMessages {
    /// Encodes `messages` with `marks` (per message index, the cache markers of its blocks),
    /// copying each unmarked message that `previous` holds at the same index.
    pub fn encode(
        messages: &[Arc<Message>],
        marks: &BTreeMap<usize, Vec<(usize, Value)>>,
        previous: Option<&Self>,
    ) -> Self {
        let capacity = previous.map_or(0, |previous| previous.bytes.len()) + 4096;
        let mut bytes = Vec::with_capacity(capacity);
        let mut kept = Vec::with_capacity(messages.len());
        bytes.push(b'[');
        for (index, message) in messages.iter().enumerate() {
            if index > 0 {
                bytes.push(b',');
            }
            let start = bytes.len();
            let marked = marks.get(&index);
            let reusable = previous
                .and_then(|previous| previous.unmarked(index, message))
                .filter(|_| marked.is_none());
            match reusable {
                Some(encoded) => bytes.extend_from_slice(encoded),
                None => {
                    let mut wire = anthropic::into_wire_message(Message::clone(message));
                    for (block, marker) in marked.into_iter().flatten() {
                        wire.mark_block(*block, marker.clone());
                    }
                    // Encoding a wire value into memory cannot fail.
                    let _ = serde_json::to_writer(&mut bytes, &wire);
                }
            }
            kept.push(
                marked
                    .is_none()
                    .then(|| (Arc::clone(message), start..bytes.len())),
            );
        }
        bytes.push(b']');
        Self { bytes, kept }
    }

    /// The encoded list, for [`anthropic::MessagesRequest::encode_with_messages`].
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The kept unmarked bytes of message `index`, when it is `message` itself.
    fn unmarked(&self, index: usize, message: &Arc<Message>) -> Option<&[u8]> {
        let (kept, range) = self.kept.get(index)?.as_ref()?;
        Arc::ptr_eq(kept, message)
            .then(|| self.bytes.get(range.clone()))
            .flatten()
    }
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

    #[test]
    fn reused_and_fresh_encodings_equal_encoding_the_whole_list() {
        let marker = json!({"type": "ephemeral"});
        let first = vec![message("a"), message("b"), message("c")];
        let marks = BTreeMap::from([(2, vec![(1, marker.clone())])]);
        let one = EncodedMessages::encode(&first, &marks, None);
        assert_eq!(one.bytes(), whole(&first, &marks));

        // The marker moves to the new last message; an equal but distinct message at index
        // 1 is encoded again (identity, not equality, decides reuse).
        let second = vec![
            Arc::clone(&first[0]),
            message("b"),
            Arc::clone(&first[2]),
            message("d"),
        ];
        let marks = BTreeMap::from([(3, vec![(0, marker.clone())])]);
        let two = EncodedMessages::encode(&second, &marks, Some(&one));
        assert_eq!(two.bytes(), whole(&second, &marks));
        assert!(two.unmarked(0, &second[0]).is_some());
        assert!(two.unmarked(3, &second[3]).is_none(), "marked: not kept");

        let third = vec![Arc::clone(&second[0]), Arc::clone(&second[1])];
        let three = EncodedMessages::encode(&third, &BTreeMap::new(), Some(&two));
        assert_eq!(three.bytes(), whole(&third, &BTreeMap::new()));
    }
}
