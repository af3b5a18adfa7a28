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

use mc_core::reduction::{PartShown, Reshape, TailDrops, ToolPairs};
use mc_core::tags::{TagIndex, TagNo};
use mc_core::{ContentHash, HashChain, HeldBytes, Message};

use crate::nudges::Nudge;
use crate::part_tokens::part_tokens;
use crate::pass::CountText;
use crate::tail_message::render_tail_message;

/// What the tail renders from.
pub(crate) struct TailInputs<'a> {
    /// Token estimates: each rendered message is counted once, when it is rendered.
    pub count: CountText<'a>,
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
    /// Units shown smaller (excerpts, clipped calls).
    pub reshape: &'a Reshape,
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
    /// Each kept message with its key and its estimated tokens as rendered.
    kept: Vec<KeptMessage>,
    /// The pairing of the tail's calls and results, and the chain link of the last message
    /// it folded.
    pairs: Option<(ToolPairs, ContentHash)>,
    /// What the kept messages were rendered from.
    basis: Option<Basis>,
}

/// One rendered message of the tail, with what it was rendered from and what it counts.
#[derive(Debug)]
struct KeptMessage {
    key: RenderKey,
    message: Arc<Message>,
    /// Its estimated tokens as rendered.
    tokens: u64,
    /// What it holds ([`HeldBytes`]), counted once when it was rendered: summing a long
    /// session's messages again whenever the tail is kept grew every pass with the session.
    held: usize,
}

/// The drop decisions and per-message additions a kept tail was rendered with.
#[derive(Debug)]
struct Basis {
    landed: BTreeSet<TagNo>,
    drop_skeletons: u32,
    drops: TailDrops,
    dropped_reasoning: Vec<(u64, u32)>,
    reshape: Reshape,
    nudges: Vec<Nudge>,
}

impl RenderedTail {
    /// The rendered tail, reusing kept messages. When nothing that decides how the kept
    /// messages render has changed (the same landed drops, reasoning drops and reminders,
    /// no appended result answering an earlier call) they are all reused as they are and
    /// only appended messages are rendered; otherwise each kept message is reused when its
    /// key is unchanged. Afterwards exactly this tail is kept.
    ///
    /// Also returns the estimated tokens of the rendered tail: exact for what is shown (tags,
    /// placeholders, excerpts, skeletons), as the same estimator counts it, each message
    /// counted once, when it is rendered.
    pub fn render(&mut self, inputs: &TailInputs<'_>) -> (Vec<Arc<Message>>, u64) {
        let first = inputs.tail.first().map_or(0, |&(ordinal, _)| ordinal);
        let kept_pairs = self.kept_pairs(first, inputs);
        let kept_until = kept_pairs.as_ref().map(ToolPairs::next);
        let mut pairs = kept_pairs.unwrap_or_else(|| ToolPairs::new(first));
        let from = usize::try_from(pairs.next() - first).unwrap_or(usize::MAX);
        let answers_earlier =
            pairs.extend(inputs.tail.get(from..).unwrap_or_default(), inputs.tags);
        let basis = self.basis.take().filter(|basis| {
            kept_until.is_some_and(|until| {
                !answers_earlier
                    && self.first == first
                    && self.kept.len() as u64 == until - first
                    && basis.unchanged_for(inputs, until)
            })
        });
        let (basis, reuse_all) = match basis {
            Some(basis) => (basis, true),
            None => (
                Basis {
                    landed: inputs.landed.clone(),
                    drop_skeletons: inputs.drop_skeletons,
                    drops: TailDrops::from_pairs(
                        &pairs,
                        inputs.tags,
                        inputs.landed,
                        inputs.drop_skeletons,
                    )
                    .with_reshape(inputs.reshape, inputs.tags),
                    dropped_reasoning: inputs.dropped_reasoning.to_vec(),
                    reshape: inputs.reshape.clone(),
                    nudges: Vec::new(),
                },
                false,
            ),
        };
        // Kept whole on the fast path, else the messages each key is checked against.
        let (mut kept, previous) = if reuse_all {
            (std::mem::take(&mut self.kept), Vec::new())
        } else {
            (
                Vec::with_capacity(inputs.tail.len()),
                std::mem::take(&mut self.kept),
            )
        };
        let start = kept.len();
        let reusable = if first >= self.first {
            usize::try_from(first - self.first)
                .ok()
                .and_then(|offset| previous.get(offset..))
                .unwrap_or_default()
        } else {
            &[]
        };
        let links = usize::try_from(first)
            .ok()
            .and_then(|first| inputs.chain.links().get(first..))
            .unwrap_or_default();
        let keyed = inputs.tail.iter().zip(links).enumerate().skip(start);
        let mut reasoning = per_ordinal(inputs.dropped_reasoning.iter().copied());
        let mut nudges = per_ordinal(
            inputs
                .nudges
                .iter()
                .map(|nudge| (nudge.ordinal, nudge.text.clone())),
        );
        for (index, (&(ordinal, stored), &link)) in keyed {
            let key = RenderKey {
                link,
                exceptions: basis
                    .drops
                    .exceptions(ordinal, stored, inputs.tags, inputs.landed),
                dropped_reasoning: reasoning.remove(&ordinal).unwrap_or_default(),
                nudges: nudges.remove(&ordinal).unwrap_or_default(),
            };
            let (message, tokens, held) = match reusable.get(index) {
                Some(kept) if kept.key == key => {
                    (Arc::clone(&kept.message), kept.tokens, kept.held)
                }
                _ => {
                    let shown = basis
                        .drops
                        .shown(ordinal, stored, inputs.tags, inputs.landed);
                    let message =
                        render_tail_message(stored, &shown, &key.dropped_reasoning, &key.nudges);
                    let tokens = message
                        .parts
                        .iter()
                        .map(|part| part_tokens(part, inputs.count))
                        .sum();
                    let held = message.held_bytes();
                    (Arc::new(message), tokens, held)
                }
            };
            kept.push(KeptMessage {
                key,
                message,
                tokens,
                held,
            });
        }
        let messages = kept.iter().map(|kept| Arc::clone(&kept.message)).collect();
        let tokens = kept.iter().map(|kept| kept.tokens).sum();
        self.first = first;
        self.kept = kept;
        let last_link = inputs
            .chain
            .links()
            .get(usize::try_from(pairs.next()).unwrap_or(0).wrapping_sub(1))
            .copied();
        self.pairs = last_link.map(|link| (pairs, link));
        self.basis = Some(Basis {
            nudges: inputs.nudges.to_vec(),
            ..basis
        });
        (messages, tokens)
    }

