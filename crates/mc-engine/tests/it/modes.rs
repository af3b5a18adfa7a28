//! Session modes: with compaction off the client's messages go up exactly as sent, after a
//! head of memories that changes only when the cache is dead anyway; a subagent is managed
//! like a primary session; the mode and the parent a pass names are stored.

use mc_core::head::MemoryCategory;
use mc_core::pass_plan::{BustCause, PassKind};
use mc_core::{Host, Message, ProjectId, SessionId, SessionMode};
use mc_store::{MemorySource, NewMemory, NewSession};
use proptest::prelude::*;

use crate::props::cases;
use crate::session::arb_script;
use crate::support::{Call, Harness, MODEL, START_MS};

fn host_managed() -> Harness {
    let harness = Harness::new();
    harness.mode.set(SessionMode::CompactionOff);
    harness
}

/// The session under test works in `project`, which has one memory.
fn with_memory(harness: &Harness, project: &ProjectId) {
    harness
        .engine
        .store()
        .write(|tx| {
            tx.upsert_session(
                &NewSession {
                    id: harness.session.clone(),
                    host: Host::ClaudeCode,
                    project: Some(project.clone()),
                },
                0,
            )?;
            tx.add_memory(
                project,
                &NewMemory {
                    category: MemoryCategory::ProjectRules,
                    content: "Never push to main.",
                    source: MemorySource::Operator,
                    permanent: true,
                },
                0,
            )
        })
        .unwrap();
}

fn json_bytes(messages: &[Message]) -> Vec<Vec<u8>> {
    messages
        .iter()
        .map(|message| serde_json::to_vec(message).unwrap())
        .collect()
}

#[test]
fn compaction_off_keeps_the_messages_and_shows_memories_in_the_head() {
    let harness = host_managed();
    let project = ProjectId::new("git:abc").unwrap();
    with_memory(&harness, &project);
    let messages: Vec<Message> = (0..6)
        .map(|turn| {
            let role = if turn % 2 == 0 {
                mc_core::Role::User
            } else {
                mc_core::Role::Assistant
            };
            Message::new(role, vec![mc_core::Part::text(format!("turn {turn} §3§ "))])
        })
        .collect();
    let call = |end: usize, at: u64, flush: bool| Call {
        model: MODEL,
        messages: &messages[..end],
        now_ms: START_MS + at,
        usable_window: 1_000,
        last_usage_tokens: Some(5_000),
        operator_flush: flush,
    };
    let first = harness.pass(&call(1, 0, false)).unwrap();
    assert_eq!(first.plan.cause, Some(BustCause::FirstRender));
    let m0 = mc_core::joined_texts(&first.messages[0].parts);
    assert!(m0.contains("Never push to main."), "{m0}");
    // Far over the window, and still nothing is refused, dropped or tagged.
    let second = harness.pass(&call(3, 1_000, false)).unwrap();
    assert_eq!(second.plan.kind, PassKind::CacheHit);
    assert_eq!(second.messages[..2], first.messages[..2]);
    let tail: Vec<Message> = second.messages[2..].iter().map(|m| (**m).clone()).collect();
    assert_eq!(json_bytes(&tail), json_bytes(&messages[..3]));
    let flushed = harness.pass(&call(5, 2_000, true)).unwrap();
    assert_eq!(flushed.plan.cause, Some(BustCause::OperatorFlush));
    let stored = harness
        .engine
        .store()
        .read(|tx| tx.get_session(&harness.session))
        .unwrap()
        .unwrap();
    assert_eq!(
        (stored.mode, stored.spawned_by),
        (SessionMode::CompactionOff, None)
    );
}

