//! Property tests over generated sessions (issue 4 invariants for tags and reduction).

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use serde_json::json;

use super::drop_label::{call_label, result_label};
use super::{
    DropSpec, DropState, PartShown, Reshape, TailDrops, ToolPairs, land_drops, queue_drops,
    render_tail, skeleton_input,
};
use crate::conversation::{MediaKind, Message, Part, Role};
use crate::tags::{
    TagAssignment, TagIndex, TagNo, UnitRef, assign_tags, dropped_placeholder, tag_prefix,
};

#[derive(Debug, Clone)]
enum Output {
    Text(String),
    MediaOnly,
    Empty,
}

#[derive(Debug, Clone)]
struct Turn {
    user: String,
    thinking: Option<String>,
    text: Option<String>,
    calls: Vec<(String, Output)>,
}

fn arb_text() -> impl Strategy<Value = String> {
    "[a-z ]{0,12}"
}

fn arb_output() -> impl Strategy<Value = Output> {
    prop_oneof![
        4 => arb_text().prop_map(Output::Text),
        1 => Just(Output::MediaOnly),
        1 => Just(Output::Empty),
    ]
}

fn arb_turn() -> impl Strategy<Value = Turn> {
    (
        arb_text(),
        proptest::option::of(arb_text()),
        proptest::option::of(arb_text()),
        proptest::collection::vec(("[a-z]{0,120}", arb_output()), 0..4),
    )
        .prop_map(|(user, thinking, text, calls)| Turn {
            user,
            thinking,
            text,
            calls,
        })
}

fn arb_turns() -> impl Strategy<Value = Vec<Turn>> {
    proptest::collection::vec(arb_turn(), 1..10)
}

/// The session's messages and the ordinal each turn starts at. Call ids are unique per call.
fn build(turns: &[Turn]) -> (Vec<Message>, Vec<u64>) {
    let mut messages = Vec::new();
    let mut starts = Vec::new();
    for (turn_no, turn) in turns.iter().enumerate() {
        starts.push(messages.len() as u64);
        // Some users paste a screenshot with their words (picked from the words, so the
        // strategy and its stored seeds stay as they were).
        let mut user = vec![Part::text(turn.user.clone())];
        if turn.user.contains('m') {
            user.push(Part::Media {
                media: MediaKind::Image,
                source: json!({"type": "url", "url": "https://example.com/shot.png"}),
            });
        }
        messages.push(Message::new(Role::User, user));
        let mut assistant = Vec::new();
        if let Some(thinking) = &turn.thinking {
            assistant.push(Part::Thinking {
                text: thinking.clone(),
                signature: Some("sig".into()),
            });
        }
        if let Some(text) = &turn.text {
            assistant.push(Part::text(text.clone()));
        }
        let mut results = Vec::new();
        for (call_no, (input, output)) in turn.calls.iter().enumerate() {
            let id = format!("c{turn_no}_{call_no}");
            assistant.push(Part::ToolCall {
                id: id.clone(),
                name: "Bash".into(),
                input: json!({"command": input, "n": call_no}),
            });
            let content = match output {
                Output::Text(text) => vec![Part::text(text.clone())],
                Output::MediaOnly => vec![Part::Media {
                    media: MediaKind::Image,
                    source: json!("data"),
                }],
                Output::Empty => vec![],
            };
            results.push(Part::ToolResult {
                call_id: id,
                content,
                is_error: false,
            });
        }
        if assistant.is_empty() {
            assistant.push(Part::text("ok"));
        }
        messages.push(Message::new(Role::Assistant, assistant));
        if !results.is_empty() {
            messages.push(Message::new(Role::User, results));
        }
    }
    (messages, starts)
}

/// Ingest as the engine does: each message numbered once, from the index's next tag.
fn ingest(messages: &[Message]) -> Vec<TagAssignment> {
    let mut assigned: Vec<TagAssignment> = Vec::new();
    for (ordinal, message) in (0u64..).zip(messages) {
        let next = TagIndex::new(assigned.iter().copied()).next_tag();
        assigned.extend(assign_tags(next, ordinal, message));
    }
    assigned
}

fn call_ids(messages: &[Message]) -> BTreeMap<String, usize> {
    let mut ids = BTreeMap::new();
    for (index, message) in messages.iter().enumerate() {
        for id in message.tool_call_ids() {
            ids.insert(id.to_owned(), index);
        }
    }
    ids
}

fn result_ids(messages: &[Message]) -> BTreeMap<String, usize> {
    let mut ids = BTreeMap::new();
    for (index, message) in messages.iter().enumerate() {
        for id in message.tool_result_ids() {
            ids.insert(id.to_owned(), index);
        }
    }
    ids
}

