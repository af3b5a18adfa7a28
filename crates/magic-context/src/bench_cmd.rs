//! `magic-context bench`: measurements that print figures.
//!
//! `bench memory --json` prints [`MemoryReport`](crate::bench_memory::MemoryReport):
//! `phases` (per memory phase: `sessions`, `calls`, `tokens_per_session`,
//! `last_body_bytes`, `peak_rss_mb`, `end_rss_mb`, `threads`, `proxied_p50_ms`) and `latency`
//! (`calls`, `proxied_p50_ms`, `direct_p50_ms`, `added_p50_ms`, `ratio`).
//!
//! `bench dreamer --json` prints [`DreamerReport`](crate::bench_dreamer::DreamerReport):
//! `files`, `memories`, `stale`, `duplicates`, the scores `evidence_stale`,
//! `evidence_duplicates`, `stale_outcome`, `merge_outcome` (each `precision`, `recall`,
//! `flagged`, `hits`), `true_memories_lost`, `model_calls`, `input_tokens`, `output_tokens`,
//! `cost_usd`, `wall_ms`.
//!
//! `bench team-store --json` prints
//! [`TeamStoreReport`](crate::bench_team_store::TeamStoreReport): `memories`, `reads`, and
//! `sqlite`, `postgres`, `team_cache`, `added` (each `p50_ms`, `p95_ms`).
//!
//! `bench locomo --json` prints the fields of [`LocomoReport`](crate::bench_locomo::LocomoReport):
//! `mode`, `questions`, `recall_at_k` (k → recall), `recall_by_category`, `mrr`, `p50_ms`,
//! `p95_ms`, `unresolved_evidence`, `questions_without_evidence`. With `--cross-validate` it
//! prints [`LocomoCrossValidation`](crate::bench_locomo_cv::LocomoCrossValidation):
//! `full_text` and `hybrid` (each `settings`, `folds`, `held_out_recall`,
//! `default_held_out_recall`, `fitted_recall`, `p50_ms`, `p95_ms`) and `hybrid_gain` per split.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, anyhow};
use clap::{Args, Subcommand};
use mc_config::{ConfigSources, load};
use mc_embed::{Embedder, EmbeddingProvider, EmbeddingSettings};
use mc_engine::search::{EmbeddedSearch, embed_pending, embedding_settings};
use mc_store::{LocationEnv, Platform, Store, resolve_data_dir};
use serde_json::json;

use crate::bench_memory::MemoryBench;
use crate::output::{pretty, write_stdout};
use crate::{
    bench_dreamer, bench_locomo, bench_locomo_cv, bench_memory, bench_recall_dropped, bench_store,
    bench_team_store,
};

/// Arguments of `bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Which benchmark.
    #[command(subcommand)]
    pub which: Bench,
}

