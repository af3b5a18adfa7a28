//! Rendering the raw tail the model sees: tags in front, landed drops as placeholders, tool
//! pairs kept valid.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::excerpt::excerpt_text;
use super::reshape::Reshape;
use super::skeleton::skeleton_input;
use super::tool_pairs::ToolPairs;
use crate::conversation::{Message, Part};
use crate::media::inspect_media;
use crate::tags::{
    TagIndex, TagNo, UnitRef, dropped_media_placeholder, dropped_placeholder, tag_prefix,
};

/// What a dropped tool result was ([`super::drop_label`]), shown in its placeholder.
pub type DropLabel = Arc<str>;

/// Renders the raw tail: tags on every taggable part, landed drops replaced by the placeholder,
/// tool pairs kept valid.
///
/// A pure function of its inputs, recomputed from pristine stored messages on every pass, so a
/// cache-hit pass reproduces the previous bytes exactly. Per part:
/// - text: `§N§ ` + text; landed → exactly `[dropped §N§]`;
/// - tool result: `§N§ ` in front of its first text part (a text part holding only the prefix
///   is inserted first when it has none); landed and among the newest `drop_skeletons` landed
///   tool-result drops in the tail → its content becomes exactly one text part
///   `[dropped §N§: LABEL]` (its call's tool and main argument and its size, plus the labels
///   of any media it held; bare `[dropped §N§]` when there is nothing to say) and its call
///   keeps clipped string inputs ([`super::skeleton_input`]); older landed ones → result and
///   every call with that id in the tail removed whole;
/// - an excerpted text or tool result (not landed; [`Reshape::excerpts`]): `§N§ ` + its head,
///   a marker line naming the tag, and its tail ([`super::excerpt_text`]);
/// - a call in [`Reshape::clipped_calls`]: shown as a skeleton, its result untouched;
/// - thinking, media, unknown parts, untagged parts: unchanged.
///
/// A message emptied by removals keeps one text part `[dropped §N§: LABEL]` naming its first
/// removed result and what it was. A result is only removed whole when every result answering the same call id in the
/// tail is removed too (otherwise it is skeletonised), so no result loses its call; calls whose
/// results are not in the tail are left as they are.
pub fn render_tail(
    tail: &[(u64, &Message)],
    tags: &TagIndex,
    landed: &BTreeSet<TagNo>,
    drop_skeletons: u32,
    reshape: &Reshape,
) -> Vec<Message> {
    let drops = TailDrops::plan(tail, tags, landed, drop_skeletons).with_reshape(reshape, tags);
    tail.iter()
        .map(|&(ordinal, message)| {
            render_message(message, &drops.shown(ordinal, message, tags, landed))
        })
        .collect()
}

/// How one part of a tail message is shown. A rendered message is a pure function of the
/// stored message and its parts' decisions ([`render_message`]), so a caller that kept a
/// message rendered under the same decisions may reuse it instead of rendering again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartShown {
    /// As stored: untagged parts, calls kept whole, thinking, media, unknown parts.
    AsStored,
    /// With `§N§ ` in front (a text, or a tool result's first text part).
    Tagged(TagNo),
    /// Replaced by exactly `[dropped §N§]` (a text), or by `[dropped §N§: LABEL]` (a tool
    /// result's whole content, with what it was when that is known).
    Placeholder(TagNo, Option<DropLabel>),
    /// Left out; the tag (and the result's label) names the removal if the message is left
    /// empty.
    Removed(TagNo, Option<DropLabel>),
    /// A tool call whose result is a skeleton, or whose own input was reclaimed: its string
    /// inputs clipped.
    Skeleton,
    /// Shown as an excerpt keeping about this many characters (a text, or each text of a
    /// tool result), with `§N§ ` in front.
    Excerpt(TagNo, u32),
}

/// How the landed tool-result drops of a tail are shown: which results and calls go whole
/// and which calls keep clipped inputs. Decided over the whole tail, since a call and its
/// results may sit in different messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailDrops {
    /// Results removed whole.
    removed: BTreeSet<UnitRef>,
    /// Calls removed whole (by position), with the tag and label of their (first) removed
    /// result.
    removed_calls: BTreeMap<UnitRef, (TagNo, Option<DropLabel>)>,
    /// The labels of landed results ([`super::drop_label`]).
    labels: BTreeMap<UnitRef, DropLabel>,
    /// Calls whose result is a skeleton, or whose input was reclaimed: shown with clipped
    /// inputs.
    skeleton_calls: BTreeSet<UnitRef>,
    /// Units shown as excerpts, with their tag and the characters kept.
    excerpts: BTreeMap<UnitRef, (TagNo, u32)>,
    /// Per ordinal, the parts that may be shown otherwise than tagged or as stored: those
    /// above, and the units of landed tags.
    touched: BTreeMap<u64, BTreeSet<u32>>,
}