/// Removes the tag a render put in a non-dropped tool result's content.
fn untag_content(tag: TagNo, rendered: &[Part], original: &[Part]) -> Vec<Part> {
    let prefix = tag_prefix(tag);
    let mut content = rendered.to_vec();
    let has_text = original
        .iter()
        .any(|part| matches!(part, Part::Text { .. }));
    if !has_text {
        if content.first() == Some(&Part::text(prefix)) {
            content.remove(0);
        }
        return content;
    }
    if let Some(Part::Text { text, .. }) = content
        .iter_mut()
        .find(|part| matches!(part, Part::Text { .. }))
        && let Some(rest) = text.strip_prefix(&prefix)
    {
        *text = rest.to_owned();
    }
    content
}

proptest! {
    /// Invariant: tags are monotonic, dense, and appending messages never renumbers old units.
    #[test]
    fn tags_are_monotonic_and_stable(turns in arb_turns(), more in arb_turns()) {
        let (before, _) = build(&turns);
        let all_turns: Vec<Turn> = turns.iter().chain(&more).cloned().collect();
        let (after, _) = build(&all_turns);
        prop_assert_eq!(&after[..before.len()], &before[..]);

        let old = ingest(&before);
        let new = ingest(&after);
        prop_assert_eq!(&new[..old.len()], &old[..]);
        let new_units: BTreeSet<UnitRef> = new[old.len()..].iter().map(|a| a.unit).collect();
        prop_assert!(new_units.iter().all(|unit| unit.ordinal >= before.len() as u64));

        // Ordered by unit, numbers are 1, 2, 3, … with no gap.
        let mut by_unit = new.clone();
        by_unit.sort_by_key(|assignment| assignment.unit);
        for (expected, assignment) in (1u32..).zip(&by_unit) {
            prop_assert_eq!(assignment.tag, TagNo(expected));
        }
        // Every taggable part got exactly one tag, and the index finds it both ways.
        let index = TagIndex::new(new.iter().copied());
        for (ordinal, message) in (0u64..).zip(&after) {
            for (part_no, part) in (0u32..).zip(&message.parts) {
                let unit = UnitRef { ordinal, part: part_no };
                let tag = index.tag_of(unit);
                prop_assert_eq!(tag.is_some(), crate::tags::is_taggable(part));
                if let Some(tag) = tag {
                    prop_assert_eq!(index.unit_of(tag), Some(unit));
                }
            }
        }
    }

    /// Invariants: placeholders are exact, tool pairs stay valid, protected tags never land,
    /// pristine content is untouched and recoverable from the render.
    #[test]
    fn reduction_renders_valid_tails(
        turns in arb_turns(),
        drops in proptest::collection::vec(any::<proptest::sample::Index>(), 0..24),
        unknown in proptest::collection::btree_set(100u32..120, 0..3),
        tail_turn in prop_oneof![Just(None), any::<proptest::sample::Index>().prop_map(Some)],
        protected in 0u32..8,
        skeletons in 0u32..4,
    ) {
        let (messages, starts) = build(&turns);
        let pristine = messages.clone();
        let index = TagIndex::new(ingest(&messages));
        let start = tail_turn.map_or(0, |turn| starts[turn.index(starts.len())]);

        // Mostly real tags, a few unknown ones.
        let spec: DropSpec = drops
            .iter()
            .filter(|_| !index.is_empty())
            .map(|pick| TagNo(1 + pick.index(index.len()) as u32))
            .chain(unknown.iter().copied().map(TagNo))
            .collect();
        let queued = queue_drops(&DropState::default(), &spec, &index, start, protected);
        let landing = land_drops(&queued.state, &index, protected);
        // (d) protected tags never land; history-covered and unknown ones are never queued.
        for &tag in &landing {
            prop_assert!(!index.is_protected(tag, protected));
            prop_assert!(index.unit_of(tag).is_some_and(|unit| unit.ordinal >= start));
        }
        for tag in queued.waiting() {
            prop_assert!(index.is_protected(tag, protected));
            prop_assert!(!landing.contains(&tag));
        }
        let state = queued.state.with_landed(&landing);

        let tail: Vec<(u64, &Message)> =
            (0u64..).zip(&messages).skip(usize::try_from(start).unwrap_or(0)).collect();
        let rendered = render_tail(&tail, &index, &state.landed, skeletons, &Reshape::default());
        // (e) rendering borrows: stored content stays pristine.
        prop_assert_eq!(&messages, &pristine);
        prop_assert_eq!(rendered.len(), tail.len());

        // (c) every result has its call in an earlier or the same message, and every call
        // whose result was in the tail still has it.
        let tail_messages: Vec<Message> = tail.iter().map(|(_, m)| (*m).clone()).collect();
        let (calls, results) = (call_ids(&rendered), result_ids(&rendered));
        let pristine_results = result_ids(&tail_messages);
        for (id, at) in &results {
            prop_assert!(calls.get(id).is_some_and(|call_at| call_at <= at), "result {} lost its call", id);
        }
        for id in calls.keys() {
            if pristine_results.contains_key(id) {
                prop_assert!(results.contains_key(id), "call {} lost its result", id);
            }
        }

        // (b) + (e), part by part: align each rendered message with its original parts minus
        // the pairs removed whole.
        for ((ordinal, original), out) in tail.iter().zip(&rendered) {
            let kept: Vec<(u32, &Part)> = (0u32..).zip(&original.parts).filter(|(_, part)| match part {
                Part::ToolCall { id, .. } => calls.contains_key(id),
                Part::ToolResult { call_id, .. } => results.contains_key(call_id),
                _ => true,
            }).collect();
            if kept.is_empty() && !original.parts.is_empty() {
                prop_assert_eq!(out.parts.len(), 1);
                let Part::Text { text, .. } = &out.parts[0] else {
                    return Err(TestCaseError::fail("emptied message must keep a text part"));
                };
                prop_assert!(state.landed.iter().any(|&tag| is_placeholder_of(text, tag)), "bad placeholder {:?}", text);
                continue;
            }
            prop_assert_eq!(kept.len(), out.parts.len());
            for ((part_no, part), shown) in kept.into_iter().zip(&out.parts) {
                let tag = index.tag_of(UnitRef { ordinal: *ordinal, part: part_no });
                let dropped = tag.is_some_and(|tag| state.landed.contains(&tag));
                match (part, tag) {
                    (Part::Text { text, .. }, Some(tag)) => {
                        let expected = if dropped {
                            dropped_placeholder(tag)
                        } else {
                            format!("{}{text}", tag_prefix(tag))
                        };
                        prop_assert_eq!(shown, &Part::text(expected));
                    }
                    (Part::Media { .. }, Some(tag)) => {
                        // Shown as sent, or dropped whole to a placeholder that names it.
                        let expected = if dropped {
                            Part::text(crate::tags::dropped_media_placeholder(tag, &["image url".to_owned()]))
                        } else {
                            part.clone()
                        };
                        prop_assert_eq!(shown, &expected);
                    }
                    (Part::ToolResult { call_id, content, is_error }, Some(tag)) => {
                        let Part::ToolResult { call_id: shown_id, content: shown_content, is_error: shown_error } = shown else {
                            return Err(TestCaseError::fail("a result must stay a result"));
                        };
                        prop_assert_eq!(shown_id, call_id);
                        prop_assert_eq!(shown_error, is_error);
                        if dropped {
                            // The placeholder says what the result was (its call's tool and
                            // main argument, its size), then names any media it held:
                            // `[dropped §N§: Bash ls, 2 lines, image url]`.
                            let call = nearest_call(&tail, *ordinal, part_no, call_id);
                            let label = result_label(call.as_deref(), content);
                            let labels: Vec<String> = label.map(|label| label.to_string()).into_iter().chain(content.iter().filter_map(|part| match part {
                                Part::Media { media, source } => Some(crate::media::inspect_media(*media, source).to_string()),
                                _ => None,
                            })).collect();
                            prop_assert_eq!(shown_content, &vec![Part::text(crate::tags::dropped_media_placeholder(tag, &labels))]);
                        } else {
                            prop_assert_eq!(&untag_content(tag, shown_content, content), content);
                        }
                    }
                    (Part::ToolCall { id, name, input }, None) => {
                        let result_dropped = is_skeleton(&tail, &index, &state.landed, id);
                        let expected_input = if result_dropped { skeleton_input(input) } else { input.clone() };
                        prop_assert_eq!(shown, &Part::ToolCall { id: id.clone(), name: name.clone(), input: expected_input });
                    }
                    (other, _) => prop_assert_eq!(shown, other),
                }
            }
        }

        // (b) nothing but exact placeholders of landed tags mention a drop.
        for message in &rendered {
            for part in &message.parts {
                let texts: Vec<&String> = match part {
                    Part::Text { text, .. } => vec![text],
                    Part::ToolResult { content, .. } => content.iter().filter_map(|p| match p {
                        Part::Text { text, .. } => Some(text),
                        _ => None,
                    }).collect(),
                    _ => vec![],
                };
                for text in texts {
                    if text.contains("[dropped") {
                        // Exactly `[dropped §N§]`, or `[dropped §N§: <labels>]` for a unit
                        // whose placeholder says what it was.
                        prop_assert!(state.landed.iter().any(|&tag| is_placeholder_of(text, tag)), "bad placeholder {:?}", text);
                    }
                }
            }
        }
    }
}

