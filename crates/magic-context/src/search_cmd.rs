//! `magic-context search`: the operator runs the agent's search over a project's memories,
//! notes, raw message log, compartments and git commits (the commits of the project's HEAD,
//! read from git on each search).
//!
//! `--json` prints `{"query", "project", "results": [HIT, …]}` best first, where HIT is
//! `source` (memory, message, compartment, note, commit), `place` (`{"kind": "messages",
//! "session", "start", "end"}`, `{"kind": "memory", "id", "category"}` (with `"shared_by"`,
//! the owner's root, for a memory another project of the user's workspaces shares),
//! `{"kind": "note", "id"}` or `{"kind": "commit", "sha", "author"}`), `at_ms`, `score`,
//! `full_text`, `semantic` and `preview`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, anyhow};
use clap::Args;
use mc_config::{ConfigSources, load};
use mc_core::search::FusionWeights;
use mc_core::{ProjectId, SessionId};
use mc_embed::Embedder;
use mc_engine::search::{
    DayEnd, EmbeddedSearch, MAX_LIMIT, SearchHit, SearchRequest, SemanticSearch, date_bound_ms,
    embedding_settings, record_retrieved_memories, search,
};
use mc_store::{
    KnowledgeSource, LocationEnv, Platform, SearchScope, Store, StoreOptions, resolve_data_dir,
};
use serde_json::json;

use crate::clock::now_ms;
use crate::memory_cmd::project_of;
use crate::output::{pretty, write_stdout};
use crate::workspace_members::configured_workspaces;

/// Arguments of `search`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// What to look for, in plain words (query syntax is searched as text).
    pub query: String,

    /// A directory of the project [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,

    /// Only this session's messages and compartments.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,

    /// Only what happened on or after this date (YYYY-MM-DD, UTC) or time (RFC 3339).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,

    /// Only what happened on or before this date (YYYY-MM-DD, UTC) or before this time.
    #[arg(long, value_name = "DATE")]
    pub until: Option<String>,

    /// How many results, 1 to 100.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub limit: usize,

    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs the search and prints the results.
pub fn run(args: &SearchArgs) -> anyhow::Result<ExitCode> {
    if args.limit == 0 || args.limit > MAX_LIMIT {
        return Err(anyhow!("--limit must be between 1 and {MAX_LIMIT}"));
    }
    let directory = match &args.project {
        Some(directory) => directory.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let project = project_of(&directory)?;
    let session = args
        .session
        .as_deref()
        .map(SessionId::new)
        .transpose()
        .map_err(|err| anyhow!("--session: {err}"))?;
    let since_ms = args
        .since
        .as_deref()
        .map(|text| date_bound_ms(text, DayEnd::Start).map_err(|err| anyhow!(err)))
        .transpose()?;
    let until_ms = args
        .until
        .as_deref()
        .map(|text| date_bound_ms(text, DayEnd::After).map_err(|err| anyhow!(err)))
        .transpose()?;
    let location = resolve_data_dir(&LocationEnv::from_process(), Platform::current())
        .context("cannot find the data directory")?;
    let store = Arc::new(
        Store::open_location(&location, StoreOptions::default())
            .with_context(|| format!("cannot open the store {}", location.db_path().display()))?,
    );
    index_commits(&store, &project, &directory);
    let semantic = semantic_signal(&store, &location.dir);
    let config = load(&ConfigSources::discover(None)).config;
    let request = SearchRequest {
        query: args.query.clone(),
        scope: SearchScope {
            project: Some(project.clone()),
            session,
            since_ms,
            until_ms,
        },
        viewer: None,
        limit: args.limit,
        shared: configured_workspaces(&config).shared_with(&project),
        knowledge: match config.team_store.url {
            Some(_) => KnowledgeSource::TeamCache,
            None => KnowledgeSource::Local,
        },
    };
    let semantic_ref = semantic
        .as_ref()
        .map(|(_, signal)| signal as &dyn SemanticSearch);
    let hits = search(&store, &request, semantic_ref, &FusionWeights::default())
        .with_context(|| format!("cannot search for `{}`", args.query))?;
    if let Err(error) = record_retrieved_memories(&store, &request, &hits, now_ms()?) {
        tracing::warn!(%error, "the memories found were not recorded as used");
    }
    let text = if args.json {
        pretty(&json!({"query": args.query, "project": project.as_str(), "results": hits}))?
    } else {
        as_text(&hits)
    };
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Stores the project's recent commits not stored yet, so they are searchable; a directory
/// outside any repository has none, which is not an error.
pub(crate) fn index_commits(store: &Store, project: &ProjectId, directory: &Path) {
    match mc_proxy::read_commits(directory) {
        Ok(commits) => {
            if let Err(error) = store.write(|tx| tx.add_commits(project, &commits)) {
                tracing::warn!(%error, "cannot store the project's commits; searching without new ones");
            }
        }
        Err(reason) => tracing::debug!(%reason, "no commits to search"),
    }
}

/// The configured embedding model over `store`'s vectors, with the runtime it runs on; `None`
/// (said on stderr) when there is none, and search runs on full text alone.
pub(crate) fn semantic_signal(
    store: &Arc<Store>,
    data_dir: &Path,
) -> Option<(tokio::runtime::Runtime, EmbeddedSearch)> {
    let loaded = load(&ConfigSources::discover(None));
    let settings = embedding_settings(&loaded.config.embeddings, data_dir)?;
    let embedder = match Embedder::from_settings(&settings) {
        Ok(embedder) => embedder?,
        Err(error) => {
            tracing::info!(%error, "no embedding model: searching full text alone");
            return None;
        }
    };
    // Multi-threaded: `Handle::block_on` drives I/O (an HTTP endpoint) only on such a runtime.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .ok()?;
    let signal = EmbeddedSearch::new(embedder, Arc::clone(store), runtime.handle().clone());
    Some((runtime, signal))
}

fn as_text(hits: &[SearchHit]) -> String {
    if hits.is_empty() {
        return "no results\n".to_owned();
    }
    let mut out = String::new();
    for (rank, hit) in hits.iter().enumerate() {
        let place = &hit.place;
        let found_by = match (hit.full_text, hit.semantic) {
            (true, true) => "words+meaning",
            (true, false) => "words",
            (false, _) => "meaning",
        };
        out.push_str(&format!(
            "{}. {} · {place} · {found_by}\n   {}\n",
            rank + 1,
            hit.source,
            hit.preview
        ));
    }
    out
}
