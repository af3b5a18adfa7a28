//! The rendered tail kept between passes of a session.
//!
//! Rendering copied every stored message of the tail on every pass, most of a pass's cost on
//! a long session, although a cache-hit pass renders every earlier message exactly as the
//! pass before did. A rendered message is a pure function of the stored message and of what
//! decides its rendering (its parts' [`PartShown`], the reasoning parts dropped from it, the
//! reminders appended to it): [`RenderKey`]. The stored message is named by its hash-chain
//! link, which covers its content and everything before it, so a kept message is reused only
//! when the same content would render under the same decisions.
//!
//! Messages are shared (`Arc`), so a reused message is the same allocation as the one the
//! previous outcome held: the proxy recognises it by identity and reuses its encoded bytes.

use std::sync::Arc;

use mc_core::reduction::PartShown;
use mc_core::{ContentHash, Message};

/// Everything a rendered tail message is a function of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RenderKey {
    /// The hash-chain link of the stored message.
    pub link: ContentHash,
    /// How each of its parts is shown.
    pub shown: Vec<PartShown>,
    /// Indices of its reasoning parts left out.
    pub dropped_reasoning: Vec<u32>,
    /// Reminders appended to it, in the order given.
    pub nudges: Vec<String>,
}

/// One session's tail as last rendered: consecutive ordinals from `first`.
#[derive(Debug, Default)]
pub(crate) struct RenderedTail {
    first: u64,
    kept: Vec<(RenderKey, Arc<Message>)>,
}

impl RenderedTail {
    /// The tail for `keys` (consecutive ordinals from `first`), reusing every kept message
    /// whose key is unchanged and calling `render` for the rest. Afterwards exactly this tail
    /// is kept.
    pub fn render(
        &mut self,
        first: u64,
        keys: Vec<RenderKey>,
        mut render: impl FnMut(u64, &RenderKey) -> Message,
    ) -> Vec<Arc<Message>> {
        let mut previous = std::mem::take(&mut self.kept);
        let skip = first.saturating_sub(self.first);
        let offset = usize::try_from(skip).unwrap_or(usize::MAX);
        let reusable = if first >= self.first {
            previous.get_mut(offset..).unwrap_or_default()
        } else {
            &mut []
        };
        let mut kept = Vec::with_capacity(keys.len());
        let mut messages = Vec::with_capacity(keys.len());
        for (index, key) in keys.into_iter().enumerate() {
            let reused = reusable
                .get(index)
                .filter(|(kept_key, _)| *kept_key == key)
                .map(|(_, message)| Arc::clone(message));
            let message = reused.unwrap_or_else(|| Arc::new(render(first + index as u64, &key)));
            messages.push(Arc::clone(&message));
            kept.push((key, message));
        }
        self.first = first;
        self.kept = kept;
        messages
    }
}

#[cfg(test)]
mod tests {
    use mc_core::{Part, Role};

    use super::*;

    fn key(link: u8, shown: PartShown) -> RenderKey {
        RenderKey {
            link: ContentHash::from_bytes([link; 32]),
            shown: vec![shown],
            dropped_reasoning: Vec::new(),
            nudges: Vec::new(),
        }
    }

    #[test]
    fn unchanged_keys_reuse_the_same_message_and_changed_ones_render_again() {
        let mut tail = RenderedTail::default();
        let mut rendered = Vec::new();
        let mut render = |ordinal: u64, _: &RenderKey| {
            rendered.push(ordinal);
            Message::new(Role::User, vec![Part::text(format!("m{ordinal}"))])
        };
        let first = tail.render(
            3,
            vec![key(1, PartShown::AsStored), key(2, PartShown::AsStored)],
            &mut render,
        );
        let second = tail.render(
            3,
            vec![
                key(1, PartShown::AsStored),
                key(2, PartShown::Skeleton),
                key(3, PartShown::AsStored),
            ],
            &mut render,
        );
        assert!(Arc::ptr_eq(&first[0], &second[0]));
        assert!(!Arc::ptr_eq(&first[1], &second[1]));
        // The boundary moved past ordinal 3: ordinal 4 keeps its place by ordinal.
        let third = tail.render(
            4,
            vec![key(2, PartShown::Skeleton), key(3, PartShown::AsStored)],
            &mut render,
        );
        assert!(Arc::ptr_eq(&second[1], &third[0]));
        assert!(Arc::ptr_eq(&second[2], &third[1]));
        assert_eq!(rendered, [3, 4, 4, 5]);
    }
}