#[test]
fn a_subagent_is_stored_with_its_parent_and_keeps_it_when_no_longer_named() {
    let harness = Harness::new();
    let parent = SessionId::new("lead").unwrap();
    let messages = vec![Message::new(
        mc_core::Role::User,
        vec![mc_core::Part::text("Find the config loader.")],
    )];
    let pass = |spawned_by: Option<&SessionId>, at: u64| {
        harness
            .engine
            .pass(&mc_engine::PassRequest {
                session: &harness.session,
                host: Host::ClaudeCode,
                mode: SessionMode::Subagent,
                spawned_by,
                continues: None,
                project: None,
                model: MODEL,
                prefix_identity: "system-v1",
                system_blocks: 1,
                messages: &messages,
                chain: None,
                now_ms: START_MS + at,
                usable_window: Some(100_000),
                fixed_tokens: 0,
                last_usage_tokens: None,
                last_usage_pass: None,
                operator_flush: false,
                reduce_tool: true,
                project_docs: &[],
                client_ttl: mc_core::breakpoints::CacheTtlChoice::Default,
                count_text: &crate::support::count,
            })
            .unwrap()
    };
    pass(Some(&parent), 0);
    pass(None, 1_000);
    let stored = harness
        .engine
        .store()
        .read(|tx| tx.get_session(&harness.session))
        .unwrap()
        .unwrap();
    assert_eq!(
        (stored.mode, stored.spawned_by),
        (SessionMode::Subagent, Some(parent))
    );
}

proptest! {
    #![proptest_config(cases())]

    /// With compaction off, over generated sessions (drops queued by the operator, flushes,
    /// model switches, long idles, windows far too small): every message after the head is
    /// the client's, byte for byte; nothing lands; and the head changes only on a pass that
    /// folds because the cache is dead or the operator flushed.
    #[test]
    fn compaction_off_sends_the_clients_messages_as_sent(script in arb_script()) {
        let harness = host_managed();
        let (messages, steps) = script.materialise();
        let mut head: Option<Vec<Message>> = None;
        for step in &steps {
            if let Some(spec) = &step.drop {
                let now = i64::try_from(step.now_ms).unwrap();
                // Queued or refused, it must not change what goes up.
                let _queued = harness.engine.queue_drops(&harness.session, spec, "test", now);
            }
            let sent = &messages[..step.messages_len];
            let outcome = harness
                .pass(&Call {
                    model: step.model,
                    messages: sent,
                    now_ms: step.now_ms,
                    usable_window: script.usable_window,
                    last_usage_tokens: Some(script.usable_window * 2),
                    operator_flush: step.operator_flush,
                })
                .unwrap();
            let tail: Vec<Message> = outcome.messages[2..].iter().map(|m| (**m).clone()).collect();
            prop_assert_eq!(json_bytes(&tail), json_bytes(sent));
            prop_assert!(outcome.landed.is_empty());
            prop_assert!(outcome.breakpoints.marker_count() <= 4);
            let this_head: Vec<Message> =
                outcome.messages[..2].iter().map(|m| (**m).clone()).collect();
            match (&head, outcome.plan.kind) {
                (Some(previous), PassKind::CacheHit) => prop_assert_eq!(previous, &this_head),
                (_, PassKind::HardFold) => {}
                (previous, kind) => prop_assert!(false, "{kind:?} after {previous:?}"),
            }
            head = Some(this_head);
        }
    }
}

/// With compaction off, a drop would never land: asking for one says so instead of
/// queueing it.
#[test]
fn with_compaction_off_a_drop_is_refused_with_the_reason() {
    let mut config = mc_core::config::Config::default();
    config.compaction.enabled = false;
    let harness = Harness::with_config(config);
    harness.mode.set(SessionMode::CompactionOff);
    let messages = vec![Message::new(
        mc_core::Role::User,
        vec![mc_core::Part::text("Read the parser.")],
    )];
    harness
        .pass(&Call {
            model: MODEL,
            messages: &messages,
            now_ms: START_MS,
            usable_window: 100_000,
            last_usage_tokens: None,
            operator_flush: false,
        })
        .unwrap();
    let refused = harness
        .engine
        .queue_drops(&harness.session, "1", "ctx_reduce", 0)
        .unwrap_err();
    assert!(
        matches!(refused, mc_engine::EngineError::CompactionOff { .. }),
        "{refused}"
    );
    assert!(
        refused.to_string().contains("compaction.enabled"),
        "{refused}"
    );
    assert!(harness.snapshot().drops.is_empty());
}
