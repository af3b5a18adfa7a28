//! A long generated coding session at a 200K window, where the host's own compaction runs
//! several times: the historian keeps the user's words (every instruction the user typed stays
//! verbatim in the last request) where compaction loses them, what the model goes on to use is
//! kept more often than compaction keeps it, nothing goes over the window, and the input side
//! is reported beside the baselines.

use mc_core::{Message, Part, Role};
use mc_replay::{ReplayOptions, StrategyTotals, replay};
use mc_sim::Recording;
use mc_sim::strategy::StrategyKind;
use serde_json::json;

use crate::coding_sessions::{Seq, recording, text};

/// Every this many turns the agent stops and the user types an instruction.
const INSTRUCTION_EVERY: usize = 8;

/// A session of `turns` model calls: reads, shell runs and edits through native tool calls,
/// and every [`INSTRUCTION_EVERY`] turns a pause where the user says what to do next.
fn long_session(seed: u64, turns: usize) -> Recording {
    let mut seq = Seq(seed);
    let mut history = vec![Message::new(
        Role::User,
        vec![Part::text(
            "Port the storage layer to the new schema; keep every migration reversible.",
        )],
    )];
    let mut steps = Vec::new();
    for turn in 0..turns {
        let at_ms = turn as u64 * 30_000;
        if turn > 0 && turn % INSTRUCTION_EVERY == 0 {
            let pause = Message::new(
                Role::Assistant,
                vec![Part::text(format!(
                    "Finished part {}. What next?",
                    turn / 8
                ))],
            );
            steps.push((history.len(), pause.clone(), at_ms));
            history.push(pause);
            history.push(Message::new(
                Role::User,
                vec![Part::text(format!(
                    "Instruction {turn}: next do table {}, and never drop column id_{turn}.",
                    seq.next(40)
                ))],
            ));
            continue;
        }
        let id = format!("toolu_{seed}_{turn}");
        let path = format!("src/store/table_{}.rs", seq.next(12));
        let (call, output) = match seq.next(10) {
            0..=3 => (
                Part::ToolCall {
                    id: id.clone(),
                    name: "Read".into(),
                    input: json!({"file_path": path}),
                },
                text(seq.between(4_000, 9_000), &format!("r{turn}")),
            ),
            4..=5 => (
                Part::ToolCall {
                    id: id.clone(),
                    name: "MultiEdit".into(),
                    input: json!({"file_path": path, "edits": [
                        {"old_string": text(seq.between(300, 900), &format!("o{turn}")),
                         "new_string": text(seq.between(300, 900), &format!("n{turn}"))}
                    ]}),
                },
                format!("Applied 1 edit to {path}"),
            ),
            _ => (
                Part::ToolCall {
                    id: id.clone(),
                    name: "Bash".into(),
                    input: json!({"command": format!("cargo test -p store -- case_{turn}")}),
                },
                text(seq.between(800, 3_000), &format!("b{turn}")),
            ),
        };
        let response = Message::new(
            Role::Assistant,
            vec![Part::text(format!("Step {turn}: checking {path}.")), call],
        );
        steps.push((history.len(), response.clone(), at_ms));
        history.push(response);
        history.push(Message::new(
            Role::User,
            vec![Part::ToolResult {
                call_id: id,
                content: vec![Part::text(output)],
                is_error: false,
            }],
        ));
    }
    recording(format!("long-session-{seed}"), 3_000, history, steps)
}

fn describe(name: &str, totals: &StrategyTotals) -> String {
    format!(
        "{name}: cost ${:.2}, input ${:.2}, controlled ${:.2}, read share {:.3}, peak {}, over {}, failed {}, user kept {:?}, refs kept {:?}, busts {:?}, labelled {:?}, counters {:?}",
        totals.cost_usd,
        totals.input_cost_usd,
        totals.controlled_cost_usd,
        totals.cache_read_share,
        totals.peak_context,
        totals.over_window,
        totals.failed_sessions,
        totals.user_words_kept,
        totals.references_kept,
        totals.busts,
        totals
            .labelled
            .iter()
            .map(|(label, calls)| format!(
                "{label} {} calls ${:.2} ({} in, {} out)",
                calls.calls, calls.cost_usd, calls.prompt_tokens, calls.output_tokens
            ))
            .collect::<Vec<_>>(),
        totals.counters
    )
}