/// Whether `text` is the placeholder of `tag`: exactly `[dropped §N§]`, or with what it was
/// after a colon.
fn is_placeholder_of(text: &str, tag: TagNo) -> bool {
    text == dropped_placeholder(tag)
        || text
            .strip_prefix(&format!("[dropped {tag}: "))
            .is_some_and(|rest| rest.ends_with(']'))
}

/// The label of the call a result at (`ordinal`, `part`) answers: the nearest call with its
/// id before it in the tail.
fn nearest_call(tail: &[(u64, &Message)], ordinal: u64, part: u32, id: &str) -> Option<String> {
    let mut found = None;
    for &(at, message) in tail {
        for (index, candidate) in (0u32..).zip(&message.parts) {
            if (at, index) >= (ordinal, part) {
                return found;
            }
            if let Part::ToolCall {
                id: call_id,
                name,
                input,
            } = candidate
                && call_id == id
            {
                found = Some(call_label(name, input));
            }
        }
    }
    found
}

/// Whether the call `id`'s result in the tail is a landed drop (so the call, if shown, is a
/// skeleton).
fn is_skeleton(
    tail: &[(u64, &Message)],
    index: &TagIndex,
    landed: &BTreeSet<TagNo>,
    id: &str,
) -> bool {
    tail.iter().any(|(ordinal, message)| {
        (0u32..).zip(&message.parts).any(|(part_no, part)| {
            matches!(part, Part::ToolResult { call_id, .. } if call_id == id)
                && index
                    .tag_of(UnitRef {
                        ordinal: *ordinal,
                        part: part_no,
                    })
                    .is_some_and(|tag| landed.contains(&tag))
        })
    })
}

