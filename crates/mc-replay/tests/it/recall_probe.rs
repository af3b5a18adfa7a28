//! `bench recall-dropped`'s hybrid figures: each query asked a second time with a semantic
//! signal over the store `magic` wrote, at the same step.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use mc_engine::search::{Found, SearchError, SemanticSearch};
use mc_replay::{RecallDropped, ReplayOptions, SemanticProbe, SharedSemanticProbe, replay};
use mc_sim::strategy::StrategyKind;
use mc_store::SearchScope;

use crate::shared_data;

/// A semantic signal that finds nothing: fused with it, full text ranks as it does alone.
struct Silent;

impl SemanticSearch for Silent {
    fn nearest(&self, _: &str, _: &SearchScope, _: usize) -> Result<Found, SearchError> {
        Ok(Found::default())
    }
}

/// Answers with [`Silent`], or with no signal at all (a model that failed); records the
/// stores it was asked about.
struct Probe {
    failing: bool,
    asked_about: Vec<PathBuf>,
}

impl SemanticProbe for Probe {
    fn signal(&mut self, path: &Path) -> Option<&dyn SemanticSearch> {
        assert!(path.is_file(), "the probe is given the engine's store file");
        self.asked_about.push(path.to_path_buf());
        (!self.failing).then_some(&Silent as &dyn SemanticSearch)
    }
}

fn probed(failing: bool) -> (RecallDropped, Vec<PathBuf>) {
    let probe = Arc::new(Mutex::new(Probe {
        failing,
        asked_about: Vec::new(),
    }));
    let shared: Arc<Mutex<dyn SemanticProbe>> = probe.clone();
    let options = ReplayOptions {
        window_tokens: Some(64_000),
        strategies: vec![StrategyKind::Magic],
        probe_recall: true,
        probe_semantic: Some(SharedSemanticProbe(shared)),
        ..ReplayOptions::default()
    };
    let report = replay(&[shared_data::trajectory("django__django-15629")], &options).unwrap();
    let figures = report.runs[0].recall_dropped.clone().unwrap();
    let asked_about = probe.lock().unwrap().asked_about.clone();
    (figures, asked_about)
}

#[test]
fn a_signal_that_adds_nothing_ranks_as_full_text_alone() {
    let (figures, asked_about) = probed(false);
    let hybrid = figures.hybrid.clone().expect("hybrid figures with a probe");
    assert!(figures.by_identifier.asked >= 10, "{figures:?}");
    assert_eq!(hybrid.by_identifier.asked, figures.by_identifier.asked);
    assert_eq!(
        hybrid.by_identifier.recall_at_5,
        figures.by_identifier.recall_at_5
    );
    assert_eq!(hybrid.by_identifier.mrr, figures.by_identifier.mrr);
    assert_eq!(hybrid.by_sentence.mrr, figures.by_sentence.mrr);
    assert!(!asked_about.is_empty());
    let recording = &figures.per_recording[0];
    assert_eq!(
        recording
            .hybrid
            .as_ref()
            .map(|hybrid| hybrid.by_identifier.asked),
        Some(recording.by_identifier.asked)
    );
}

#[test]
fn a_failed_model_finds_nothing_and_full_text_is_unchanged() {
    let (figures, _) = probed(true);
    let hybrid = figures.hybrid.clone().expect("hybrid figures with a probe");
    assert_eq!(hybrid.by_identifier.asked, figures.by_identifier.asked);
    assert_eq!(hybrid.by_identifier.recall_at_5, 0.0);
    assert!(figures.by_identifier.recall_at_5 > 0.5, "{figures:?}");
}