impl TailDrops {
    /// Pairs each result with the nearest earlier call of the same id ([`ToolPairs`]), then
    /// decides whole removal or skeleton per call.
    pub fn plan(
        tail: &[(u64, &Message)],
        tags: &TagIndex,
        landed: &BTreeSet<TagNo>,
        drop_skeletons: u32,
    ) -> Self {
        let mut pairs = ToolPairs::new(tail.first().map_or(0, |&(ordinal, _)| ordinal));
        let _ = pairs.extend(tail, tags);
        Self::from_pairs(&pairs, tags, landed, drop_skeletons)
    }

    /// Decides whole removal or skeleton per call from a tail's pairing. The newest
    /// `drop_skeletons` landed results stay skeletons; an older one goes whole, and takes
    /// its call along only when every result paired with that call goes whole, so no result
    /// is ever left without its call.
    pub fn from_pairs(
        pairs: &ToolPairs,
        tags: &TagIndex,
        landed: &BTreeSet<TagNo>,
        drop_skeletons: u32,
    ) -> Self {
        let landed_results = pairs
            .results
            .iter()
            .filter(|result| landed.contains(&result.tag));
        let labels: BTreeMap<UnitRef, DropLabel> = landed_results
            .clone()
            .filter_map(|result| Some((result.unit, result.label.clone()?)))
            .collect();
        let mut dropped: Vec<(TagNo, UnitRef, Option<UnitRef>)> = landed_results
            .map(|result| (result.tag, result.unit, result.call))
            .collect();
        // Newest first: the newest `drop_skeletons` stay skeletons.
        dropped.sort_unstable_by_key(|&(tag, _, _)| std::cmp::Reverse(tag));
        let keep = usize::try_from(drop_skeletons).unwrap_or(usize::MAX);
        let (skeletons, older) = dropped.split_at(keep.min(dropped.len()));

        let mut whole_per_call: BTreeMap<UnitRef, usize> = BTreeMap::new();
        for (_, _, call) in older {
            if let Some(call) = call {
                *whole_per_call.entry(*call).or_default() += 1;
            }
        }
        let mut plan = Self {
            removed: BTreeSet::new(),
            removed_calls: BTreeMap::new(),
            skeleton_calls: skeletons.iter().filter_map(|(_, _, call)| *call).collect(),
            labels,
            excerpts: BTreeMap::new(),
            touched: BTreeMap::new(),
        };
        for &(tag, unit, call) in older {
            match call {
                // A result whose call is not in the tail goes on its own.
                None => {
                    plan.removed.insert(unit);
                }
                Some(call) if whole_per_call.get(&call) == pairs.results_per_call.get(&call) => {
                    plan.removed.insert(unit);
                    let label = plan.labels.get(&unit).cloned();
                    let first = plan
                        .removed_calls
                        .entry(call)
                        .or_insert_with(|| (tag, label.clone()));
                    if tag < first.0 {
                        *first = (tag, label);
                    }
                }
                Some(call) => {
                    plan.skeleton_calls.insert(call);
                }
            }
        }
        let touched = plan
            .removed
            .iter()
            .chain(plan.removed_calls.keys())
            .chain(&plan.skeleton_calls)
            .copied()
            .chain(landed.iter().filter_map(|&tag| tags.unit_of(tag)))
            .collect::<Vec<_>>();
        for unit in touched {
            plan.touched
                .entry(unit.ordinal)
                .or_default()
                .insert(unit.part);
        }
        plan
    }

