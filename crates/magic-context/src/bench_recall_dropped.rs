//! `magic-context bench recall-dropped`: what `ctx_search` finds of what `magic`'s requests
//! no longer held, on recorded sessions ([`mc_replay::recall_dropped`]), with full text and,
//! given an embedding model, hybrid.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::{Context, anyhow};
use mc_embed::{Embedder, EmbeddingProvider, EmbeddingSettings};
use mc_engine::search::{EmbeddedSearch, SemanticSearch, embed_pending};
use mc_replay::{
    QueryFigures, RecallDropped, ReplayOptions, SemanticProbe, SharedSemanticProbe, replay,
};
use mc_sim::strategy::StrategyKind;
use mc_store::Store;

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
            let probe: Arc<Mutex<dyn SemanticProbe>> = Arc::new(Mutex::new(LocalProbe::new(dir)?));
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

/// The local model's semantic signal over the store of the recording being replayed: the
/// store is opened beside the engine's own handle, and everything stored since the last
/// query is embedded before the next.
struct LocalProbe {
    runtime: tokio::runtime::Runtime,
    embedder: Embedder,
    over: Option<(PathBuf, Arc<Store>, EmbeddedSearch)>,
}

impl LocalProbe {
    fn new(model_dir: &Path) -> anyhow::Result<Self> {
        let settings = EmbeddingSettings {
            provider: EmbeddingProvider::Local {
                model_dir: model_dir.to_path_buf(),
            },
        };
        let embedder = Embedder::from_settings(&settings)
            .context("cannot load the embedding model")?
            .ok_or_else(|| anyhow!("no embedding model in {}", model_dir.display()))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        Ok(Self {
            runtime,
            embedder,
            over: None,
        })
    }
}

impl SemanticProbe for LocalProbe {
    fn signal(&mut self, path: &Path) -> Option<&dyn SemanticSearch> {
        if self.over.as_ref().is_none_or(|(open, ..)| open != path) {
            self.over = None;
            let store = Arc::new(Store::open(path).ok()?);
            let search = EmbeddedSearch::new(
                self.embedder.clone(),
                Arc::clone(&store),
                self.runtime.handle().clone(),
            );
            self.over = Some((path.to_path_buf(), store, search));
        }
        let (_, store, search) = self.over.as_ref()?;
        self.runtime
            .block_on(embed_pending(Arc::clone(store), &self.embedder, usize::MAX))
            .ok()?;
        Some(search)
    }
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
