//! The scratch repository and script of the historian session: one work log per step under
//! `work/`, and a script whose step `n` has Claude Code `cat` log `n` once log `n − 1` came
//! back whole.
//!
//! A log is a first line naming its step, lines of a task journal (an entry number, an
//! action, a component, words picked at random with a fixed seed per step, a figure), and a
//! last line the next step waits for. The random words keep logs apart, so the engine's
//! duplicate lanes have nothing to take and the session's history really grows; each log
//! counts about 700 tokens.

use std::path::Path;

use crate::support::git_repo::commit_all;
use serde_json::{Value, json};

/// The script's last turn starts with this.
pub const FINAL_ANSWER: &str = "FINAL-ANSWER:";
/// What the script answers when no turn matched (its `final_text`).
pub const FELL_THROUGH: &str = "SCRIPT-FELL-THROUGH";

/// Journal lines per log.
const LINES: usize = 40;
const ACTIONS: [&str; 8] = [
    "checked",
    "updated",
    "reviewed",
    "measured",
    "renamed",
    "tested",
    "traced",
    "documented",
];
const COMPONENTS: [&str; 8] = [
    "parser",
    "scheduler",
    "cache",
    "ledger",
    "router",
    "encoder",
    "store",
    "planner",
];
const WORDS: [&str; 32] = [
    "apple", "bread", "cloud", "delta", "eagle", "field", "grape", "house", "input", "joint",
    "lemon", "metal", "north", "ocean", "paper", "queen", "river", "stone", "table", "union",
    "value", "water", "yield", "alpha", "bench", "chain", "drive", "entry", "frame", "guard",
    "heart", "index",
];

/// Creates `repo` with `steps` logs and one commit (a git repository, as Claude Code and
/// the proxy's project identity expect).
pub fn create(repo: &Path, steps: usize) {
    std::fs::create_dir_all(repo.join("work")).unwrap();
    for step in 1..=steps {
        std::fs::write(repo.join(log_path(step)), log(step, steps)).unwrap();
    }
    std::fs::write(
        repo.join("README.md"),
        "# work journal\n\nOne log per step under work/.\n",
    )
    .unwrap();
    commit_all(repo);
}

/// The script's JSON: step 1 at once, step `n` once the last tool result ends with step
/// `n − 1`'s last line, the final answer once the last log came back.
pub fn script(steps: usize) -> String {
    let mut turns: Vec<Value> = (1..=steps)
        .map(|step| {
            let content = json!([
                {"type": "text", "text": format!("Step {step}: reading its journal.")},
                {"type": "tool_use", "name": "Bash", "input": {
                    "command": format!("cat {}", log_path(step)),
                    "description": format!("Show the journal of step {step}"),
                }},
            ]);
            match step {
                1 => json!({"content": content}),
                _ => json!({
                    "when": {"last_tool_result_contains": last_line(step - 1, steps)},
                    "content": content,
                }),
            }
        })
        .collect();
    turns.push(json!({
        "when": {"last_tool_result_contains": last_line(steps, steps)},
        "content": [{"type": "text", "text": format!("{FINAL_ANSWER} all {steps} journals were read.")}],
    }));
    let script = json!({
        "final_text": format!("{FELL_THROUGH}: a scripted turn did not match what Claude Code sent."),
        "turns": turns,
    });
    serde_json::to_string_pretty(&script).unwrap()
}

/// Where log `step` lies in the repository.
pub fn log_path(step: usize) -> String {
    format!("work/step-{step:03}.log")
}

/// The log's last line: the marker the next step waits for, which only a whole log ends with.
pub fn last_line(step: usize, steps: usize) -> String {
    format!("end of journal {step:03} of {steps}")
}

fn log(step: usize, steps: usize) -> String {
    let mut random = SplitMix64(step as u64);
    let mut pick =
        |choices: &[&'static str]| choices[(random.next() % choices.len() as u64) as usize];
    let mut text = format!("journal {step:03} of {steps}: {LINES} entries\n");
    for line in 0..LINES {
        let action = pick(&ACTIONS);
        let component = pick(&COMPONENTS);
        let words: Vec<&str> = (0..6).map(|_| pick(&WORDS)).collect();
        text.push_str(&format!(
            "{step:03}.{line:02} {action} the {component}: {}\n",
            words.join(" ")
        ));
    }
    text.push_str(&last_line(step, steps));
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
fn logs_are_distinct_and_each_step_waits_for_the_previous_log() {
    use mc_sim::{CountTokens, O200kCounter};

    let counter = O200kCounter::load().unwrap();
    let tokens: Vec<u64> = (1..=5)
        .map(|step| counter.count_tokens(&log(step, 320)))
        .collect();
    assert!(
        tokens.iter().all(|&count| (500..=900).contains(&count)),
        "{tokens:?}"
    );
    assert_ne!(log(1, 320), log(2, 320));
    let script: Value = serde_json::from_str(&script(3)).unwrap();
    let turns = script["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 4);
    assert_eq!(
        turns[1]["content"][1]["input"]["command"],
        "cat work/step-002.log"
    );
    assert_eq!(
        turns[1]["when"]["last_tool_result_contains"],
        "end of journal 001 of 3"
    );
    assert!(log(1, 3).ends_with("end of journal 001 of 3\n"));
}