proptest! {
    /// What a pass that kept the tail's pairing decides equals what walking the whole tail
    /// decides, and a message's exceptions are exactly its parts shown otherwise than tagged
    /// or as stored.
    #[test]
    fn extended_pairs_and_exceptions_agree_with_the_whole_walk(
        turns in arb_turns(),
        landed_picks in proptest::collection::vec(any::<proptest::sample::Index>(), 0..12),
        split in any::<proptest::sample::Index>(),
        skeletons in 0u32..4,
    ) {
        let (messages, _) = build(&turns);
        let index = TagIndex::new(ingest(&messages));
        let landed: BTreeSet<TagNo> = landed_picks
            .iter()
            .filter(|_| !index.is_empty())
            .map(|pick| TagNo(1 + pick.index(index.len()) as u32))
            .collect();
        let tail: Vec<(u64, &Message)> = (0u64..).zip(&messages).collect();
        let (early, late) = tail.split_at(split.index(tail.len() + 1));
        let mut pairs = ToolPairs::new(0);
        let _ = pairs.extend(early, &index);
        let before = pairs.clone();
        let answers_earlier = pairs.extend(late, &index);
        let mut whole = ToolPairs::new(0);
        let _ = whole.extend(&tail, &index);
        prop_assert_eq!(&pairs, &whole);
        let drops = TailDrops::from_pairs(&pairs, &index, &landed, skeletons);
        prop_assert_eq!(&drops, &TailDrops::plan(&tail, &index, &landed, skeletons));
        // Landed drops are of the early part: unless an appended result answers an early
        // call, appending changes nothing about them.
        if !answers_earlier {
            let early_landed: BTreeSet<TagNo> = landed
                .iter()
                .copied()
                .filter(|&tag| index.unit_of(tag).is_some_and(|unit| unit.ordinal < before.next()))
                .collect();
            prop_assert_eq!(
                TailDrops::from_pairs(&before, &index, &early_landed, skeletons),
                TailDrops::from_pairs(&pairs, &index, &early_landed, skeletons)
            );
        }
        for &(ordinal, message) in &tail {
            let expected: Vec<(u32, PartShown)> = drops
                .shown(ordinal, message, &index, &landed)
                .into_iter()
                .zip(0u32..)
                .filter(|(shown, _)| !matches!(shown, PartShown::AsStored | PartShown::Tagged(_)))
                .map(|(shown, part)| (part, shown))
                .collect();
            prop_assert_eq!(drops.exceptions(ordinal, message, &index, &landed), expected);
        }
    }
}