    /// The kept pairing when it starts at `first` and its last folded message is still the
    /// conversation's (its chain link covers every message before it too).
    fn kept_pairs(&mut self, first: u64, inputs: &TailInputs<'_>) -> Option<ToolPairs> {
        let (pairs, link) = self.pairs.take()?;
        let last = usize::try_from(pairs.next().checked_sub(1)?).ok()?;
        (pairs.first() == first && inputs.chain.links().get(last) == Some(&link)).then_some(pairs)
    }
}

impl Basis {
    /// Whether messages before `until` render under `inputs` as they did under this basis:
    /// the same landed drops and reasoning drops, and reminders given since only on later
    /// messages.
    fn unchanged_for(&self, inputs: &TailInputs<'_>, until: u64) -> bool {
        self.landed == *inputs.landed
            && self.drop_skeletons == inputs.drop_skeletons
            && self.dropped_reasoning == inputs.dropped_reasoning
            && self.reshape == *inputs.reshape
            && inputs.nudges.starts_with(&self.nudges)
            && inputs.nudges[self.nudges.len()..]
                .iter()
                .all(|nudge| nudge.ordinal >= until)
    }
}

impl HeldBytes for RenderedTail {
    /// The rendered messages (owned here: the proxy only references them) and their keys,
    /// the pairing (a label per result) and the drop basis.
    fn held_bytes(&self) -> usize {
        let kept: usize = self
            .kept
            .iter()
            .map(|kept| {
                std::mem::size_of::<KeptMessage>()
                    + kept.key.exceptions.capacity() * std::mem::size_of::<(u32, PartShown)>()
                    + kept.key.dropped_reasoning.capacity() * 4
                    + kept.key.nudges.iter().map(String::capacity).sum::<usize>()
                    + kept.held
            })
            .sum();
        let basis = self.basis.as_ref().map_or(0, |basis| {
            (basis.landed.len() + basis.dropped_reasoning.len()) * TREE_ENTRY_BYTES
                + basis
                    .nudges
                    .iter()
                    .map(|nudge| nudge.text.capacity())
                    .sum::<usize>()
        });
        let pairs = self
            .pairs
            .as_ref()
            .map_or(0, |(pairs, _)| pairs.held_bytes());
        std::mem::size_of::<Self>() + kept + basis + pairs
    }
}

/// An entry of a B-tree set or a list of small pairs, with overhead, amortised.
const TREE_ENTRY_BYTES: usize = 24;

/// Values grouped by ordinal, in their order.
fn per_ordinal<T>(items: impl Iterator<Item = (u64, T)>) -> BTreeMap<u64, Vec<T>> {
    let mut grouped: BTreeMap<u64, Vec<T>> = BTreeMap::new();
    for (ordinal, item) in items {
        grouped.entry(ordinal).or_default().push(item);
    }
    grouped
}

#[cfg(test)]
mod tests {
    use mc_core::tags::assign_tags;
    use mc_core::{Part, Role};

    use super::*;

    static NO_RESHAPE: Reshape = Reshape {
        excerpts: BTreeMap::new(),
        clipped_calls: BTreeSet::new(),
    };

    fn inputs<'a>(
        tail: &'a [(u64, &'a Message)],
        chain: &'a HashChain,
        tags: &'a TagIndex,
        landed: &'a BTreeSet<TagNo>,
    ) -> TailInputs<'a> {
        TailInputs {
            count: &|text: &str| text.len() as u64 / 4,
            tail,
            chain,
            tags,
            landed,
            drop_skeletons: 20,
            dropped_reasoning: &[],
            reshape: &NO_RESHAPE,
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
        let first = rendered.render(&inputs(&tail[..3], &chain, &tags, &none)).0;
        let second = rendered.render(&inputs(&tail, &chain, &tags, &none)).0;
        assert!(first.iter().zip(&second).all(|(a, b)| Arc::ptr_eq(a, b)));
        // Landing tag 2 re-renders message 1 only.
        let landed = BTreeSet::from([TagNo(2)]);
        let third = rendered.render(&inputs(&tail, &chain, &tags, &landed)).0;
        let reused: Vec<bool> = second
            .iter()
            .zip(&third)
            .map(|(a, b)| Arc::ptr_eq(a, b))
            .collect();
        assert_eq!(reused, [true, false, true, true]);
        assert_eq!(third[1].parts, [Part::text("[dropped §2§]")]);
        // The boundary moves past ordinal 0: the rest keep their places by ordinal.
        let fourth = rendered
            .render(&inputs(&tail[1..], &chain, &tags, &landed))
            .0;
        assert!(
            third[1..]
                .iter()
                .zip(&fourth)
                .all(|(a, b)| Arc::ptr_eq(a, b))
        );
    }
}