/// The benchmarks.
#[derive(Debug, Subcommand)]
pub enum Bench {
    /// The memory a `serve` process holds for long sessions (peak RSS) and the time it adds
    /// to each call, against the simulated provider.
    Memory {
        /// Each session's size at the end, in o200k tokens.
        #[arg(long, value_name = "TOKENS", default_value_t = 400_000)]
        tokens: u64,
        /// Each session's size in its first request, in o200k tokens.
        #[arg(long, value_name = "TOKENS", default_value_t = 200_000)]
        start_tokens: u64,
        /// Sessions per phase, comma-separated: each phase starts a fresh `serve`.
        #[arg(
            long,
            value_name = "N,…",
            default_value = "1,16",
            value_delimiter = ','
        )]
        sessions: Vec<usize>,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Search recall on LoCoMo conversations: recall@k of the evidence turns, MRR, latency.
    Locomo {
        /// The LoCoMo JSON file.
        #[arg(long, value_name = "FILE")]
        data: PathBuf,
        /// `bm25` (full-text only) or `hybrid` (full-text and embeddings).
        #[arg(long, default_value = "bm25")]
        mode: String,
        /// The cut-offs to report recall at, comma-separated.
        #[arg(
            long,
            value_name = "K,…",
            default_value = "1,5,10",
            value_delimiter = ','
        )]
        k: Vec<usize>,
        /// For `hybrid`: the local model's directory, instead of the configured provider.
        #[arg(long, value_name = "DIR")]
        model_dir: Option<PathBuf>,
        /// Choose the fusion settings on all conversations but two and score them on those
        /// two, every split, for full text alone and (with a model) hybrid search; `--mode`
        /// and `--k` are not used.
        #[arg(long)]
        cross_validate: bool,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// The dreamer's nightly run over a generated project with planted stale and duplicate
    /// memories, the simulator as the model: precision and recall, tokens, cost, time.
    Dreamer {
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// What `ctx_search` finds of what `magic`'s requests no longer held: the recordings
    /// replayed with `magic`, and wherever a recorded answer used an identifier its request
    /// missed, the session's store searched for it (the identifier, then the answer's
    /// sentence around it): recall@1/@5 of a message that showed it, MRR, p95; with
    /// `--model-dir`, hybrid figures beside full text.
    RecallDropped {
        /// A recording or a folder of them.
        #[arg(value_name = "FILE|DIR")]
        path: PathBuf,
        /// The context window in tokens [default: the model's].
        #[arg(long, value_name = "TOKENS")]
        window: Option<u64>,
        /// Also ask each query with the semantic signal of the local model in this
        /// directory (hybrid), beside full text alone.
        #[arg(long, value_name = "DIR")]
        model_dir: Option<PathBuf>,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// What a hard fold pays to read the project's memories from PostgreSQL instead of
    /// SQLite (and from the team store's local cache, which is what a fold reads): p50 and
    /// p95 of each, and the added latency.
    TeamStore {
        /// A PostgreSQL server it may create a scratch database on [default: $MC_TEST_PG_URL].
        #[arg(
            long,
            value_name = "URL",
            env = "MC_TEST_PG_URL",
            hide_env_values = true
        )]
        server: String,
        /// Live memories the project holds.
        #[arg(long, value_name = "N", default_value_t = 200)]
        memories: usize,
        /// Reads timed per store.
        #[arg(long, value_name = "N", default_value_t = 500)]
        reads: usize,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Full-text search over a large store built from recorded sessions: ingest throughput,
    /// append latency, query p50/p95.
    SearchStore {
        /// A recording or a folder of them (mini-swe-agent trajectories, Claude Code sessions).
        #[arg(long, value_name = "PATH")]
        corpus: PathBuf,
        /// How many messages to store.
        #[arg(long, value_name = "N", default_value_t = 100_000)]
        messages: usize,
        /// How many queries to ask.
        #[arg(long, value_name = "N", default_value_t = 500)]
        queries: usize,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Runs the chosen benchmark.
pub fn run(args: &BenchArgs) -> anyhow::Result<ExitCode> {
    match &args.which {
        Bench::Memory {
            tokens,
            start_tokens,
            sessions,
            json,
        } => memory(
            &MemoryBench {
                tokens: *tokens,
                start_tokens: *start_tokens,
                sessions: sessions.clone(),
            },
            *json,
        ),
        Bench::Locomo {
            data,
            model_dir,
            cross_validate: true,
            json,
            ..
        } => bench_locomo_cv::run(data, model_dir.as_deref(), *json),
        Bench::Locomo {
            data,
            mode,
            k,
            model_dir,
            cross_validate: false,
            json,
        } => locomo(data, mode, k, model_dir.as_deref(), *json),
        Bench::SearchStore {
            corpus,
            messages,
            queries,
            json,
        } => search_store(corpus, *messages, *queries, *json),
        Bench::Dreamer { json } => dreamer(*json),
        Bench::TeamStore {
            server,
            memories,
            reads,
            json,
        } => team_store(server, *memories, *reads, *json),
        Bench::RecallDropped {
            path,
            window,
            model_dir,
            json,
        } => bench_recall_dropped::run(path, *window, model_dir.as_deref(), *json),
    }
}

fn team_store(
    server: &str,
    memories: usize,
    reads: usize,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let dir = tempfile::tempdir().context("cannot create a scratch directory")?;
    let report = bench_team_store::run(server, dir.path(), memories, reads)?;
    let text = if as_json {
        pretty(&serde_json::to_value(&report).context("cannot format the report")?)?
    } else {
        bench_team_store::text(&report)
    };
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

fn dreamer(as_json: bool) -> anyhow::Result<ExitCode> {
    let report = bench_dreamer::run()?;
    let text = if as_json {
        pretty(&serde_json::to_value(&report).context("cannot format the report")?)?
    } else {
        let score = |name: &str, score: &bench_dreamer::Score| {
            format!(
                "  {name}: precision {:.2}, recall {:.2} ({} flagged, {} planted hits)\n",
                score.precision, score.recall, score.flagged, score.hits
            )
        };
        format!(
            "{} files, {} memories ({} stale, {} restatements)\nevidence (deterministic):\n{}{}\
             outcome (evidence and the simulated judge):\n{}{}  true memories lost: {}\n\
             {} model calls, {} in / {} out tokens, ${:.4} at claude-haiku-4-5 list prices, {} ms\n",
            report.files,
            report.memories,
            report.stale,
            report.duplicates,
            score("stale candidates", &report.evidence_stale),
            score("duplicate pairs grouped", &report.evidence_duplicates),
            score("archived or updated", &report.stale_outcome),
            score("pairs merged", &report.merge_outcome),
            report.true_memories_lost,
            report.model_calls,
            report.input_tokens,
            report.output_tokens,
            report.cost_usd,
            report.wall_ms,
        )
    };
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

fn memory(bench: &MemoryBench, as_json: bool) -> anyhow::Result<ExitCode> {
    let report = bench_memory::run(bench)?;
    let text = if as_json {
        pretty(&serde_json::to_value(&report).context("cannot format the report")?)?
    } else {
        let mut text: String = report
            .phases
            .iter()
            .map(|phase| {
                format!(
                    "{} session(s) of {} tokens ({:.2} MB per request at the end), {} calls: serve peak RSS {:.1} MB, {:.1} MB at the end, {} threads; call p50 {:.1} ms\n",
                    phase.sessions,
                    phase.tokens_per_session,
                    phase.last_body_bytes as f64 / 1e6,
                    phase.calls,
                    phase.peak_rss_mb,
                    phase.end_rss_mb,
                    phase.threads,
                    phase.proxied_p50_ms,
                )
            })
            .collect();
        let latency = &report.latency;
        text.push_str(&format!(
            "added latency, 1 session, {} paired calls: p50 {:.2} ms (proxied {:.2} ms, direct {:.2} ms, ratio {:.2})\n",
            latency.calls,
            latency.added_p50_ms,
            latency.proxied_p50_ms,
            latency.direct_p50_ms,
            latency.ratio,
        ));
        text
    };
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

fn locomo(
    data: &Path,
    mode: &str,
    ks: &[usize],
    model_dir: Option<&Path>,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    if ks.is_empty()
        || ks
            .iter()
            .any(|&k| k == 0 || k > mc_engine::search::MAX_LIMIT)
    {
        return Err(anyhow!(
            "--k takes cut-offs between 1 and {}",
            mc_engine::search::MAX_LIMIT
        ));
    }
    let scratch = tempfile::tempdir().context("cannot create a scratch directory")?;
    let store = Arc::new(
        Store::open(scratch.path().join("context.db"))
            .context("cannot open the benchmark store")?,
    );
    let conversations = bench_locomo::ingest_file(&store, data)?;
    let report = match mode {
        "bm25" => bench_locomo::ask(&store, &conversations, ks, mode, None)?,
        "hybrid" => {
            let (_runtime, semantic) = semantic_signal(&store, model_dir)?;
            bench_locomo::ask(&store, &conversations, ks, mode, Some(&semantic))?
        }
        other => return Err(anyhow!("unknown --mode `{other}`; use bm25 or hybrid")),
    };
    let text = if as_json {
        pretty(&serde_json::to_value(&report).context("cannot format the report")?)?
    } else {
        let recall: Vec<String> = report
            .recall_at_k
            .iter()
            .map(|(k, recall)| format!("recall@{k} {recall:.3}"))
            .collect();
        format!(
            "{} questions, {}: {}, MRR {:.3}; query p50 {:.2} ms, p95 {:.2} ms\n{}\n",
            report.questions,
            report.mode,
            recall.join(", "),
            report.mrr,
            report.p50_ms,
            report.p95_ms,
            json!({"by_category": report.recall_by_category, "unresolved_evidence": report.unresolved_evidence})
        )
    };
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// The semantic signal over `store`, every item embedded first, with the local model in
/// `model_dir` or the configured provider; the runtime it runs the model on comes with it.
pub fn semantic_signal(
    store: &Arc<Store>,
    model_dir: Option<&Path>,
) -> anyhow::Result<(tokio::runtime::Runtime, EmbeddedSearch)> {
    let settings = match model_dir {
        Some(dir) => EmbeddingSettings {
            provider: EmbeddingProvider::Local {
                model_dir: dir.to_path_buf(),
            },
        },
        None => configured_embeddings()?,
    };
    let embedder = Embedder::from_settings(&settings)
        .context("cannot load the embedding model")?
        .ok_or_else(|| anyhow!("embeddings are off in the configuration"))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let started = Instant::now();
    let embedded = runtime
        .block_on(embed_pending(Arc::clone(store), &embedder, usize::MAX))
        .context("cannot embed the conversations")?;
    tracing::info!(
        "embedded {embedded} items in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let semantic = EmbeddedSearch::new(embedder, Arc::clone(store), runtime.handle().clone());
    Ok((runtime, semantic))
}

/// The embedding provider the configuration chooses, with the local model found in the data
/// directory unless configured elsewhere.
fn configured_embeddings() -> anyhow::Result<EmbeddingSettings> {
    let loaded = load(&ConfigSources::discover(None));
    let location = resolve_data_dir(&LocationEnv::from_process(), Platform::current())
        .context("cannot find the data directory")?;
    embedding_settings(&loaded.config.embeddings, &location.dir)
        .ok_or_else(|| anyhow!("embeddings are off in the configuration (`embeddings.enabled`)"))
}

fn search_store(
    corpus: &Path,
    messages: usize,
    queries: usize,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    if messages == 0 || queries == 0 {
        return Err(anyhow!("--messages and --queries must be at least 1"));
    }
    let scratch = tempfile::tempdir().context("cannot create a scratch directory")?;
    let report = bench_store::run(corpus, scratch.path(), messages, queries)?;
    let text = if as_json {
        pretty(&serde_json::to_value(&report).context("cannot format the report")?)?
    } else {
        format!(
            "{} messages in {} sessions ({} MB of text, store {} MB): ingest {:.0} messages/s, append of {} p50 {:.2} ms p95 {:.2} ms; {} queries p50 {:.2} ms p95 {:.2} ms\n",
            report.messages,
            report.sessions,
            report.text_bytes / 1_000_000,
            report.store_bytes / 1_000_000,
            report.ingest_messages_per_s,
            2,
            report.append_p50_ms,
            report.append_p95_ms,
            report.queries,
            report.p50_ms,
            report.p95_ms,
        )
    };
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}
