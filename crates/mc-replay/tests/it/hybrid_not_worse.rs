//! On a name the agent lost, hybrid search finds it no worse than full text alone: the
//! messages writing the name lead, and the semantic signal adds what full text did not find
//! instead of re-ranking what it did (`bench recall-dropped` on the unit recording).

use std::path::Path;
use std::sync::{Arc, Mutex};

use mc_embed::to_blob;
use mc_engine::search::{Found, SearchError, SemanticSearch, VectorIndex};
use mc_replay::{
    QueryFigures, RecallDropped, ReplayOptions, SemanticProbe, SharedSemanticProbe, replay,
};
use mc_sim::strategy::StrategyKind;
use mc_store::{SearchScope, Store};

use crate::shared_data;

const MODEL: &str = "test:blake3-16";

/// A model that knows nothing of names: each text's vector is drawn from its hash, so
/// similarities are high or low at random, as a small model's are for `self.do_query`.
fn vector_of(text: &str) -> Vec<f32> {
    let hash = blake3::hash(text.as_bytes());
    let raw: Vec<f32> = hash.as_bytes()[..16]
        .iter()
        .map(|&byte| f32::from(byte) - 127.5)
        .collect();
    let norm = raw.iter().map(|x| x * x).sum::<f32>().sqrt();
    raw.iter().map(|x| x / norm).collect()
}

/// The hashed model's signal over the store `magic` writes, every stored item embedded
/// before each query.
struct Hashed {
    store: Option<Store>,
}

impl SemanticSearch for Hashed {
    fn nearest(
        &self,
        query: &str,
        scope: &SearchScope,
        limit: usize,
    ) -> Result<Found, SearchError> {
        let store = self.store.as_ref().unwrap();
        let mut index = VectorIndex::new(MODEL);
        index.refresh(store)?;
        Ok(index.nearest(&vector_of(query), scope, limit))
    }
}

impl SemanticProbe for Hashed {
    fn signal(&mut self, path: &Path) -> Option<&dyn SemanticSearch> {
        let store = Store::open(path).unwrap();
        loop {
            let batch = store.write(|tx| tx.items_to_embed(MODEL, 64)).unwrap();
            if batch.items.is_empty() && batch.messages_through.is_none() {
                break;
            }
            let rows: Vec<_> = batch
                .items
                .into_iter()
                .map(|item| {
                    let blob = to_blob(&vector_of(&item.text));
                    (item, blob)
                })
                .collect();
            store
                .write(|tx| tx.store_vectors(MODEL, &rows, batch.messages_through))
                .unwrap();
        }
        self.store = Some(store);
        Some(self as &dyn SemanticSearch)
    }
}

fn probed(probe: Arc<Mutex<dyn SemanticProbe>>) -> RecallDropped {
    let options = ReplayOptions {
        window_tokens: Some(64_000),
        strategies: vec![StrategyKind::Magic],
        probe_recall: true,
        probe_semantic: Some(SharedSemanticProbe(probe)),
        ..ReplayOptions::default()
    };
    let report = replay(&[shared_data::trajectory("django__django-15629")], &options).unwrap();
    report.runs[0].recall_dropped.clone().unwrap()
}

fn assert_no_worse(hybrid: &QueryFigures, full_text: &QueryFigures, kind: &str) {
    assert_eq!(hybrid.asked, full_text.asked, "{kind}");
    assert!(
        hybrid.recall_at_1 >= full_text.recall_at_1
            && hybrid.recall_at_5 >= full_text.recall_at_5
            && hybrid.mrr >= full_text.mrr,
        "by {kind}: hybrid {hybrid:?} is worse than full text {full_text:?}"
    );
}

fn assert_hybrid_no_worse(figures: &RecallDropped) {
    let hybrid = figures
        .hybrid
        .as_ref()
        .expect("hybrid figures with a probe");
    assert!(figures.by_identifier.asked >= 10, "{figures:?}");
    assert_no_worse(&hybrid.by_identifier, &figures.by_identifier, "identifier");
    assert_no_worse(&hybrid.by_sentence, &figures.by_sentence, "sentence");
}

#[test]
fn a_model_that_knows_no_names_does_not_push_a_written_name_down() {
    assert_hybrid_no_worse(&probed(Arc::new(Mutex::new(Hashed { store: None }))));
}

/// The same with all-MiniLM-L6-v2 from `MC_MINILM_DIR` (`.ci/run` fetches it).
#[cfg(feature = "local-embeddings")]
#[test]
fn with_the_local_model_hybrid_finds_lost_names_no_worse_than_full_text() {
    let dir = std::env::var_os("MC_MINILM_DIR")
        .expect("MC_MINILM_DIR names the all-MiniLM-L6-v2 model directory");
    let probe = mc_replay::EmbeddedProbe::local(Path::new(&dir)).unwrap();
    assert_hybrid_no_worse(&probed(Arc::new(Mutex::new(probe))));
}
