//! The dreamer's recorded runs as `dream --list` and `status` show them.
//!
//! One line per run, newest first: when, the task, the project by its folder, the outcome,
//! the memory changes, the model calls, tokens and list-price cost, and why it failed or
//! was skipped. The JSON form (RUN) is `id`, `task`, `project`, `project_folder` (or null),
//! `started_ms`, `finished_ms`, `outcome` (`done`, `failed`, `skipped`), `model`,
//! `model_calls`, `input_tokens`, `output_tokens`, `cost_usd`, `changes`, `failure_class`,
//! `provider_error`, `detail`.

use mc_store::DreamerRun;
use serde_json::{Value, json};

use crate::status_cmd::age;
use crate::status_viewpoint::Viewpoint;

/// The runs as lines under a heading; a line saying there are none when there are none.
pub fn runs_text(runs: &[DreamerRun], view: &Viewpoint) -> String {
    if runs.is_empty() {
        return "dreamer: no runs recorded yet (`magic-context dream` runs one now)\n".to_owned();
    }
    let mut out = String::from("dreamer runs, newest first:\n");
    for run in runs {
        let why = run
            .failure_class
            .as_deref()
            .map(|class| format!(" [{class}]"))
            .unwrap_or_default();
        out.push_str(&format!(
            "  {} {} on {}: {}{why}, {} changes, {} calls, {} in / {} out tokens, ${:.4}{}\n",
            age(view.now_ms, run.started_ms),
            run.task,
            view.project_name(&run.project),
            run.outcome.as_str(),
            run.changes,
            run.model_calls,
            run.input_tokens,
            run.output_tokens,
            run.cost_usd,
            run.detail
                .as_deref()
                .filter(|detail| !detail.is_empty())
                .map(|detail| format!(" ({detail})"))
                .unwrap_or_default(),
        ));
    }
    out
}

/// One run as JSON (RUN in the module docs).
pub fn run_json(run: &DreamerRun, view: &Viewpoint) -> Value {
    json!({
        "id": run.id,
        "task": run.task,
        "project": run.project.as_str(),
        "project_folder": view.folder(&run.project),
        "started_ms": run.started_ms,
        "finished_ms": run.finished_ms,
        "outcome": run.outcome.as_str(),
        "model": run.model,
        "model_calls": run.model_calls,
        "input_tokens": run.input_tokens,
        "output_tokens": run.output_tokens,
        "cost_usd": run.cost_usd,
        "changes": run.changes,
        "failure_class": run.failure_class,
        "provider_error": run.provider_error,
        "detail": run.detail,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use mc_core::ProjectId;
    use mc_store::RunOutcome;

    use super::*;

    #[test]
    fn runs_read_as_one_line_each_naming_the_folder() {
        let project = ProjectId::new("git:abc").unwrap();
        let view = Viewpoint {
            now_ms: 7_200_000,
            here: None,
            folders: HashMap::from([(project.clone(), "/src/shop".to_owned())]),
        };
        let run = DreamerRun {
            id: 3,
            task: "verify_memories".into(),
            project,
            started_ms: 0,
            finished_ms: 1_000,
            outcome: RunOutcome::Failed,
            model: Some("claude-haiku-4-5".into()),
            model_calls: 1,
            input_tokens: 1_200,
            output_tokens: 80,
            cost_usd: 0.0016,
            changes: 0,
            failure_class: Some("rate_limited".into()),
            provider_error: Some("HTTP 429: slow down".into()),
            detail: Some("3 candidates".into()),
        };
        assert_eq!(
            runs_text(std::slice::from_ref(&run), &view),
            "dreamer runs, newest first:\n  2h ago verify_memories on /src/shop: failed \
             [rate_limited], 0 changes, 1 calls, 1200 in / 80 out tokens, $0.0016 (3 candidates)\n"
        );
        assert_eq!(run_json(&run, &view)["project_folder"], "/src/shop");
        assert!(runs_text(&[], &view).contains("no runs recorded yet"));
    }
}
