//! The rendered tail kept between passes of a session.
//!
//! Rendering copied every stored message of the tail on every pass, most of a pass's cost on
//! a long session, although a cache-hit pass renders every earlier message exactly as the
//! pass before did. A rendered message is a pure function of the stored message (with the
//! tags it was given, which never change) and of its parts shown otherwise than tagged or as
//! stored, the reasoning parts dropped from it and the reminders appended to it:
//! [`RenderKey`]. The stored message is named by its hash-chain link, which covers its
//! content and everything before it, so a kept message is reused only when the same content
//! would render the same way.
//!
//! The pairing of tool calls and results that decides how dropped results show is a fold
//! over the tail ([`ToolPairs`]), kept too and extended with the messages appended since;
//! the chain link of its last folded message proves the kept part unchanged.
//!
//! Messages are shared (`Arc`), so a reused message is the same allocation as the one the
//! previous outcome held: the proxy recognises it by identity and reuses its encoded bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use mc_core::reduction::{PartShown, TailDrops, ToolPairs};
use mc_core::tags::{TagIndex, TagNo};
use mc_core::{ContentHash, HashChain, Message};

use crate::nudges::Nudge;
use crate::tail_message::render_tail_message;

/// What the tail renders from.
pub(crate) struct TailInputs<'a> {
    /// The stored messages from the boundary on, with their ordinals.
    pub tail: &'a [(u64, &'a Message)],
    /// The hash chain of the whole conversation (one link per message: a message without
    /// its link is not rendered).
    pub chain: &'a HashChain,
    /// The session's tags.
    pub tags: &'a TagIndex,
    /// Every landed drop.
    pub landed: &'a BTreeSet<TagNo>,
    /// Landed tool-result drops that keep their call, newest first.
    pub drop_skeletons: u32,
    /// Landed reasoning drops, (ordinal, part), sorted.
    pub dropped_reasoning: &'a [(u64, u32)],
    /// Every reminder given.
    pub nudges: &'a [Nudge],
}

/// Everything a rendered tail message is a function of, beside its stored content.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RenderKey {
    /// The hash-chain link of the stored message.
    link: ContentHash,
    /// Its parts shown otherwise than tagged or as stored.
    exceptions: Vec<(u32, PartShown)>,
    /// Indices of its reasoning parts left out.
    dropped_reasoning: Vec<u32>,
    /// Reminders appended to it, in the order given.
    nudges: Vec<String>,
}

/// One session's tail as last rendered: consecutive ordinals from `first`.
#[derive(Debug, Default)]
pub(crate) struct RenderedTail {
    first: u64,
    kept: Vec<(RenderKey, Arc<Message>)>,
    /// The pairing of the tail's calls and results, and the chain link of the last message
    /// it folded.
    pairs: Option<(ToolPairs, ContentHash)>,
}

impl RenderedTail {
    /// The rendered tail, reusing every kept message whose key is unchanged. Afterwards
    /// exactly this tail is kept.
    pub fn render(&mut self, inputs: &TailInputs<'_>) -> Vec<Arc<Message>> {
        let first = inputs.tail.first().map_or(0, |&(ordinal, _)| ordinal);
        let pairs = self.pairs_for(first, inputs);
        let drops =
            TailDrops::from_pairs(&pairs, inputs.tags, inputs.landed, inputs.drop_skeletons);
        let mut reasoning: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
        for &(ordinal, part) in inputs.dropped_reasoning {
            reasoning.entry(ordinal).or_default().push(part);
        }
        let mut nudges: BTreeMap<u64, Vec<String>> = BTreeMap::new();
        for nudge in inputs.nudges {
            nudges
                .entry(nudge.ordinal)
                .or_default()
                .push(nudge.text.clone());
        }
        let links = usize::try_from(first)
            .ok()
            .and_then(|first| inputs.chain.links().get(first..))
            .unwrap_or_default();
        let previous = std::mem::take(&mut self.kept);
        let reusable = if first >= self.first {
            usize::try_from(first - self.first)
                .ok()
                .and_then(|offset| previous.get(offset..))
                .unwrap_or_default()
        } else {
            &[]
        };
        let mut kept = Vec::with_capacity(inputs.tail.len());
        let mut messages = Vec::with_capacity(inputs.tail.len());
        for (index, (&(ordinal, stored), &link)) in inputs.tail.iter().zip(links).enumerate() {
            let key = RenderKey {
                link,
                exceptions: drops.exceptions(ordinal, stored, inputs.tags, inputs.landed),
                dropped_reasoning: reasoning.remove(&ordinal).unwrap_or_default(),
                nudges: nudges.remove(&ordinal).unwrap_or_default(),
            };
            let message = match reusable.get(index) {
                Some((kept_key, message)) if *kept_key == key => Arc::clone(message),
                _ => {
                    let shown = drops.shown(ordinal, stored, inputs.tags, inputs.landed);
                    Arc::new(render_tail_message(
                        stored,
                        &shown,
                        &key.dropped_reasoning,
                        &key.nudges,
                    ))
                }
            };
            messages.push(Arc::clone(&message));
            kept.push((key, message));
        }
        self.first = first;
        self.kept = kept;
        let last_link = inputs
            .chain
            .links()
            .get(usize::try_from(pairs.next()).unwrap_or(0).wrapping_sub(1))
            .copied();
        self.pairs = last_link.map(|link| (pairs, link));
        messages
    }

