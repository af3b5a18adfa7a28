//! Semantic search over stored vectors: what has no vector is handed out for embedding
//! once, a query finds by meaning what full text misses, within its project, and fuses with
//! full-text hits; what the asking session already sees stays hidden.

use mc_core::head::MemoryCategory;
use mc_core::search::FusionWeights;
use mc_core::{Host, Message, Part, ProjectId, Role, SessionId};
use mc_embed::to_blob;
use mc_engine::search::{
    Found, HitPlace, SearchError, SearchRequest, SemanticSearch, VectorIndex, search,
};
use mc_store::{KnowledgeSource, MemorySource, NewMemory, NewSession, SearchScope, Store};

const MODEL: &str = "test:4d";

/// The fake model: texts about storage point one way, everything else another.
fn vector_of(text: &str) -> Vec<f32> {
    if text.contains("disk") || text.contains("storage") {
        vec![0.0, 1.0, 0.0, 0.0]
    } else {
        vec![1.0, 0.0, 0.0, 0.0]
    }
}

struct Fixed {
    store: std::sync::Arc<Store>,
    query: Vec<f32>,
}

impl SemanticSearch for Fixed {
    fn nearest(&self, _: &str, scope: &SearchScope, limit: usize) -> Result<Found, SearchError> {
        let mut index = VectorIndex::new(MODEL);
        index.refresh(&self.store)?;
        Ok(index.nearest(&self.query, scope, limit))
    }
}

fn session(store: &Store, id: &str, project: &ProjectId, texts: &[&str]) {
    let session = SessionId::new(id).unwrap();
    let messages: Vec<Message> = texts
        .iter()
        .map(|text| Message::new(Role::User, vec![Part::text(*text)]))
        .collect();
    store
        .write(|tx| {
            tx.upsert_session(
                &NewSession {
                    id: session.clone(),
                    host: Host::ClaudeCode,
                    project: Some(project.clone()),
                },
                0,
            )?;
            tx.append_messages(&session, 0, &messages, 1_000)
        })
        .unwrap();
}

/// Embeds everything pending with the fake model; returns how many items were handed out.
fn embed_all(store: &Store) -> usize {
    let mut embedded = 0;
    loop {
        let batch = store.write(|tx| tx.items_to_embed(MODEL, 8)).unwrap();
        if batch.items.is_empty() && batch.messages_through.is_none() {
            return embedded;
        }
        embedded += batch.items.len();
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
}

#[test]
fn meaning_finds_what_words_miss_within_the_project_and_hides_what_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(Store::open(dir.path().join("context.db")).unwrap());
    let mine = ProjectId::new("git:mine").unwrap();
    let theirs = ProjectId::new("git:theirs").unwrap();
    session(
        &store,
        "a",
        &mine,
        &["the deploy failed", "the disk is full", "retrying now"],
    );
    session(&store, "b", &theirs, &["their disk is full too"]);
    let archived = store
        .write(|tx| {
            let id = tx
                .add_memory(
                    &mine,
                    &NewMemory {
                        category: MemoryCategory::Constraints,
                        content: "Keep 10 GB of disk free",
                        source: MemorySource::Operator,
                        permanent: false,
                    },
                    0,
                )?
                .id();
            Ok(id)
        })
        .unwrap();
    assert_eq!(embed_all(&store), 5, "four messages and one memory");
    assert_eq!(embed_all(&store), 0, "nothing is embedded twice");

    let semantic = Fixed {
        store: std::sync::Arc::clone(&store),
        query: vector_of("storage"),
    };
    let request = |viewer: Option<&str>| SearchRequest {
        query: "storage trouble".into(),
        scope: SearchScope {
            project: Some(mine.clone()),
            ..SearchScope::default()
        },
        viewer: viewer.map(|id| SessionId::new(id).unwrap()),
        limit: 5,
        shared: Vec::new(),
        knowledge: KnowledgeSource::Local,
    };
    let hits = search(
        &store,
        &request(None),
        Some(&semantic),
        &FusionWeights::default(),
    )
    .unwrap();
    let places: Vec<&HitPlace> = hits.iter().map(|hit| &hit.place).collect();
    assert!(
        places.contains(&&HitPlace::Messages {
            session: SessionId::new("a").unwrap(),
            start: 1,
            end: 1
        }),
        "{hits:?}"
    );
    assert!(places.contains(&&HitPlace::Memory {
        id: archived,
        category: "CONSTRAINTS".into(),
        shared_by: None,
    }));
    assert!(
        hits.iter().all(|hit| hit.semantic && !hit.full_text),
        "{hits:?}"
    );
    assert!(
        !places.iter().any(
            |place| matches!(place, HitPlace::Messages { session, .. } if session.as_str() == "b")
        ),
        "another project's message: {hits:?}"
    );
    // Asked by session a, whose raw tail holds all its messages: none of them is shown.
    let seen = search(
        &store,
        &request(Some("a")),
        Some(&semantic),
        &FusionWeights::default(),
    )
    .unwrap();
    assert!(
        seen.iter()
            .all(|hit| !matches!(hit.place, HitPlace::Messages { .. })),
        "session a sees all its raw messages: {seen:?}"
    );

    // An archived memory is no longer found by meaning.
    store
        .write(|tx| tx.archive_memory(&mine, archived, MemorySource::Operator, 1))
        .unwrap();
    let hits = search(
        &store,
        &request(None),
        Some(&semantic),
        &FusionWeights::default(),
    )
    .unwrap();
    assert!(
        hits.iter()
            .all(|hit| !matches!(hit.place, HitPlace::Memory { .. })),
        "{hits:?}"
    );
}

