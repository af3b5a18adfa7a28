//! Sessions sharing one store stay independent: tags, drops and head state are per session,
//! so interleaving two sessions renders exactly what each renders alone. (The learned token
//! correction is per model and shared on purpose, so these harnesses learn none.)

use mc_core::SessionId;
use mc_engine::{EngineError, PassOutcome};
use proptest::prelude::*;

use crate::props::{Drive, drive};
use crate::session::{Script, arb_script};
use crate::support::{Call, Harness, rendered_tokens};

/// Both scripts, one request each in turn, on one engine; outcomes per session. A refused
/// request ends its session there (the client gets an error), as [`drive`] does alone.
fn interleave(first: &Script, second: &Script) -> Result<[Vec<PassOutcome>; 2], TestCaseError> {
    let harness = Harness::not_learning();
    let ids = [
        SessionId::new("first").unwrap(),
        SessionId::new("second").unwrap(),
    ];
    let scripts = [first, second];
    let runs: Vec<_> = scripts.iter().map(|script| script.materialise()).collect();
    let mut outcomes: [Vec<PassOutcome>; 2] = [Vec::new(), Vec::new()];
    let mut refused = [false, false];
    let longest = runs.iter().map(|(_, steps)| steps.len()).max().unwrap_or(0);
    for index in 0..longest {
        for which in 0..2 {
            let (messages, steps) = &runs[which];
            let Some(step) = steps.get(index).filter(|_| !refused[which]) else {
                continue;
            };
            if let Some(spec) = &step.drop {
                let now = i64::try_from(step.now_ms).unwrap();
                let _ = harness.engine.queue_drops(&ids[which], spec, "test", now);
            }
            let call = Call {
                model: step.model,
                messages: &messages[..step.messages_len],
                now_ms: step.now_ms,
                usable_window: scripts[which].usable_window,
                last_usage_tokens: outcomes[which]
                    .last()
                    .map(|outcome| rendered_tokens(&outcome.messages)),
                operator_flush: step.operator_flush,
            };
            match harness.pass_for(&ids[which], &call) {
                Ok(outcome) => outcomes[which].push(outcome),
                Err(EngineError::Refused { .. }) => refused[which] = true,
                Err(error) => return Err(TestCaseError::fail(format!("pass failed: {error}"))),
            }
        }
    }
    Ok(outcomes)
}

fn without_proven_windows(mut script: Script) -> Script {
    for turn in &mut script.turns {
        turn.prove_window_percent = None;
    }
    script
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn interleaved_sessions_render_what_each_renders_alone(
        first in arb_script().prop_map(without_proven_windows),
        second in arb_script().prop_map(without_proven_windows),
    ) {
        let [both_first, both_second] = interleave(&first, &second)?;
        let alone = Drive { check: false, retry: false };
        prop_assert_eq!(both_first, drive(&Harness::not_learning(), &first, alone)?.outcomes);
        prop_assert_eq!(both_second, drive(&Harness::not_learning(), &second, alone)?.outcomes);
    }
}
