//! History in the head: published compartments move the boundary on the next pass that may
//! change bytes, never on their own; a soft bust shows them in `m[1]`, a fold in `m[0]`
//! with the first message pinned.

use mc_core::head::{Compartment, M1_PLACEHOLDER, Quote};
use mc_core::pass_plan::PassKind;
use mc_core::{Message, Part, Role};
use mc_engine::{EngineError, PassOutcome};
use proptest::prelude::*;
use serde_json::json;

use crate::props::{cases, check_window};
use crate::session::{TTL_MS, arb_script};
use crate::support::{Call, Harness, MODEL, START_MS, rendered_tokens};

/// A task, then `turns` Bash calls answered by results of `bytes` bytes.
fn conversation(turns: usize, bytes: usize) -> Vec<Message> {
    let mut messages = vec![Message::new(
        Role::User,
        vec![Part::text("Make the build green; never touch CI.")],
    )];
    for turn in 0..turns {
        let id = format!("toolu_{turn}");
        messages.push(Message::new(
            Role::Assistant,
            vec![Part::ToolCall {
                id: id.clone(),
                name: "Bash".into(),
                input: json!({"command": format!("make step{turn}")}),
            }],
        ));
        messages.push(Message::new(
            Role::User,
            vec![Part::ToolResult {
                call_id: id,
                content: vec![Part::text(format!("step {turn} ").repeat(bytes / 8))],
                is_error: false,
            }],
        ));
    }
    messages
}

fn compartment(start: u64, end: u64, title: &str) -> Compartment {
    Compartment {
        start_ordinal: start,
        end_ordinal: end,
        start_ms: START_MS,
        end_ms: START_MS + 1_000,
        title: title.into(),
        importance: 50,
        episode: "feature".into(),
        tiers: [
            format!("{title}: full."),
            format!("{title}: condensed."),
            format!("{title}: paragraph."),
            format!("{title}: line."),
        ],
        quotes: vec![Quote {
            ordinal: start,
            text: format!("quote {start}"),
        }],
        index: mc_core::head::RangeIndex::default(),
    }
}

fn publish(harness: &Harness, compartments: &[Compartment]) {
    harness
        .engine
        .store()
        .write(|tx| tx.append_compartments(&harness.session, compartments, 0))
        .unwrap();
}

fn text_of(message: &Message) -> String {
    mc_core::joined_texts(&message.parts)
}

#[test]
fn compartments_land_on_busts_only_soft_in_m1_then_folded_into_m0_with_the_task_pinned() {
    let harness = Harness::new();
    let messages = conversation(12, 400);
    let call = |end: usize, at: u64, flush: bool| Call {
        model: MODEL,
        messages: &messages[..end],
        now_ms: START_MS + at,
        usable_window: 1_000_000,
        last_usage_tokens: None,
        operator_flush: flush,
    };
    let first = harness.pass(&call(11, 0, false)).unwrap();
    // Ordinals 1..=4 (two calls and their results) are summarised; the task's compartment
    // is 0..=0.
    publish(
        &harness,
        &[compartment(0, 0, "Task"), compartment(1, 4, "First steps")],
    );
    // A cache-hit pass changes nothing: the boundary stays, the new message is appended.
    let hit = harness.pass(&call(13, 10_000, false)).unwrap();
    assert!(!hit.plan.may_mutate, "{:?}", hit.plan);
    assert_eq!(hit.messages[..first.messages.len()], first.messages[..]);
    // A flush busts: the move passes the task, so it folds; m[0] pins the task and holds both
    // compartments with their quotes, m[1] is the placeholder, the tail starts at ordinal 5.
    let fold = harness.pass(&call(15, 20_000, true)).unwrap();
    assert!(fold.plan.may_mutate);
    let m0 = text_of(&fold.messages[0]);
    assert!(
        m0.contains("<pinned ordinal=\"0\">\nMake the build green; never touch CI.\n</pinned>"),
        "{m0}"
    );
    assert!(
        m0.contains("| First steps\n<user ordinal=\"1\">quote 1</user>\nFirst steps: condensed."),
        "{m0}"
    );
    assert_eq!(text_of(&fold.messages[1]), M1_PLACEHOLDER);
    assert_eq!(fold.messages.len(), 2 + (15 - 5));
    assert!(matches!(&fold.messages[2].parts[0], Part::ToolCall { id, .. } if id == "toolu_2"));
    // More history, then a bust with a live cache: a soft bust shows it in m[1] only.
    publish(&harness, &[compartment(5, 8, "Later steps")]);
    let hit = harness.pass(&call(17, 30_000, false)).unwrap();
    assert_eq!(hit.messages.len(), 2 + (17 - 5));
    let soft = harness.pass(&call(19, 40_000, true)).unwrap();
    assert_eq!(soft.plan.kind, PassKind::SoftBust);
    assert_eq!(soft.messages[0], fold.messages[0], "m[0] is byte-identical");
    let m1 = text_of(&soft.messages[1]);
    assert!(
        m1.contains("| Later steps\n<user ordinal=\"5\">quote 5</user>\nLater steps: full."),
        "{m1}"
    );
    assert_eq!(soft.messages.len(), 2 + (19 - 9));
    // Idle past the TTL: the fold takes m[1] into m[0].
    let refold = harness.pass(&call(21, 40_000 + TTL_MS + 1, false)).unwrap();
    assert_eq!(refold.plan.kind, PassKind::HardFold);
    assert!(text_of(&refold.messages[0]).contains("| Later steps"));
    assert_eq!(text_of(&refold.messages[1]), M1_PLACEHOLDER);
}