/// The real local model end to end: rows embedded in the background task, a query that
/// shares no word with its answer finds it by meaning and ranks it first.
#[cfg(feature = "local-embeddings")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_model_finds_an_answer_that_shares_no_word_with_the_question() {
    use mc_embed::{Embedder, EmbeddingProvider, EmbeddingSettings};
    use mc_engine::search::{EmbeddedSearch, embed_pending};

    let Some(model_dir) = std::env::var_os("MC_MINILM_DIR") else {
        panic!(
            "MC_MINILM_DIR must name the all-MiniLM-L6-v2 files (see .ci/run for how to fetch them)"
        );
    };
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(Store::open(dir.path().join("context.db")).unwrap());
    let project = ProjectId::new("git:mine").unwrap();
    session(
        &store,
        "a",
        &project,
        &[
            "It will rain in Paris on Sunday, bring an umbrella.",
            "The parser rejects trailing commas in arrays.",
            "Renamed the ledger writer module.",
        ],
    );
    let embedder = Embedder::from_settings(&EmbeddingSettings {
        provider: EmbeddingProvider::Local {
            model_dir: model_dir.into(),
        },
    })
    .unwrap()
    .unwrap();
    let embedded = embed_pending(std::sync::Arc::clone(&store), &embedder, 10)
        .await
        .unwrap();
    assert_eq!(embedded, 3);
    let handle = tokio::runtime::Handle::current();
    let hits = tokio::task::spawn_blocking(move || {
        let semantic = EmbeddedSearch::new(embedder, std::sync::Arc::clone(&store), handle);
        let request = SearchRequest {
            query: "weather forecast for the weekend".into(),
            scope: SearchScope {
                project: Some(project),
                ..SearchScope::default()
            },
            viewer: None,
            limit: 3,
            shared: Vec::new(),
            knowledge: KnowledgeSource::Local,
        };
        search(&store, &request, Some(&semantic), &FusionWeights::default()).unwrap()
    })
    .await
    .unwrap();
    assert_eq!(
        hits[0].place,
        HitPlace::Messages {
            session: SessionId::new("a").unwrap(),
            start: 0,
            end: 0
        },
        "{hits:?}"
    );
    assert!(hits[0].semantic && !hits[0].full_text);
}
