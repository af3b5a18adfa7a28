//! Properties over generated sessions: the never-reclaim rules hold whatever the input.

use std::collections::BTreeSet;

use proptest::prelude::*;
use serde_json::json;

use super::super::{FingerprintIndex, plan_reclaim_with};
use super::*;
use crate::tags::{UnitRef, is_taggable};

/// Small vocabularies so duplicates, re-reads and errors actually occur.
fn arb_text() -> impl Strategy<Value = String> {
    (0_usize..4, 0_usize..400, any::<bool>()).prop_map(|(seed, tokens, error)| {
        let body = words(tokens, &format!("v{seed}_"));
        if error {
            format!("Error: {body}")
        } else {
            body
        }
    })
}

fn arb_part(role: Role) -> impl Strategy<Value = Part> {
    let path = prop_oneof![Just("a.py"), Just("b.py")];
    let tool = prop_oneof![Just("Read"), Just("Edit"), Just("Bash"), Just("Grep")];
    prop_oneof![
        arb_text().prop_map(Part::text),
        (0_u8..6, arb_text(), any::<bool>()).prop_map(|(id, text, is_error)| Part::ToolResult {
            call_id: format!("c{id}"),
            content: vec![Part::text(text)],
            is_error,
        }),
        (0_u8..6, tool, path.clone()).prop_map(move |(id, name, path)| Part::ToolCall {
            id: format!("c{id}"),
            name: name.into(),
            input: if name == "Bash" {
                json!({"command": format!("cat {path}")})
            } else {
                json!({"file_path": path})
            },
        }),
        (any::<bool>()).prop_map(|signed| Part::Thinking {
            text: "hmm".into(),
            signature: signed.then(|| "sig".into()),
        }),
        path.prop_map(move |path| if role == Role::Assistant {
            Part::text(format!("```bash\ncat {path}\n```"))
        } else {
            Part::text(format!("<returncode>0</returncode><output>{path}</output>"))
        }),
    ]
}

fn arb_message() -> impl Strategy<Value = Message> {
    prop_oneof![
        Just(Role::User),
        Just(Role::Assistant),
        Just(Role::Tool),
        Just(Role::System)
    ]
    .prop_flat_map(|role| {
        proptest::collection::vec(arb_part(role), 1..4)
            .prop_map(move |parts| Message::new(role, parts))
    })
}

prop_compose! {
    fn arb_session()(
        stored in proptest::collection::vec(arb_message(), 1..30),
        drop_bits in proptest::collection::vec(0_u8..3, 0..80),
        protected_count in 0_u32..12,
        stale_age_turns in 0_u32..6,
        stale_min_tokens in 0_u64..400,
        errored_age_turns in 0_u32..4,
        near_duplicate_min_tokens in 0_u64..300,
    ) -> Session {
        let mut session = Session::new(stored);
        for (index, bit) in drop_bits.iter().enumerate() {
            let tag = TagNo(u32::try_from(index).unwrap_or(0) + 1);
            match bit {
                1 => { session.drops.queued.insert(tag); }
                2 => { session.drops.landed.insert(tag); }
                _ => {}
            }
        }
        session.config = ReclaimConfig {
            protected_count,
            stale_age_turns,
            stale_min_tokens,
            errored_age_turns,
            near_duplicate_min_tokens,
            ..ReclaimConfig::default()
        };
        session
    }
}

proptest! {
    #[test]
    fn decisions_never_target_what_must_stay(session in arb_session(), emergency in any::<bool>()) {
        let mut session = session;
        session.emergency = emergency;
        let messages: Vec<(u64, &Message)> = (0..).zip(&session.stored).collect();
        let tags = tag_all(&messages);
        let task = session.stored.iter().position(|message| message.role == Role::User);
        let decisions = session.plan();
        let mut seen = BTreeSet::new();
        for decision in &decisions {
            prop_assert!(seen.insert(decision.tag), "tag decided twice");
            prop_assert!(!tags.is_protected(decision.tag, session.config.protected_count));
            prop_assert!(!session.drops.queued.contains(&decision.tag));
            prop_assert!(!session.drops.landed.contains(&decision.tag));
            let unit = tags.unit_of(decision.tag);
            prop_assert!(unit.is_some());
            let UnitRef { ordinal, part } = unit.unwrap_or(UnitRef { ordinal: 0, part: 0 });
            let index = usize::try_from(ordinal).unwrap_or(usize::MAX);
            let message = &session.stored[index];
            prop_assert!(is_taggable(&message.parts[part as usize]));
            prop_assert!(message.role != Role::System);
            prop_assert!(Some(index) != task);
            prop_assert!(decision.tokens > 0);
        }
    }

    #[test]
    fn emergency_only_adds_decisions(session in arb_session()) {
        let mut session = session;
        session.emergency = false;
        let normal = session.plan();
        session.emergency = true;
        let emergency = session.plan();
        let emergency_tags: BTreeSet<TagNo> = emergency.iter().map(|d| d.tag).collect();
        for decision in &normal {
            prop_assert!(emergency_tags.contains(&decision.tag));
            prop_assert!(emergency.contains(decision), "lane or tokens changed under emergency");
        }
    }

    #[test]
    fn planning_is_deterministic(session in arb_session()) {
        prop_assert_eq!(session.plan(), session.plan());
        let reasoning = |s: &Session| s.with_inputs(|inputs| super::super::plan_reasoning_drops(inputs, &s.config));
        prop_assert_eq!(reasoning(&session), reasoning(&session));
    }
}

prop_compose! {
    /// A session seen pass after pass: per pass, how many messages are stored, where the
    /// raw tail starts, and which tags are queued or landed (not always growing, to show the
    /// index copes with any caller).
    fn arb_passes()(
        session in arb_session(),
        passes in proptest::collection::vec(
            (any::<proptest::sample::Index>(), 0_usize..4, proptest::collection::vec(0_u8..3, 0..60)),
            1..8,
        ),
    ) -> (Session, Vec<(usize, usize, DropState)>) {
        let len = session.stored.len();
        let passes = passes
            .into_iter()
            .map(|(cut, start, bits)| {
                let cut = cut.index(len) + 1;
                let mut drops = DropState::default();
                for (index, bit) in bits.iter().enumerate() {
                    let tag = TagNo(u32::try_from(index).unwrap_or(0) + 1);
                    match bit {
                        1 => { drops.queued.insert(tag); }
                        2 => { drops.landed.insert(tag); }
                        _ => {}
                    }
                }
                (cut, start.min(cut - 1), drops)
            })
            .collect();
        (session, passes)
    }
}

proptest! {
    #[test]
    fn a_kept_index_decides_what_a_fresh_one_does((session, passes) in arb_passes()) {
        let all: Vec<(u64, &Message)> = (0..).zip(&session.stored).collect();
        let tags = tag_all(&all);
        let mut index = FingerprintIndex::new(&session.config);
        for (cut, start, drops) in &passes {
            for emergency in [false, true] {
                let inputs = ReclaimInputs {
                    messages: &all[*start..*cut],
                    tags: &tags,
                    drops,
                    newest_ordinal: *cut as u64 - 1,
                    token_estimate: &estimate,
                    emergency,
                };
                let kept = plan_reclaim_with(&inputs, &session.config, &mut index);
                prop_assert_eq!(kept, plan_reclaim(&inputs, &session.config));
            }
        }
    }
}