/// The generated sessions the test replays: seed 7 unless `MC_LONG_SESSION_SEEDS` names
/// others (comma-separated), so a change can be measured over several sessions at once
/// (`MC_LONG_SESSION_SEEDS=1,2,3,4,5,6,7,8 cargo test --release -p mc-replay --test it
/// long_session -- --nocapture`): one generated session is a noisy measure of a policy.
fn seeds() -> Vec<u64> {
    match std::env::var("MC_LONG_SESSION_SEEDS") {
        Ok(list) => list
            .split(',')
            .map(|seed| {
                seed.trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("MC_LONG_SESSION_SEEDS: {seed:?} is not a seed"))
            })
            .collect(),
        Err(_) => vec![7],
    }
}

#[test]
fn over_a_long_session_the_users_words_survive_where_compaction_loses_them() {
    let seeds = seeds();
    let mut ratios = Vec::new();
    for &seed in &seeds {
        ratios.push(replay_and_check(seed));
    }
    eprintln!(
        "controlled, magic / autocompact, mean over {} sessions: {:.3}",
        seeds.len(),
        ratios.iter().sum::<f64>() / ratios.len() as f64
    );
}

/// Replays the session of `seed`, checks it, and returns its controlled-cost ratio of `magic`
/// to `autocompact`.
fn replay_and_check(seed: u64) -> f64 {
    let sessions = vec![long_session(seed, 320)];
    let options = ReplayOptions {
        window_tokens: Some(200_000),
        strategies: vec![StrategyKind::Magic, StrategyKind::Autocompact],
        ..ReplayOptions::default()
    };
    let report = replay(&sessions, &options).unwrap();
    let magic = &report.runs[0].totals;
    let autocompact = &report.runs[1].totals;
    eprintln!("session {seed}");
    eprintln!("{}", describe("magic", magic));
    eprintln!("{}", describe("autocompact", autocompact));
    let controlled = magic.controlled_cost_usd / autocompact.controlled_cost_usd;
    eprintln!(
        "input side: magic / autocompact = {:.3}; controlled: {controlled:.3}",
        magic.input_cost_usd / autocompact.input_cost_usd,
    );
    assert_eq!((magic.over_window, magic.failed_sessions), (0, 0));
    assert_eq!(magic.engine_failures, Some(0));
    assert!(
        autocompact.busts.get("autocompact").copied().unwrap_or(0) >= 2,
        "the session must be long enough for the host to compact: {:?}",
        autocompact.busts
    );
    assert!(magic.counters.get("compartments").copied().unwrap_or(0) > 0);
    assert!(magic.labelled.contains_key("historian"));
    let kept = magic.user_words_kept.unwrap();
    let lost = autocompact.user_words_kept.unwrap();
    assert!(kept >= 0.98, "magic kept {kept} of the user's messages");
    assert!(lost <= 0.5, "compaction kept {lost} of the user's messages");
    // What the model went on to use (file names, values) is still in front of it far more
    // often than after a compaction.
    let magic_refs = magic.references_kept.unwrap();
    let compaction_refs = autocompact.references_kept.unwrap();
    assert!(
        magic_refs >= compaction_refs + 0.1,
        "magic kept {magic_refs} of the references the model used, compaction {compaction_refs}"
    );
    // And it costs less than compaction. Seeds 1-8 measured 0.711-0.759 (mean 0.736, user
    // words 1.0 in each) once the historian wrote two tiers; the product's aim is 0.7, so
    // this bound only keeps a regression from passing unseen.
    assert!(
        controlled <= 0.78,
        "magic cost {controlled:.3} of compaction's controlled cost"
    );
    controlled
}
