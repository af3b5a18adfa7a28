//! The script of the Pi session: [`STEPS`] steps, each two calls of Pi's `bash` tool. The
//! first prints a large output (`seq` writing [`RUN_LINES`] numbered records, then a line
//! naming the step: more than Pi keeps of a command's output, so Pi itself cuts it to its
//! tail), the second a one-line check, as an agent looks at a long build log and then checks
//! one thing. Each call waits for the previous result to have come back (its last line), so
//! a turn plays only when Pi sent the output the script expects.

use serde_json::{Value, json};

/// How many steps the script runs: two tool calls each, and one final answer, so
/// `2 × STEPS + 1` model calls in all.
pub const STEPS: usize = 18;
/// Records each step's large output prints.
pub const RUN_LINES: usize = 3_000;
/// The script's last turn starts with this.
pub const FINAL_ANSWER: &str = "FINAL-ANSWER:";
/// What the script answers when no turn matched (its `final_text`).
pub const FELL_THROUGH: &str = "SCRIPT-FELL-THROUGH";

/// The script's JSON.
pub fn script() -> String {
    let mut turns = Vec::new();
    let mut waits_for: Option<String> = None;
    for step in 1..=STEPS {
        let run = format!(
            "seq -f 'step {step:02} record %g' 1 {RUN_LINES}; echo '{}'",
            run_end(step)
        );
        turns.push(turn(
            &format!("Step {step}: the run."),
            &run,
            waits_for.as_deref(),
        ));
        let check = format!("echo '{}'", check_line(step));
        turns.push(turn(
            &format!("Step {step}: the check."),
            &check,
            Some(&run_end(step)),
        ));
        waits_for = Some(check_line(step));
    }
    turns.push(json!({
        "when": {"last_tool_result_contains": waits_for},
        "content": [{"type": "text", "text": format!("{FINAL_ANSWER} all {STEPS} steps ran.")}],
    }));
    let script = json!({
        "final_text": format!("{FELL_THROUGH}: a scripted turn did not match what Pi sent."),
        "turns": turns,
    });
    serde_json::to_string_pretty(&script).unwrap()
}

/// One turn: `text`, then a `bash` call of `command`, played once the last tool result
/// contains `waits_for` (at once when `None`).
fn turn(text: &str, command: &str, waits_for: Option<&str>) -> Value {
    let content = json!([
        {"type": "text", "text": text},
        {"type": "tool_use", "name": "bash", "input": {"command": command}},
    ]);
    match waits_for {
        None => json!({"content": content}),
        Some(marker) => json!({"when": {"last_tool_result_contains": marker}, "content": content}),
    }
}

/// The last line of step `step`'s large output.
fn run_end(step: usize) -> String {
    format!("end of step {step:02} of {STEPS}")
}

/// The output of step `step`'s check.
fn check_line(step: usize) -> String {
    format!("step {step:02} checked")
}

#[test]
fn each_call_waits_for_the_previous_result() {
    let script: Value = serde_json::from_str(&script()).unwrap();
    let turns = script["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2 * STEPS + 1);
    assert!(turns[0].get("when").is_none());
    assert_eq!(
        turns[1]["when"]["last_tool_result_contains"],
        "end of step 01 of 18"
    );
    assert_eq!(
        turns[2]["content"][1]["input"]["command"],
        "seq -f 'step 02 record %g' 1 3000; echo 'end of step 02 of 18'"
    );
    assert_eq!(
        turns[2]["when"]["last_tool_result_contains"],
        "step 01 checked"
    );
    assert_eq!(
        turns[2 * STEPS]["when"]["last_tool_result_contains"],
        "step 18 checked"
    );
}
