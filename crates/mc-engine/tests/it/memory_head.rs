//! Project memory in the head: the project's live memories in `m[0]`, changes logged since
//! in `m[1]` on the next soft bust (never a bust of their own), an operator's edit of a memory
//! `m[0]` shows folds on the next pass that may change bytes, and another project's memories
//! never appear.

use mc_core::head::{M1_PLACEHOLDER, MemoryCategory};
use mc_core::pass_plan::PassKind;
use mc_core::{Host, Message, ProjectId};
use mc_store::{MemoryEdit, MemorySource, NewMemory, NewSession};

use crate::support::{Call, Harness, MODEL, START_MS, conversation};

fn text_of(message: &Message) -> String {
    mc_core::joined_texts(&message.parts)
}

fn add(
    harness: &Harness,
    project: &ProjectId,
    content: &str,
    source: MemorySource,
    permanent: bool,
) -> u64 {
    harness
        .engine
        .store()
        .write(|tx| {
            tx.add_memory(
                project,
                &NewMemory {
                    category: MemoryCategory::ProjectRules,
                    content,
                    source,
                    permanent,
                },
                0,
            )
        })
        .unwrap()
        .id()
}

#[test]
fn memories_reach_m0_changes_wait_for_a_bust_and_an_operator_edit_folds() {
    let harness = Harness::new();
    let project = ProjectId::new("git:abc").unwrap();
    let elsewhere = ProjectId::new("git:other").unwrap();
    harness.bind_project(&project);
    let rule = add(
        &harness,
        &project,
        "Never push to main.",
        MemorySource::Operator,
        true,
    );
    add(
        &harness,
        &elsewhere,
        "A rule of another project.",
        MemorySource::Operator,
        false,
    );
    let messages = conversation(20);
    let call = |end: usize, at: u64, flush: bool| Call {
        model: MODEL,
        messages: &messages[..end],
        now_ms: START_MS + at,
        usable_window: 1_000_000,
        last_usage_tokens: None,
        operator_flush: flush,
    };

    let first = harness.pass(&call(3, 0, false)).unwrap();
    let m0 = text_of(&first.messages[0]);
    assert!(
        m0.contains(
            "<project-memory>\n## PROJECT_RULES\n- #1 Never push to main.\n</project-memory>"
        ),
        "{m0}"
    );
    assert!(!m0.contains("another project"), "{m0}");

    // The agent learns something: nothing busts, the bytes stay.
    let learned = add(
        &harness,
        &project,
        "Run the tests with --locked.",
        MemorySource::Agent,
        false,
    );
    let hit = harness.pass(&call(5, 10_000, false)).unwrap();
    assert!(!hit.plan.may_mutate, "{:?}", hit.plan);
    assert_eq!(hit.messages[..first.messages.len()], first.messages[..]);

    // The next bust shows it in m[1]; m[0] is byte-identical.
    let soft = harness.pass(&call(7, 20_000, true)).unwrap();
    assert_eq!(soft.plan.kind, PassKind::SoftBust, "{:?}", soft.plan);
    assert_eq!(soft.messages[0], first.messages[0]);
    let m1 = text_of(&soft.messages[1]);
    assert!(
        m1.contains(&format!(
            "<new-project-memory>\n## PROJECT_RULES\n- #{learned} Run the tests with --locked.\n"
        )),
        "{m1}"
    );

    // The operator rewrites the rule m[0] states: a cache hit still sends the old bytes, the
    // next pass that may change bytes folds the new wording into m[0].
    harness
        .engine
        .store()
        .write(|tx| {
            tx.edit_memory(
                &project,
                rule,
                MemoryEdit {
                    category: None,
                    content: Some("Never push to main; open a pull request."),
                },
                MemorySource::Operator,
                0,
            )
        })
        .unwrap();
    let hit = harness.pass(&call(9, 30_000, false)).unwrap();
    assert!(!hit.plan.may_mutate, "{:?}", hit.plan);
    assert_eq!(hit.messages[0], first.messages[0]);
    let fold = harness.pass(&call(11, 40_000, true)).unwrap();
    assert_eq!(fold.plan.kind, PassKind::HardFold, "{:?}", fold.plan);
    let m0 = text_of(&fold.messages[0]);
    assert!(
        m0.contains("- #1 Never push to main; open a pull request.\n"),
        "{m0}"
    );
    assert!(
        m0.contains(&format!("- #{learned} Run the tests with --locked.\n")),
        "{m0}"
    );
    assert_eq!(text_of(&fold.messages[1]), M1_PLACEHOLDER);

    // The agent's own edit of a shown memory is an update in m[1], not a fold.
    harness
        .engine
        .store()
        .write(|tx| {
            tx.edit_memory(
                &project,
                learned,
                MemoryEdit {
                    category: None,
                    content: Some("Run the tests with --locked --workspace."),
                },
                MemorySource::Agent,
                0,
            )
        })
        .unwrap();
    let soft = harness.pass(&call(13, 50_000, true)).unwrap();
    assert_eq!(soft.plan.kind, PassKind::SoftBust, "{:?}", soft.plan);
    assert_eq!(soft.messages[0], fold.messages[0]);
    let m1 = text_of(&soft.messages[1]);
    assert!(m1.contains("<project-memory-updates>"), "{m1}");
    assert!(
        m1.contains("Run the tests with --locked --workspace."),
        "{m1}"
    );
}