    /// The tail's pairing: the kept one extended with the messages after it when it starts
    /// at `first` and its last folded message is still the conversation's, else a new one.
    fn pairs_for(&mut self, first: u64, inputs: &TailInputs<'_>) -> ToolPairs {
        let kept = self.pairs.take().and_then(|(pairs, link)| {
            let last = usize::try_from(pairs.next().checked_sub(1)?).ok()?;
            (pairs.first() == first && inputs.chain.links().get(last) == Some(&link))
                .then_some(pairs)
        });
        let mut pairs = kept.unwrap_or_else(|| ToolPairs::new(first));
        let from = usize::try_from(pairs.next() - first).unwrap_or(usize::MAX);
        pairs.extend(inputs.tail.get(from..).unwrap_or_default(), inputs.tags);
        pairs
    }
}

#[cfg(test)]
mod tests {
    use mc_core::tags::assign_tags;
    use mc_core::{Part, Role};

    use super::*;

    fn inputs<'a>(
        tail: &'a [(u64, &'a Message)],
        chain: &'a HashChain,
        tags: &'a TagIndex,
        landed: &'a BTreeSet<TagNo>,
    ) -> TailInputs<'a> {
        TailInputs {
            tail,
            chain,
            tags,
            landed,
            drop_skeletons: 20,
            dropped_reasoning: &[],
            nudges: &[],
        }
    }

    #[test]
    fn unchanged_messages_are_reused_and_changed_ones_render_again() {
        let conversation: Vec<Message> = (0..4)
            .map(|n| Message::new(Role::User, vec![Part::text(format!("m{n}"))]))
            .collect();
        let tags = TagIndex::new(
            (0u32..4)
                .flat_map(|n| assign_tags(TagNo(n + 1), u64::from(n), &conversation[n as usize])),
        );
        let chain = HashChain::of(&conversation);
        let tail: Vec<(u64, &Message)> = (0u64..).zip(&conversation).collect();
        let mut rendered = RenderedTail::default();
        let none = BTreeSet::new();
        let first = rendered.render(&inputs(&tail[..3], &chain, &tags, &none));
        let second = rendered.render(&inputs(&tail, &chain, &tags, &none));
        assert!(first.iter().zip(&second).all(|(a, b)| Arc::ptr_eq(a, b)));
        // Landing tag 2 re-renders message 1 only.
        let landed = BTreeSet::from([TagNo(2)]);
        let third = rendered.render(&inputs(&tail, &chain, &tags, &landed));
        let reused: Vec<bool> = second
            .iter()
            .zip(&third)
            .map(|(a, b)| Arc::ptr_eq(a, b))
            .collect();
        assert_eq!(reused, [true, false, true, true]);
        assert_eq!(third[1].parts, [Part::text("[dropped §2§]")]);
        // The boundary moves past ordinal 0: the rest keep their places by ordinal.
        let fourth = rendered.render(&inputs(&tail[1..], &chain, &tags, &landed));
        assert!(
            third[1..]
                .iter()
                .zip(&fourth)
                .all(|(a, b)| Arc::ptr_eq(a, b))
        );
    }
}
