//! Unified search: one query over project memories, the raw message log, compartments, the
//! agent's notes and the project's commits,
//! full-text and (when an embedding model is configured) semantic, fused into one ranking.
//!
//! This is the one search path: `magic-context search`, the agent's `ctx_search` and the
//! recall benchmark all call [`search`], so what the benchmark measures is what the agent
//! gets. Hits the asking session already sees (its raw tail) are hidden: a search that
//! answers with what is on screen wastes the agent's window. Memories other projects of the
//! asker's workspaces share with it ([`SearchRequest::shared`]) are searched beside the
//! project's own, in the shared categories only, and come back marked with their project.

mod centre;
mod date_bound;
mod embedding;
mod hit;
mod neighbours;
mod preview;
mod query_vectors;
mod retrievals;
mod vector_index;

use std::collections::HashMap;

use mc_core::search::{
    Candidate, FusionWeights, Lead, QueryError, Signal, Source, fts_query, fuse,
};
use mc_core::workspace::SharedSource;
use mc_core::{ContentHash, ProjectId, SessionId};
use mc_store::{Commit, KnowledgeSource, ReadTx, SearchScope, Store, StoreError};

pub use date_bound::{DayEnd, date_bound_ms};
pub use embedding::{
    DEFAULT_MODEL_DIR, EMBED_BATCH, EmbeddedSearch, EmbeddingError, embed_pending,
    embedding_settings,
};
pub use hit::{HitPlace, SearchHit};
pub use retrievals::record_retrieved_memories;
pub use vector_index::VectorIndex;

/// Candidates fetched per source and signal before fusion, at least.
const MIN_POOL: u32 = 50;

/// The largest number of results one search returns.
pub const MAX_LIMIT: usize = 100;

/// The longest query, in characters: a question or a pasted error line, not a file (only
/// its first words would count, and embedding it whole would take seconds).
pub const MAX_QUERY_CHARS: usize = 4_000;

/// What to search.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchRequest {
    /// What the user or the agent typed.
    pub query: String,
    /// Which project, session and time window to search.
    pub scope: SearchScope,
    /// The session asking: what its live context shows is left out.
    pub viewer: Option<SessionId>,
    /// How many results, 1 to [`MAX_LIMIT`].
    pub limit: usize,
    /// The projects whose memories the scope's project reads through its workspaces
    /// ([`mc_core::workspace::Workspaces::shared_with`]); empty searches its own only.
    pub shared: Vec<SharedSource>,
    /// Where project knowledge is read: the local tables, or a team store's cache
    /// ([`crate::Engine::knowledge_source`]).
    pub knowledge: KnowledgeSource,
}

/// Which item of the store a hit is: the key both signals agree on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ItemKey {
    /// A message, by content hash: a fork's copy of a message is the same item.
    Message(ContentHash),
    /// A compartment, by session and first ordinal.
    Compartment(SessionId, u64),
    /// A memory, by id.
    Memory(u64),
    /// A git commit of the project, by hash.
    Commit(String),
    /// An agent note of the project, by id.
    Note(u64),
}

/// A message found by a signal, with where it lives.
#[derive(Debug, Clone, PartialEq)]
pub struct MessagePlace {
    /// Its session.
    pub session: SessionId,
    /// Its ordinal.
    pub ordinal: u64,
    /// When it was stored.
    pub created_ms: i64,
}

/// What one signal found: ranked candidates, and where the messages among them live.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Found {
    /// The candidates, each with its signal's raw score.
    pub candidates: Vec<Candidate<ItemKey>>,
    /// The place of each message candidate, by content hash.
    pub places: HashMap<ContentHash, MessagePlace>,
    /// The commits among the candidates, by hash.
    pub commits: HashMap<String, Commit>,
}

/// The semantic signal: items nearest a query by embedding. Implemented over stored
/// vectors; absent when no embedding model is configured (full-text only).
pub trait SemanticSearch {
    /// Up to `limit` items per source nearest `query` within `scope`, each with its cosine
    /// similarity as the candidate score, and the places of the messages among them.
    fn nearest(&self, query: &str, scope: &SearchScope, limit: usize)
    -> Result<Found, SearchError>;
}

/// Why a search could not run.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// The query has nothing to search for.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// The query is longer than [`MAX_QUERY_CHARS`].
    #[error(
        "the query is {0} characters; search takes at most {MAX_QUERY_CHARS}: keep the words that matter (a name, an error line)"
    )]
    TooLong(usize),
    /// The limit is out of range.
    #[error("the limit must be between 1 and {MAX_LIMIT}, not {0}")]
    Limit(usize),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The embedding model failed; full-text results are still possible without it.
    #[error("semantic search failed: {0}")]
    Semantic(String),
}

