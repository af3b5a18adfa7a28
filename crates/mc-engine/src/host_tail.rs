//! The client's messages of a host-managed session (compaction off), kept between its
//! passes.
//!
//! With compaction off a pass returns the head and then every message the client sent, as
//! it sent it. Copying them all on every call was most of such a pass on a long session
//! (the whole conversation, a megabyte and more, per call). A message named by the same
//! hash-chain link as one the previous pass returned (the link covers its content and
//! everything before it) is that message, so it is shared instead, and only what the
//! client added since is copied.

use std::sync::Arc;

use mc_core::{ContentHash, HashChain, HeldBytes, Message};

/// The messages a host-managed pass returned, each with its chain link and its size.
#[derive(Debug, Default)]
pub(crate) struct HostTail {
    links: Vec<ContentHash>,
    messages: Vec<Arc<Message>>,
    held: Vec<usize>,
}

impl HostTail {
    /// `messages` as shared messages, reusing those this tail holds under the same chain
    /// links, and the tail to keep for the session's next pass (none without a chain that
    /// names every message: nothing could prove a later request repeats them).
    pub fn share(
        kept: Option<Self>,
        messages: &[Message],
        chain: Option<&HashChain>,
    ) -> (Vec<Arc<Message>>, Option<Self>) {
        let Some(chain) = chain.filter(|chain| chain.len() == messages.len()) else {
            return (messages.iter().cloned().map(Arc::new).collect(), None);
        };
        let mut tail = kept.unwrap_or_default();
        let shared = tail
            .links
            .iter()
            .zip(chain.links())
            .take_while(|(kept, link)| kept == link)
            .count();
        tail.links.truncate(shared);
        tail.messages.truncate(shared);
        tail.held.truncate(shared);
        for (message, link) in messages[shared..].iter().zip(&chain.links()[shared..]) {
            tail.links.push(*link);
            tail.held.push(message.held_bytes());
            tail.messages.push(Arc::new(message.clone()));
        }
        (tail.messages.clone(), Some(tail))
    }
}

impl HeldBytes for HostTail {
    fn held_bytes(&self) -> usize {
        self.held.iter().sum::<usize>()
            + self.links.capacity() * std::mem::size_of::<ContentHash>()
            + self.messages.capacity() * std::mem::size_of::<Arc<Message>>()
            + self.held.capacity() * std::mem::size_of::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use mc_core::{Part, Role};

    use super::*;

    fn said(text: &str) -> Message {
        Message::new(Role::User, vec![Part::text(text)])
    }

    #[test]
    fn a_repeated_message_is_shared_and_a_changed_one_copied() {
        let first = vec![said("a"), said("b")];
        let (returned, kept) = HostTail::share(None, &first, Some(&HashChain::of(&first)));
        let second = vec![said("a"), said("b"), said("c")];
        let (again, kept) = HostTail::share(kept, &second, Some(&HashChain::of(&second)));
        assert!(Arc::ptr_eq(&returned[0], &again[0]));
        assert!(Arc::ptr_eq(&returned[1], &again[1]));
        assert_eq!(
            again.iter().map(|m| (**m).clone()).collect::<Vec<_>>(),
            second
        );
        // An edited earlier message changes its link and every later one: copied again.
        let edited = vec![said("a"), said("B"), said("c")];
        let (third, kept) = HostTail::share(kept, &edited, Some(&HashChain::of(&edited)));
        assert!(Arc::ptr_eq(&again[0], &third[0]));
        assert!(!Arc::ptr_eq(&again[2], &third[2]));
        assert_eq!(
            third.iter().map(|m| (**m).clone()).collect::<Vec<_>>(),
            edited
        );
        assert!(kept.is_some_and(|tail| tail.held_bytes() > 0));
    }

    #[test]
    fn without_a_whole_chain_nothing_is_kept() {
        let messages = vec![said("a"), said("b")];
        let short = HashChain::of(&messages[..1]);
        let (returned, kept) = HostTail::share(None, &messages, Some(&short));
        assert_eq!(returned.len(), 2);
        assert!(kept.is_none());
        assert!(HostTail::share(None, &messages, None).1.is_none());
    }

    proptest::proptest! {
        /// Whatever the client sends from call to call (a message appended, one edited, the
        /// conversation cut back), the pass returns exactly its messages, sharing those
        /// whose chain link it kept.
        #[test]
        fn the_returned_messages_are_always_the_clients(
            calls in proptest::collection::vec(
                proptest::collection::vec(0u8..4, 0..8), 1..12,
            ),
        ) {
            let mut kept = None;
            let mut previous: Vec<Arc<Message>> = Vec::new();
            for texts in calls {
                let messages: Vec<Message> =
                    texts.iter().map(|text| said(&text.to_string())).collect();
                let chain = HashChain::of(&messages);
                let (returned, next) = HostTail::share(kept, &messages, Some(&chain));
                let plain: Vec<Message> = returned.iter().map(|m| (**m).clone()).collect();
                proptest::prop_assert_eq!(&plain, &messages);
                let shared = previous
                    .iter()
                    .zip(&returned)
                    .take_while(|(a, b)| Arc::ptr_eq(a, b))
                    .count();
                let same_start = HashChain::of(&previous.iter().map(|m| (**m).clone()).collect::<Vec<_>>())
                    .common_prefix_len(&chain);
                proptest::prop_assert_eq!(shared, same_start);
                previous = returned;
                kept = next;
            }
        }
    }
}
