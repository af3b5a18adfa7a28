//! `magic-context bench recall-dropped`: what `ctx_search` finds of what `magic`'s requests
//! no longer held, on recorded sessions ([`mc_replay::recall_dropped`]).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use mc_replay::{QueryFigures, RecallDropped, ReplayOptions, replay};
use mc_sim::strategy::StrategyKind;

use crate::output::{pretty, write_stdout};

/// Replays the recordings at `path` with `magic` (at `window` tokens, else each model's) and
/// prints what search found wherever a request missed what its answer used.
pub fn run(path: &Path, window: Option<u64>, as_json: bool) -> anyhow::Result<ExitCode> {
    let recordings = mc_sim::recording::load(path, None)
        .with_context(|| format!("cannot load recordings from {}", path.display()))?;
    let loaded = mc_config::load(&mc_config::ConfigSources::discover(None));
    let options = ReplayOptions {
        window_tokens: window,
        strategies: vec![StrategyKind::Magic],
        probe_recall: true,
        engine_config: loaded.config,
        ..ReplayOptions::default()
    };
    let report = replay(&recordings, &options).context("replay failed")?;
    let figures = report
        .runs
        .iter()
        .find_map(|run| run.recall_dropped.clone())
        .unwrap_or_default();
    let text = if as_json {
        pretty(&serde_json::to_value(&figures).context("cannot format the report")?)?
    } else {
        as_table(&figures)
    };
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

fn as_table(figures: &RecallDropped) -> String {
    let row = |name: &str, query: &str, figures: &QueryFigures| {
        format!(
            "| {name} | {query} | {} | {:.3} | {:.3} | {:.3} | {:.2} |\n",
            figures.asked, figures.recall_at_1, figures.recall_at_5, figures.mrr, figures.p95_ms
        )
    };
    let mut out = String::from(
        "full-text search for what magic's requests missed (the message that first showed it)\n| recording | query | asked | recall@1 | recall@5 | MRR | p95 ms |\n|---|---|---|---|---|---|---|\n",
    );
    for recording in &figures.per_recording {
        out.push_str(&row(
            &recording.name,
            "identifier",
            &recording.by_identifier,
        ));
        out.push_str(&row(&recording.name, "sentence", &recording.by_sentence));
    }
    out.push_str(&row("all", "identifier", &figures.by_identifier));
    out.push_str(&row("all", "sentence", &figures.by_sentence));
    out
}