    /// These decisions with the units `reshape` shows smaller: excerpts of units not landed,
    /// and calls whose input was reclaimed shown as skeletons.
    #[must_use]
    pub fn with_reshape(mut self, reshape: &Reshape, tags: &TagIndex) -> Self {
        for (&tag, &keep) in &reshape.excerpts {
            if let Some(unit) = tags.unit_of(tag) {
                self.excerpts.insert(unit, (tag, keep));
                self.touch(unit);
            }
        }
        for &call in &reshape.clipped_calls {
            if !self.removed_calls.contains_key(&call) {
                self.skeleton_calls.insert(call);
                self.touch(call);
            }
        }
        self
    }

    fn touch(&mut self, unit: UnitRef) {
        self.touched
            .entry(unit.ordinal)
            .or_default()
            .insert(unit.part);
    }

    /// How each part of the tail message at `ordinal` is shown, in part order.
    pub fn shown(
        &self,
        ordinal: u64,
        message: &Message,
        tags: &TagIndex,
        landed: &BTreeSet<TagNo>,
    ) -> Vec<PartShown> {
        units(&[(ordinal, message)])
            .map(|(unit, part)| self.decide(unit, part, tags, landed))
            .collect()
    }

    /// The parts of the tail message at `ordinal` shown otherwise than tagged or as stored,
    /// with how: with the message's stored content (and the tags it was given, which never
    /// change), all that its rendering depends on. Usually none, and then found without
    /// walking the message.
    pub fn exceptions(
        &self,
        ordinal: u64,
        message: &Message,
        tags: &TagIndex,
        landed: &BTreeSet<TagNo>,
    ) -> Vec<(u32, PartShown)> {
        let Some(parts) = self.touched.get(&ordinal) else {
            return Vec::new();
        };
        parts
            .iter()
            .filter_map(|&part| {
                let content = message.parts.get(usize::try_from(part).ok()?)?;
                let shown = self.decide(UnitRef { ordinal, part }, content, tags, landed);
                (!matches!(shown, PartShown::AsStored | PartShown::Tagged(_)))
                    .then_some((part, shown))
            })
            .collect()
    }

    fn decide(
        &self,
        unit: UnitRef,
        part: &Part,
        tags: &TagIndex,
        landed: &BTreeSet<TagNo>,
    ) -> PartShown {
        let tag = tags.tag_of(unit);
        match (part, tag) {
            (Part::Text { .. } | Part::Media { .. }, Some(tag)) if landed.contains(&tag) => {
                PartShown::Placeholder(tag, None)
            }
            (Part::ToolResult { .. }, Some(tag)) if self.removed.contains(&unit) => {
                PartShown::Removed(tag, self.labels.get(&unit).cloned())
            }
            (Part::ToolResult { .. }, Some(tag)) if landed.contains(&tag) => {
                PartShown::Placeholder(tag, self.labels.get(&unit).cloned())
            }
            (Part::Text { .. } | Part::ToolResult { .. }, Some(tag)) => {
                match self.excerpts.get(&unit) {
                    Some(&(_, keep)) => PartShown::Excerpt(tag, keep),
                    None => PartShown::Tagged(tag),
                }
            }
            (Part::ToolCall { .. }, _) => match self.removed_calls.get(&unit) {
                Some((tag, label)) => PartShown::Removed(*tag, label.clone()),
                None if self.skeleton_calls.contains(&unit) => PartShown::Skeleton,
                None => PartShown::AsStored,
            },
            _ => PartShown::AsStored,
        }
    }
}

/// Every part of the tail with its unit reference.
fn units<'a>(tail: &[(u64, &'a Message)]) -> impl Iterator<Item = (UnitRef, &'a Part)> {
    tail.iter().flat_map(|&(ordinal, message)| {
        message
            .parts
            .iter()
            .enumerate()
            .filter_map(move |(index, part)| {
                let part_index = u32::try_from(index).ok()?;
                Some((
                    UnitRef {
                        ordinal,
                        part: part_index,
                    },
                    part,
                ))
            })
    })
}

