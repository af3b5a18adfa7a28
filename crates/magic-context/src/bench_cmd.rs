//! `magic-context bench`: measurements that print figures.
//!
//! `bench locomo --json` prints the fields of [`LocomoReport`](crate::bench_locomo::LocomoReport):
//! `mode`, `questions`, `recall_at_k` (k → recall), `recall_by_category`, `mrr`, `p50_ms`,
//! `p95_ms`, `unresolved_evidence`, `questions_without_evidence`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, anyhow};
use clap::{Args, Subcommand};
use mc_store::Store;
use serde_json::json;

use crate::bench_locomo;
use crate::output::{pretty, write_stdout};

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
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Runs the chosen benchmark.
pub fn run(args: &BenchArgs) -> anyhow::Result<ExitCode> {
    match &args.which {
        Bench::Locomo {
            data,
            mode,
            k,
            json,
        } => locomo(data, mode, k, *json),
    }
}

fn locomo(
    data: &std::path::Path,
    mode: &str,
    ks: &[usize],
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
    let store = Store::open(scratch.path().join("context.db"))
        .context("cannot open the benchmark store")?;
    let conversations = bench_locomo::ingest_file(&store, data)?;
    let report = match mode {
        "bm25" => bench_locomo::ask(&store, &conversations, ks, mode, None)?,
        "hybrid" => {
            return Err(anyhow!(
                "--mode hybrid needs an embedding model, which this build does not have yet; use --mode bm25"
            ));
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