#[test]
fn replaced_compartments_reach_m0_only_through_the_fold_a_head_rebuild_asks_for() {
    use mc_core::pass_plan::{BustCause, PassKind};

    let harness = Harness::new();
    let messages = conversation(12, 400);
    let call = |end: usize, at: u64| Call {
        model: MODEL,
        messages: &messages[..end],
        now_ms: START_MS + at,
        usable_window: 1_000_000,
        last_usage_tokens: None,
        operator_flush: false,
    };
    harness.pass(&call(11, 0)).unwrap();
    publish(
        &harness,
        &[compartment(0, 0, "Task"), compartment(1, 4, "First steps")],
    );
    harness.engine.request_flush(&harness.session).unwrap();
    let fold = harness.pass(&call(13, 10_000)).unwrap();
    assert_eq!(fold.plan.kind, PassKind::HardFold);
    assert!(text_of(&fold.messages[0]).contains("| First steps"));

    // A rebuild replaces the compartments m[0] was rendered from, covering as much.
    harness
        .engine
        .store()
        .write(|tx| {
            tx.stage_compartments(
                &harness.session,
                &[
                    compartment(0, 2, "Rebuilt start"),
                    compartment(3, 4, "Rebuilt end"),
                ],
                0,
            )?;
            tx.swap_staged_compartments(&harness.session)
        })
        .unwrap();
    // A plain flush busts softly: m[0] keeps the replaced history byte for byte.
    harness.engine.request_flush(&harness.session).unwrap();
    let soft = harness.pass(&call(15, 20_000)).unwrap();
    assert_eq!(soft.plan.kind, PassKind::SoftBust);
    assert_eq!(soft.messages[0], fold.messages[0]);
    // A head rebuild folds on the next pass, whose m[0] holds the new history only.
    harness
        .engine
        .request_head_rebuild(&harness.session)
        .unwrap();
    let rebuilt = harness.pass(&call(17, 30_000)).unwrap();
    assert_eq!(rebuilt.plan.kind, PassKind::HardFold);
    assert_eq!(rebuilt.plan.cause, Some(BustCause::StructuralEdit));
    let m0 = text_of(&rebuilt.messages[0]);
    assert!(
        m0.contains("| Rebuilt start") && m0.contains("| Rebuilt end"),
        "{m0}"
    );
    assert!(!m0.contains("First steps"), "{m0}");
    assert_eq!(rebuilt.messages.len(), 2 + (17 - 5), "the boundary stays");
    // The fold consumed the request: the next flush is soft again.
    harness.engine.request_flush(&harness.session).unwrap();
    let after = harness.pass(&call(19, 40_000)).unwrap();
    assert_eq!(after.plan.kind, PassKind::SoftBust);
    assert_eq!(after.messages[0], rebuilt.messages[0]);
}