/// Runs `request` against the store, with the semantic signal when one is given.
pub fn search(
    store: &Store,
    request: &SearchRequest,
    semantic: Option<&dyn SemanticSearch>,
    weights: &FusionWeights,
) -> Result<Vec<SearchHit>, SearchError> {
    if request.limit == 0 || request.limit > MAX_LIMIT {
        return Err(SearchError::Limit(request.limit));
    }
    let chars = request.query.chars().count();
    if chars > MAX_QUERY_CHARS {
        return Err(SearchError::TooLong(chars));
    }
    let query = fts_query(&request.query)?;
    // Messages are indexed after the pass that stored them: the rows not indexed yet are
    // indexed now, so every stored message can be found.
    store.index_pending_messages()?;
    let pool = MIN_POOL.max(4 * request.limit as u32);
    let mut found = store.read(|tx| full_text(tx, &query, request, pool))?;
    // A query that names something (`self.do_query`, a sentence around `card_parser.py`)
    // asks where that name was written, and the store ranks the messages writing it first;
    // a neighbour's share would lift the messages around them above the ones that write
    // it (`bench recall-dropped` on the swe set at 64K, by identifier: recall@1 0.746 to
    // 0.906, recall@5 0.960 to 0.982; LoCoMo, whose questions name little, unchanged).
    if !query.names_something() {
        neighbours::lend_to_neighbours(&mut found, Signal::FullText, weights.neighbour_full_text);
    }
    if let Some(semantic) = semantic {
        let mut near = semantic.nearest(&request.query, &request.scope, pool as usize)?;
        for source in &request.shared {
            let scope = SearchScope {
                project: Some(source.project.clone()),
                ..request.scope.clone()
            };
            let shared = semantic.nearest(&request.query, &scope, pool as usize)?;
            near.candidates.extend(
                shared
                    .candidates
                    .into_iter()
                    .filter(|candidate| candidate.source == Source::Memory),
            );
        }
        // Vectors are kept for the local memory table only: with a team store a memory's id
        // is the team's, and a local vector's id would name another memory.
        if request.knowledge != KnowledgeSource::Local {
            near.candidates
                .retain(|candidate| candidate.source != Source::Memory);
        }
        neighbours::lend_to_neighbours(&mut near, Signal::Semantic, weights.neighbour_semantic);
        found.candidates.extend(near.candidates);
        for (hash, place) in near.places {
            found.places.entry(hash).or_insert(place);
        }
        found.commits.extend(near.commits);
    }
    // A query that names something is a lexical one: the messages writing the name lead
    // and meaning adds what full text did not find ([`Lead::FullText`]).
    let lead = if query.names_something() {
        Lead::FullText
    } else {
        Lead::Fused
    };
    let fused = fuse(&found.candidates, weights, lead);
    store
        .read(|tx| hit::materialise(tx, request, &fused, &found))
        .map_err(SearchError::from)
}

fn full_text(
    tx: &ReadTx<'_>,
    query: &mc_core::search::FtsQuery,
    request: &SearchRequest,
    pool: u32,
) -> mc_store::Result<Found> {
    let mut candidates = Vec::new();
    let mut places: HashMap<ContentHash, MessagePlace> = HashMap::new();
    for hit in tx.search_messages(query, &request.scope, pool)? {
        let mine = request.viewer.as_ref() == Some(&hit.session);
        let place = MessagePlace {
            session: hit.session,
            ordinal: hit.ordinal,
            created_ms: hit.created_ms,
        };
        // A fork's copies share a hash; the asking session's own copy is the place to show.
        match places.get(&hit.hash) {
            Some(_) if !mine => {}
            _ => {
                places.insert(hit.hash, place);
            }
        }
        candidates.push(Candidate {
            key: ItemKey::Message(hit.hash),
            source: Source::Message,
            signal: Signal::FullText,
            score: hit.score,
        });
    }
    for hit in tx.search_compartments(query, &request.scope, pool)? {
        candidates.push(Candidate {
            key: ItemKey::Compartment(hit.session, hit.start_ordinal),
            source: Source::Compartment,
            signal: Signal::FullText,
            score: hit.score,
        });
    }
    let mut commits = HashMap::new();
    if let Some(project) = &request.scope.project {
        let projects =
            std::iter::once(project).chain(request.shared.iter().map(|source| &source.project));
        let hits = tx.with_knowledge(request.knowledge, |knowledge| {
            let mut hits = Vec::new();
            for project in projects {
                hits.extend(knowledge.search_memories(query, project, &request.scope, pool)?);
            }
            Ok::<_, StoreError>(hits)
        })?;
        for hit in hits {
            candidates.push(Candidate {
                key: ItemKey::Memory(hit.id),
                source: Source::Memory,
                signal: Signal::FullText,
                score: hit.score,
            });
        }
        for hit in tx.search_notes(query, project, &request.scope, pool)? {
            candidates.push(Candidate {
                key: ItemKey::Note(hit.id),
                source: Source::Note,
                signal: Signal::FullText,
                score: hit.score,
            });
        }
        for hit in tx.search_commits(query, project, &request.scope, pool)? {
            candidates.push(Candidate {
                key: ItemKey::Commit(hit.commit.sha.clone()),
                source: Source::Commit,
                signal: Signal::FullText,
                score: hit.score,
            });
            commits.insert(hit.commit.sha.clone(), hit.commit);
        }
    }
    Ok(Found {
        candidates,
        places,
        commits,
    })
}

/// The project a memory hit must belong to; memories are only searched within one.
pub(crate) fn memory_project(request: &SearchRequest) -> Option<&ProjectId> {
    request.scope.project.as_ref()
}
