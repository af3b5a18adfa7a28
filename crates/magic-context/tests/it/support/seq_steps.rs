//! The scratch repository and the script of the small-window sessions of real clients:
//! step `n` has the client's shell tool print a run of numbers with `seq`, once the output
//! of step `n − 1` came back whole.
//!
//! Each step prints a range no other step shares, so no output duplicates another and only
//! the window fit keeps a session inside the window. The steps are built for any client:
//! the caller says how its shell tool is named and takes a command.

use std::path::Path;

use super::git_repo::commit_all;
use serde_json::{Value, json};

/// The script's last turn starts with this.
pub const FINAL_ANSWER: &str = "FINAL-ANSWER:";
/// What the script answers when no turn matched (its `final_text`).
pub const FELL_THROUGH: &str = "SCRIPT-FELL-THROUGH";

/// A run of `steps` steps, each printing `span + 1` numbers.
#[derive(Debug, Clone, Copy)]
pub struct SeqSteps {
    pub steps: usize,
    pub span: usize,
}

impl SeqSteps {
    /// The first and last number step `step` prints.
    fn range(self, step: usize) -> (usize, usize) {
        let first = step * 100_000;
        (first, first + self.span)
    }

    /// The script's JSON: step 1 at once, step `n` once the last tool result holds step
    /// `n − 1`'s last number (only its whole output does), the final answer after the last
    /// step. `call(command)` is the client's shell tool call: its name and input.
    pub fn script(self, call: impl Fn(&str, usize) -> (&'static str, Value)) -> String {
        let mut turns: Vec<Value> = (1..=self.steps)
            .map(|step| {
                let (first, last) = self.range(step);
                let (name, input) = call(&format!("seq {first} {last}"), step);
                let content = json!([
                    {"type": "text", "text": format!("Step {step}: printing its numbers.")},
                    {"type": "tool_use", "name": name, "input": input},
                ]);
                match step {
                    1 => json!({"content": content}),
                    _ => json!({
                        "when": {"last_tool_result_contains": self.range(step - 1).1.to_string()},
                        "content": content,
                    }),
                }
            })
            .collect();
        turns.push(json!({
            "when": {"last_tool_result_contains": self.range(self.steps).1.to_string()},
            "content": [{"type": "text", "text": format!("{FINAL_ANSWER} all {} steps ran.", self.steps)}],
        }));
        let script = json!({
            "final_text": format!("{FELL_THROUGH}: a scripted turn did not match what the client sent."),
            "turns": turns,
        });
        serde_json::to_string_pretty(&script).unwrap()
    }
}

/// A git repository with one commit, as the proxy's project identity expects.
pub fn create_repo(repo: &Path) {
    std::fs::create_dir_all(repo).unwrap();
    std::fs::write(repo.join("README.md"), "# steps\n").unwrap();
    commit_all(repo);
}