/// Publishes one compartment as the historian would, up to the last clean end before the
/// session's newest ten tags: from where its history ends, or, when its last compartment is
/// provisional, from that one's start (read again and replaced, reaching past it). Marks the
/// new one provisional when asked. `None` when nothing is eligible.
fn publish_eligible(
    harness: &Harness,
    messages: &[Message],
    now_ms: u64,
    provisional: bool,
) -> Option<Compartment> {
    let store = harness.engine.store();
    let (until, open, tags) = store
        .read(|tx| {
            Ok((
                tx.summarised_until(&harness.session)?,
                tx.provisional_start(&harness.session)?,
                mc_core::tags::TagIndex::new(tx.tags(&harness.session)?),
            ))
        })
        .ok()?;
    let stored = store.read(|tx| tx.message_count(&harness.session)).ok()?;
    let known = &messages[..usize::try_from(stored).ok()?.min(messages.len())];
    let live = mc_core::historian::live_tail_start(&tags, 10)?;
    let boundary = open.unwrap_or(until);
    let chunk =
        mc_core::historian::eligible_chunk(known, boundary, live, 1, u64::MAX, until, &|_| 1)?;
    if chunk.end < until {
        return None;
    }
    let compartment = Compartment {
        start_ms: now_ms,
        end_ms: now_ms,
        ..compartment(chunk.start, chunk.end, &format!("steps {}", chunk.start))
    };
    store
        .write(|tx| {
            tx.reopen_provisional(&harness.session)?;
            tx.append_compartments(&harness.session, std::slice::from_ref(&compartment), 0)?;
            if provisional {
                tx.mark_provisional(&harness.session, chunk.start)?;
            }
            Ok(())
        })
        .unwrap();
    Some(compartment)
}

proptest! {
    #![proptest_config(cases())]

    /// With the historian publishing between requests, sometimes provisionally (the next
    /// publish reads that compartment's range again and replaces it): `m[0]` changes only on
    /// a hard fold (decay re-tiers only there), `m[1]` only on a bust, every compartment of
    /// the history at a mutating pass shows in its head (at least its heading, also one that
    /// replaced a provisional compartment already folded into `m[0]`), and every request
    /// stays inside the window.
    #[test]
    fn history_reaches_the_head_only_through_busts_and_m0_only_through_folds(
        script in arb_script(),
        publish_at in prop::collection::vec(0_u8..3, 25),
    ) {
        let harness = Harness::new();
        let (messages, steps) = script.materialise();
        let mut previous: Option<PassOutcome> = None;
        let mut published: Vec<Compartment> = Vec::new();
        for (index, step) in steps.iter().enumerate() {
            let choice = publish_at.get(index).copied().unwrap_or(0);
            if choice > 0
                && let Some(compartment) =
                    publish_eligible(&harness, &messages, step.now_ms, choice == 2)
            {
                published.retain(|old| old.start_ordinal < compartment.start_ordinal);
                published.push(compartment);
            }
            let call = Call {
                model: step.model,
                messages: &messages[..step.messages_len],
                now_ms: step.now_ms,
                usable_window: script.usable_window,
                last_usage_tokens: previous.as_ref().map(|outcome| rendered_tokens(&outcome.messages)),
                operator_flush: step.operator_flush,
            };
            let outcome = match harness.pass(&call) {
                Ok(outcome) => outcome,
                Err(EngineError::Refused { .. }) => break,
                Err(error) => return Err(TestCaseError::fail(format!("pass failed: {error}"))),
            };
            check_window(&call, &outcome)?;
            if let Some(previous) = &previous {
                if outcome.plan.kind != PassKind::HardFold {
                    prop_assert_eq!(&outcome.messages[0], &previous.messages[0], "m[0] changed without a fold");
                }
                if outcome.plan.kind == PassKind::CacheHit {
                    prop_assert_eq!(&outcome.messages[1], &previous.messages[1], "m[1] changed on a cache hit");
                }
            }
            if outcome.plan.may_mutate {
                let head = format!("{}\n{}", text_of(&outcome.messages[0]), text_of(&outcome.messages[1]));
                for compartment in &published {
                    let heading = format!("### {}-{} |", compartment.start_ordinal, compartment.end_ordinal);
                    prop_assert!(head.contains(&heading), "{} missing from the head:\n{}", heading, head);
                }
                let ranges = heading_ranges(&head);
                for pair in ranges.windows(2) {
                    prop_assert_eq!(pair[1].0, pair[0].1 + 1, "a gap or an overlap in the head:\n{}", head);
                }
            }
            previous = Some(outcome);
        }
    }
}