mod properties {
    use mc_engine::{EngineError, PassOutcome};
    use proptest::prelude::*;

    use super::*;
    use crate::props::{cases, check_window};
    use crate::session::arb_script;
    use crate::support::rendered_tokens;

    /// What happens to project memory before a request.
    #[derive(Debug, Clone)]
    enum Change {
        Nothing,
        /// The agent (or the historian) adds a fact.
        Add(MemorySource),
        /// An edit of the oldest live memory, by the agent or the operator.
        Edit(MemorySource),
    }

    fn arb_change() -> impl Strategy<Value = Change> {
        prop_oneof![
            4 => Just(Change::Nothing),
            2 => prop_oneof![Just(MemorySource::Agent), Just(MemorySource::Historian)].prop_map(Change::Add),
            1 => prop_oneof![Just(MemorySource::Agent), Just(MemorySource::Operator)].prop_map(Change::Edit),
        ]
    }

    proptest! {
        #![proptest_config(cases())]

        /// With memories written in the background between requests: `m[0]` changes only on
        /// a hard fold, `m[1]` never on a cache hit, every request stays inside the window,
        /// and after an operator's edit of a memory `m[0]` shows, the next pass that may
        /// change bytes is a hard fold showing the new wording.
        #[test]
        fn background_memory_writes_never_bust_and_operator_edits_fold(
            script in arb_script(),
            changes in prop::collection::vec(arb_change(), 25),
        ) {
            let harness = Harness::new();
            let project = ProjectId::new("git:prop").unwrap();
            harness.engine.store().write(|tx| tx.upsert_session(&NewSession {
                id: harness.session.clone(),
                host: Host::ClaudeCode,
                project: Some(project.clone()),
            }, 0)).unwrap();
            let (messages, steps) = script.materialise();
            let mut previous: Option<PassOutcome> = None;
            let mut pending_operator_edit: Option<String> = None;
            for (index, step) in steps.iter().enumerate() {
                match changes.get(index).cloned().unwrap_or(Change::Nothing) {
                    Change::Nothing => {}
                    Change::Add(source) => {
                        add(&harness, &project, &format!("Fact {index}: keep step {index} green."), source, false);
                    }
                    Change::Edit(actor) => {
                        let oldest = harness.engine.store()
                            .read(|tx| tx.memories(&project, &[mc_store::MemoryStatus::Active]))
                            .unwrap()
                            .into_iter()
                            .next();
                        if let Some(memory) = oldest {
                            let wording = format!("Edited at step {index}: {}", memory.record.content);
                            harness.engine.store().write(|tx| tx.edit_memory(&project, memory.id, MemoryEdit {
                                category: None,
                                content: Some(&wording),
                            }, actor, 0)).unwrap();
                            let shown = previous.as_ref().is_some_and(|outcome| {
                                text_of(&outcome.messages[0]).contains(&format!("- #{} ", memory.id))
                            });
                            if actor == MemorySource::Operator && shown {
                                pending_operator_edit = Some(wording);
                            }
                        }
                    }
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
                if outcome.plan.may_mutate
                    && let Some(wording) = pending_operator_edit.take()
                {
                    prop_assert_eq!(outcome.plan.kind, PassKind::HardFold, "an operator edit did not fold");
                    let m0 = text_of(&outcome.messages[0]);
                    prop_assert!(m0.contains(&wording) || !m0.contains("<project-memory>"), "{}", m0);
                }
                previous = Some(outcome);
            }
        }
    }
}
