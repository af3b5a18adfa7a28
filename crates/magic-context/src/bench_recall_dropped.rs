//! `magic-context bench recall-dropped`: what `ctx_search` finds of what `magic`'s requests
//! no longer held, on recorded sessions ([`mc_replay::recall_dropped`]), with full text and,
//! given an embedding model, hybrid.

use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use mc_replay::{
    EmbeddedProbe, QueryFigures, RecallDropped, ReplayOptions, SemanticProbe, SharedSemanticProbe,
    replay,
};
use mc_sim::strategy::StrategyKind;

use crate::output::{pretty, write_stdout};

/// Replays the recordings at `path` with `magic` (at `window` tokens, else each model's) and
/// prints what search found wherever a request missed what its answer used; with
/// `model_dir`, each query is also asked with the local model's semantic signal added.
pub fn run(
    path: &Path,
    window: Option<u64>,
    model_dir: Option<&Path>,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let recordings = mc_sim::recording::load(path, None)
        .with_context(|| format!("cannot load recordings from {}", path.display()))?;
    let loaded = mc_config::load(&mc_config::ConfigSources::discover(None));
    let probe_semantic = match model_dir {
        Some(dir) => {
            let probe: Arc<Mutex<dyn SemanticProbe>> =
                Arc::new(Mutex::new(EmbeddedProbe::local(dir)?));
            Some(SharedSemanticProbe(probe))
        }
        None => None,
    };
    let options = ReplayOptions {
        window_tokens: window,
        strategies: vec![StrategyKind::Magic],
        probe_recall: true,
        probe_semantic,
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
        "search for what magic's requests missed (any message that showed it)\n| recording | query | asked | recall@1 | recall@5 | MRR | p95 ms |\n|---|---|---|---|---|---|---|\n",
    );
    let recordings = figures.per_recording.iter().map(|recording| {
        (
            recording.name.as_str(),
            &recording.by_identifier,
            &recording.by_sentence,
            recording.hybrid.as_ref(),
        )
    });
    let all = std::iter::once((
        "all",
        &figures.by_identifier,
        &figures.by_sentence,
        figures.hybrid.as_ref(),
    ));
    for (name, by_identifier, by_sentence, hybrid) in recordings.chain(all) {
        out.push_str(&row(name, "identifier", by_identifier));
        out.push_str(&row(name, "sentence", by_sentence));
        if let Some(hybrid) = hybrid {
            out.push_str(&row(name, "identifier, hybrid", &hybrid.by_identifier));
            out.push_str(&row(name, "sentence, hybrid", &hybrid.by_sentence));
        }
    }
    out
}
