//! Guards the generator: the properties are only worth something if generated sessions
//! actually reach every pass kind, land drops, skeletonise and remove results, and hit the
//! force band. A fixed-seed sample of sessions must show all of it.

use std::collections::BTreeMap;

use mc_core::Part;
use mc_core::pass_plan::{BustCause, PassKind};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;

use crate::props::{Drive, drive};
use crate::session::arb_script;
use crate::support::Harness;

/// What a sample of generated sessions did.
#[derive(Debug, Default)]
struct Seen {
    kinds: BTreeMap<String, usize>,
    landed: usize,
    forced: usize,
    placeholders: usize,
    skeleton_calls: usize,
}

#[test]
fn generated_sessions_reach_every_pass_kind_and_land_drops() {
    let mut runner = TestRunner::deterministic();
    let strategy = arb_script();
    let mut seen = Seen::default();
    for _ in 0..24 {
        let script = strategy.new_tree(&mut runner).unwrap().current();
        let trace = drive(
            &Harness::new(),
            &script,
            Drive {
                check: false,
                retry: false,
            },
        )
        .unwrap();
        for outcome in &trace.outcomes {
            let name = format!("{:?}/{:?}", outcome.plan.kind, outcome.plan.cause);
            *seen.kinds.entry(name).or_default() += 1;
            seen.landed += outcome.landed.len();
            seen.forced += usize::from(outcome.plan.force);
            for part in outcome.messages.iter().flat_map(|m| &m.parts) {
                match part {
                    Part::Text { text, .. } if text.starts_with("[dropped §") => {
                        seen.placeholders += 1;
                    }
                    Part::ToolCall { input, .. } if input.to_string().contains('…') => {
                        seen.skeleton_calls += 1;
                    }
                    _ => {}
                }
            }
        }
    }
    let has = |kind: PassKind, cause: Option<BustCause>| {
        seen.kinds.contains_key(&format!("{kind:?}/{cause:?}"))
    };
    assert!(has(PassKind::CacheHit, None), "{seen:#?}");
    assert!(
        has(PassKind::HardFold, Some(BustCause::FirstRender)),
        "{seen:#?}"
    );
    assert!(
        has(PassKind::HardFold, Some(BustCause::CacheExpired)),
        "{seen:#?}"
    );
    assert!(
        has(PassKind::SoftBust, Some(BustCause::ForceBand))
            || has(PassKind::SoftBust, Some(BustCause::ExecuteThreshold)),
        "{seen:#?}"
    );
    assert!(
        has(PassKind::SoftBust, Some(BustCause::OperatorFlush)),
        "{seen:#?}"
    );
    assert!(
        seen.landed > 0 && seen.placeholders > 0 && seen.forced > 0,
        "{seen:#?}"
    );
    eprintln!("{seen:#?}");
}