/// Renders a stored message under its parts' decisions ([`TailDrops::shown`]). A message
/// emptied by removals keeps one text part `[dropped §N§]` naming its first removal.
pub fn render_message(message: &Message, shown: &[PartShown]) -> Message {
    let mut parts = Vec::with_capacity(message.parts.len());
    let mut first_removed: Option<(TagNo, Option<&DropLabel>)> = None;
    for (part, shown) in message.parts.iter().zip(shown) {
        let rendered =
            match (shown, part) {
                (PartShown::Removed(tag, label), _) => {
                    first_removed.get_or_insert((*tag, label.as_ref()));
                    None
                }
                (PartShown::Placeholder(tag, _), Part::Text { .. }) => {
                    Some(Part::text(dropped_placeholder(*tag)))
                }
                (PartShown::Placeholder(tag, _), Part::Media { .. }) => Some(Part::text(
                    dropped_media_placeholder(*tag, &media_labels(std::slice::from_ref(part))),
                )),
                (PartShown::Tagged(tag), Part::Text { text, fields }) => Some(Part::Text {
                    text: format!("{}{text}", tag_prefix(*tag)),
                    fields: fields.clone(),
                }),
                (
                    PartShown::Placeholder(tag, label),
                    Part::ToolResult {
                        call_id,
                        content,
                        is_error,
                    },
                ) => Some(Part::ToolResult {
                    call_id: call_id.clone(),
                    content: vec![Part::text(dropped_media_placeholder(
                        *tag,
                        &placeholder_labels(label.as_ref(), content),
                    ))],
                    is_error: *is_error,
                }),
                (
                    PartShown::Tagged(tag),
                    Part::ToolResult {
                        call_id,
                        content,
                        is_error,
                    },
                ) => Some(Part::ToolResult {
                    call_id: call_id.clone(),
                    content: tagged_content(*tag, content),
                    is_error: *is_error,
                }),
                (PartShown::Excerpt(tag, keep), Part::Text { text, .. }) => Some(Part::text(
                    format!("{}{}", tag_prefix(*tag), excerpt_text(text, *tag, *keep)),
                )),
                (
                    PartShown::Excerpt(tag, keep),
                    Part::ToolResult {
                        call_id,
                        content,
                        is_error,
                    },
                ) => Some(Part::ToolResult {
                    call_id: call_id.clone(),
                    content: tagged_content(*tag, &excerpted_content(*tag, *keep, content)),
                    is_error: *is_error,
                }),
                (PartShown::Skeleton, Part::ToolCall { id, name, input }) => Some(Part::ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    input: skeleton_input(input),
                }),
                _ => Some(part.clone()),
            };
        parts.extend(rendered);
    }
    if parts.is_empty()
        && let Some((tag, label)) = first_removed
    {
        parts.push(Part::text(dropped_media_placeholder(
            tag,
            &placeholder_labels(label, &[]),
        )));
    }
    Message::new(message.role, parts)
}

/// What a dropped result's placeholder says after its tag: its label, then its media's.
fn placeholder_labels(label: Option<&DropLabel>, content: &[Part]) -> Vec<String> {
    label
        .map(|label| label.to_string())
        .into_iter()
        .chain(media_labels(content))
        .collect()
}

/// The labels of the media among `parts` (`image 1280×720 png`), for a placeholder that
/// says what was dropped.
fn media_labels(parts: &[Part]) -> Vec<String> {
    parts
        .iter()
        .filter_map(|part| match part {
            Part::Media { media, source } => Some(inspect_media(*media, source).to_string()),
            _ => None,
        })
        .collect()
}

/// A tool result's content with each text cut to its share of `keep` characters.
fn excerpted_content(tag: TagNo, keep: u32, content: &[Part]) -> Vec<Part> {
    let texts = content
        .iter()
        .filter(|part| matches!(part, Part::Text { .. }))
        .count();
    let share = keep / u32::try_from(texts.max(1)).unwrap_or(u32::MAX);
    content
        .iter()
        .map(|part| match part {
            Part::Text { text, .. } => Part::text(excerpt_text(text, tag, share)),
            other => other.clone(),
        })
        .collect()
}

/// A tool result's content with the tag in front of its first text part, or in a text part
/// of its own inserted first when it has none (an image-only or empty result).
fn tagged_content(tag: TagNo, content: &[Part]) -> Vec<Part> {
    let mut tagged = content.to_vec();
    let first_text = tagged.iter_mut().find_map(|part| match part {
        Part::Text { text, .. } => Some(text),
        Part::ToolCall { .. }
        | Part::ToolResult { .. }
        | Part::Thinking { .. }
        | Part::RedactedThinking { .. }
        | Part::Media { .. }
        | Part::Unknown { .. } => None,
    });
    match first_text {
        Some(text) => text.insert_str(0, &tag_prefix(tag)),
        None => tagged.insert(0, Part::text(tag_prefix(tag))),
    }
    tagged
}
