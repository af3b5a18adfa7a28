//! The scratch repository and the script of the small-window session: one log per step under
//! `logs/`, and a script whose step `n` has Claude Code run `cat logs/step-NN.log` once the
//! log of step `n − 1` came back whole.
//!
//! Each log is lines of words picked at random (a fixed seed per step, so the bytes never
//! change), between a first line and a last line that name the step. Random picks keep the
//! logs' 5-word shingles apart, so no log is a duplicate or near-duplicate of another: the
//! engine's duplicate lanes have nothing to take, and only the window fit keeps the session
//! inside the window. The sizes are in the simulated provider's tokens (what the window is
//! counted in): between [`MIN_LOG_TOKENS`] and [`MAX_LOG_TOKENS`] at the scenario's token
//! scale, pinned by a test below.

use std::path::Path;

use crate::support::git_repo::commit_all;
use serde_json::{Value, json};

/// How many steps (Bash calls) the script makes.
pub const STEPS: usize = 42;
/// The script's last turn starts with this.
pub const FINAL_ANSWER: &str = "FINAL-ANSWER:";
/// What the script answers when no turn matched (its `final_text`).
pub const FELL_THROUGH: &str = "SCRIPT-FELL-THROUGH";
/// The fewest provider tokens a log may count, at the scenario's token scale.
pub const MIN_LOG_TOKENS: u64 = 3_000;
/// The most provider tokens a log may count, at the scenario's token scale.
pub const MAX_LOG_TOKENS: u64 = 4_000;

/// Lines of words in the shortest log; step `n` adds `(7·n) mod SPREAD_LINES`, so the sizes
/// vary over the whole 3–4K range without a pattern the engine could lean on.
const BASE_LINES: usize = 150;
const SPREAD_LINES: usize = 41;
/// Words per line.
const LINE_WORDS: usize = 8;
/// The words of a line: each one o200k token with its leading space.
const WORDS: [&str; 64] = [
    "apple", "bread", "cloud", "delta", "eagle", "field", "grape", "house", "input", "joint",
    "kite", "lemon", "metal", "north", "ocean", "paper", "queen", "river", "stone", "table",
    "union", "value", "water", "yield", "zero", "alpha", "bench", "chain", "drive", "entry",
    "frame", "guard", "heart", "index", "judge", "knife", "layer", "model", "noise", "order",
    "point", "quiet", "range", "scale", "token", "upper", "voice", "wheel", "young", "basic",
    "cable", "depth", "earth", "flame", "glass", "honey", "image", "level", "money", "night",
    "plant", "radio", "sound", "train",
];

/// Creates `repo` with the logs and one commit (a git repository, as Claude Code and the
/// proxy's project identity expect).
pub fn create(repo: &Path) {
    std::fs::create_dir_all(repo.join("logs")).unwrap();
    for step in 1..=STEPS {
        std::fs::write(repo.join(log_path(step)), log(step)).unwrap();
    }
    std::fs::write(
        repo.join("README.md"),
        "# small window demo\n\nOne generated log per step under logs/.\n",
    )
    .unwrap();
    commit_all(repo);
}

/// The script's JSON: step 1 at once, step `n` once the last tool result ends with step
/// `n − 1`'s last line, the final answer once step [`STEPS`]'s log came back.
pub fn script() -> String {
    let mut turns: Vec<Value> = (1..=STEPS)
        .map(|step| {
            let content = json!([
                {"type": "text", "text": format!("Step {step}: reading its log.")},
                {"type": "tool_use", "name": "Bash", "input": {
                    "command": format!("cat {}", log_path(step)),
                    "description": format!("Show the log of step {step}"),
                }},
            ]);
            match step {
                1 => json!({"content": content}),
                _ => json!({
                    "when": {"last_tool_result_contains": last_line(step - 1)},
                    "content": content,
                }),
            }
        })
        .collect();
    turns.push(json!({
        "when": {"last_tool_result_contains": last_line(STEPS)},
        "content": [{"type": "text", "text": format!("{FINAL_ANSWER} all {STEPS} step logs were read.")}],
    }));
    let script = json!({
        "final_text": format!("{FELL_THROUGH}: a scripted turn did not match what Claude Code sent."),
        "turns": turns,
    });
    serde_json::to_string_pretty(&script).unwrap()
}

fn log_path(step: usize) -> String {
    format!("logs/step-{step:02}.log")
}

/// The log's last line: the marker the next step waits for, which only a whole log ends with.
fn last_line(step: usize) -> String {
    format!("end of step {step:02} of {STEPS}")
}

/// The log of `step`: a first line, `BASE_LINES + (7·step) mod SPREAD_LINES` lines of random
/// words with a line number and a value, and [`last_line`].
fn log(step: usize) -> String {
    let mut random = SplitMix64(step as u64);
    let lines = BASE_LINES + (7 * step) % SPREAD_LINES;
    let mut text = format!("begin step {step:02} of {STEPS}: {lines} lines\n");
    for line in 0..lines {
        let words: Vec<&str> = (0..LINE_WORDS)
            .map(|_| WORDS[(random.next() % WORDS.len() as u64) as usize])
            .collect();
        let value = random.next() % 100_000;
        text.push_str(&format!(
            "{step:02}.{line:03} {} {value:05}\n",
            words.join(" ")
        ));
    }
    text.push_str(&last_line(step));
    text.push('\n');
    text
}

/// A fixed, portable pseudo-random sequence (SplitMix64): the logs must be the same bytes on
/// every machine and run.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[test]
fn every_log_counts_3k_to_4k_provider_tokens() {
    use mc_sim::{Calibration, CountTokens, O200kCounter, TokenScale};

    let counter = O200kCounter::load().unwrap();
    let provider = TokenScale::new(super::TOKEN_SCALE)
        .unwrap()
        .apply(Calibration::CLAUDE);
    let sizes: Vec<u64> = (1..=STEPS)
        .map(|step| provider.scale_tokens(counter.count_tokens(&log(step))))
        .collect();
    assert!(
        sizes
            .iter()
            .all(|&tokens| (MIN_LOG_TOKENS..=MAX_LOG_TOKENS).contains(&tokens)),
        "{sizes:?}"
    );
    let total: u64 = sizes.iter().sum();
    eprintln!(
        "logs: {} to {} provider tokens, {total} in all",
        sizes.iter().min().unwrap(),
        sizes.iter().max().unwrap()
    );
}

#[test]
fn each_step_waits_for_the_whole_previous_log() {
    let script: Value = serde_json::from_str(&script()).unwrap();
    let turns = script["turns"].as_array().unwrap();
    assert_eq!(turns.len(), STEPS + 1);
    assert_eq!(
        turns[1]["content"][1]["input"]["command"],
        "cat logs/step-02.log"
    );
    assert!(log(1).ends_with("end of step 01 of 42\n"));
    assert_eq!(
        turns[1]["when"]["last_tool_result_contains"],
        "end of step 01 of 42"
    );
    // The marker ends its own log and appears in no other.
    for step in 1..=STEPS {
        let marker = last_line(step);
        let holders: Vec<usize> = (1..=STEPS)
            .filter(|other| log(*other).contains(&marker))
            .collect();
        assert_eq!(holders, [step]);
    }
}