/// The ordinal ranges of the compartment headings (`### A-B |`, `#### A-B |`) in `head`, in
/// order.
fn heading_ranges(head: &str) -> Vec<(u64, u64)> {
    head.lines()
        .filter_map(|line| {
            let hashes = line.strip_prefix("###")?.trim_start_matches('#');
            let range = hashes.strip_prefix(' ')?.split(" |").next()?;
            let (start, end) = range.split_once('-')?;
            Some((start.parse().ok()?, end.parse().ok()?))
        })
        .collect()
}

/// A drop that landed on the task's text stays landed once history covers the task: the
/// pinned copy in `m[0]` shows the placeholder, not the text the agent asked to drop.
#[test]
fn a_landed_drop_on_the_task_stays_dropped_in_the_pinned_copy() {
    let harness = Harness::new();
    // More results than the protected tags, so the task's tag may land.
    let messages = conversation(30, 100);
    let call = |end: usize, at: u64| Call {
        model: MODEL,
        messages: &messages[..end],
        now_ms: START_MS + at,
        usable_window: 1_000_000,
        last_usage_tokens: None,
        operator_flush: true,
    };
    harness.pass(&call(59, 0)).unwrap();
    let outcome = harness
        .engine
        .queue_drops(&harness.session, "1", "ctx_reduce", 0)
        .unwrap();
    assert_eq!(outcome.accepted.len(), 1, "{outcome:?}");
    assert_eq!(outcome.waiting().count(), 0, "{outcome:?}");
    let landed = harness.pass(&call(59, 10_000)).unwrap();
    // m[0] and m[1] come first; the task follows them in the raw tail.
    assert_eq!(text_of(&landed.messages[2]), "[dropped §1§]");
    publish(
        &harness,
        &[compartment(0, 0, "Task"), compartment(1, 4, "First steps")],
    );
    let fold = harness.pass(&call(61, 20_000)).unwrap();
    assert_eq!(fold.plan.kind, PassKind::HardFold);
    let m0 = text_of(&fold.messages[0]);
    assert!(
        m0.contains("<pinned ordinal=\"0\">\n[dropped §1§]\n</pinned>"),
        "{m0}"
    );
    assert!(!m0.contains("never touch CI"), "{m0}");
}

/// A branch forked past a provisional compartment keeps it provisional (its own historian
/// runs read it again); one forked inside it gets only the final history before it.
#[test]
fn a_branch_keeps_the_provisional_compartment_it_copies() {
    let harness = Harness::new();
    let messages = conversation(12, 400);
    harness
        .pass(&Call {
            model: MODEL,
            messages: &messages,
            now_ms: START_MS,
            usable_window: 1_000_000,
            last_usage_tokens: None,
            operator_flush: false,
        })
        .unwrap();
    harness
        .engine
        .store()
        .write(|tx| {
            tx.append_compartments(
                &harness.session,
                &[compartment(0, 8, "Done"), compartment(9, 14, "Going on")],
                0,
            )?;
            tx.mark_provisional(&harness.session, 9)
        })
        .unwrap();
    let provisional = |session: &mc_core::SessionId| {
        harness
            .engine
            .store()
            .read(|tx| {
                Ok((
                    tx.summarised_until(session)?,
                    tx.provisional_start(session)?,
                ))
            })
            .unwrap()
    };
    let past = harness
        .engine
        .fork(&harness.session, 20, START_MS + 60_000)
        .unwrap();
    assert_eq!(provisional(&past), (15, Some(9)));
    let inside = harness
        .engine
        .fork(&harness.session, 12, START_MS + 60_000)
        .unwrap();
    assert_eq!(provisional(&inside), (9, None));
}
