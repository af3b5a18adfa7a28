//! `bench dreamer`: one nightly run of the dreamer (consolidate, then verify) over the
//! generated project of [`crate::bench_dreamer_project`], with the simulator as the model,
//! scored against the planted truth.
//!
//! Two parts are scored apart, because they earn different things: the deterministic
//! evidence (which memories become candidates, which fall into a near-duplicate group) and
//! the judged outcome (what the run archived, updated and merged). A miss of the evidence
//! can never be recovered by the judge; a false candidate costs tokens and is only safe if
//! the judge keeps it. Tokens and cost are what the simulator counted for the run's calls,
//! priced at the list price of the model the calls named (`claude-haiku-4-5`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use anyhow::Context;
use mc_core::ProjectId;
use mc_core::head::MemoryCategory;
use mc_dreamer::{
    InFlightCalls, Limits, LlmJudge, ProjectFolder, ProjectIndex, Runner, Task, TaskSettings,
    candidate_of, near_duplicate_groups,
};
use mc_llm::{LlmClient, ModelEndpoint, RetryPolicy, Wire};
use mc_sim::script::Script;
use mc_sim::server::{Responder, SimConfig, SimServer};
use mc_store::{
    DreamerRun, MemoryAction, MemorySource, MemoryStatus, NewMemory, Store, StoredMemory,
};
use serde::Serialize;

use crate::bench_dreamer_project::{Kind, Planted, memories, write_project};
use crate::clock::now_ms;

/// The model the calls name, and so the price they are costed at.
const MODEL: &str = "claude-haiku-4-5";

/// Precision and recall of one decision.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Score {
    /// Of what was flagged, the share that was planted.
    pub precision: f64,
    /// Of what was planted, the share that was flagged.
    pub recall: f64,
    /// How many were flagged.
    pub flagged: usize,
    /// How many of those were planted.
    pub hits: usize,
}

impl Score {
    fn of(flagged: usize, hits: usize, planted: usize) -> Self {
        let ratio = |a: usize, b: usize| if b == 0 { 1.0 } else { a as f64 / b as f64 };
        Self {
            precision: ratio(hits, flagged),
            recall: ratio(hits, planted),
            flagged,
            hits,
        }
    }
}

/// What `bench dreamer --json` prints.
#[derive(Debug, Clone, Serialize)]
pub struct DreamerReport {
    /// Files in the project (tracked by git).
    pub files: usize,
    /// Memories planted: all, stale, restatements.
    pub memories: usize,
    /// Planted stale.
    pub stale: usize,
    /// Planted restatements.
    pub duplicates: usize,
    /// Evidence: stale memories that became candidates (precision over all candidates).
    pub evidence_stale: Score,
    /// Evidence: planted pairs that fell into one group (precision over all grouped pairs).
    pub evidence_duplicates: Score,
    /// Outcome: memories archived or updated by `verify_memories`.
    pub stale_outcome: Score,
    /// Outcome: planted pairs merged by `consolidate_memories`.
    pub merge_outcome: Score,
    /// True memories archived or superseded other than a planted restatement's pair.
    pub true_memories_lost: usize,
    /// Model calls of the run.
    pub model_calls: u32,
    /// Input tokens of the run.
    pub input_tokens: u64,
    /// Output tokens of the run.
    pub output_tokens: u64,
    /// The run's cost at the list price of `claude-haiku-4-5`, US dollars.
    pub cost_usd: f64,
    /// Wall time of the run (both tasks), milliseconds.
    pub wall_ms: u64,
}

/// Builds the project and the store, runs the dreamer against the simulator, and scores it.
pub fn run() -> anyhow::Result<DreamerReport> {
    let scratch = tempfile::tempdir().context("cannot create a scratch directory")?;
    let root = scratch.path().join("project");
    write_project(&root)?;
    let store =
        Store::open(scratch.path().join("context.db")).context("cannot open the bench store")?;
    let project = ProjectId::new("git:bench").context("a valid project id")?;
    let planted = memories();
    let ids = plant(&store, &project, &planted)?;
    let folder = ProjectFolder::open(&root, mc_dreamer::DEFAULT_MAX_FILE_BYTES)?;
    let index = ProjectIndex::load(&folder)?;
    let stored = store.read(|tx| tx.memories(&project, &[MemoryStatus::Active]))?;
    let evidence_stale = evidence_stale(&stored, &index, &planted, &ids);
    let evidence_duplicates = evidence_duplicates(&stored, &planted, &ids);

    let (runs, wall_ms) = nightly_run(&store, &project, &root)?;
    let after = store.read(|tx| {
        tx.memories(
            &project,
            &[
                MemoryStatus::Active,
                MemoryStatus::Archived,
                MemoryStatus::Permanent,
            ],
        )
    })?;
    let log = store.read(|tx| tx.memory_log_since(&project, 0))?;
    let verified: BTreeSet<u64> = log
        .iter()
        .filter(|entry| entry.task.as_deref() == Some(Task::VerifyMemories.name()))
        .filter(|entry| matches!(entry.action, MemoryAction::Archived | MemoryAction::Changed))
        .map(|entry| entry.memory_id)
        .collect();
    let (merge_outcome, merged_losers) = merge_outcome(&after, &planted, &ids);
    let stale_hits = verified
        .iter()
        .filter(|id| kind_of(**id, &planted, &ids) == Some(Kind::Stale))
        .count();
    let true_memories_lost = after
        .iter()
        .filter(|memory| memory.record.status == MemoryStatus::Archived)
        .filter(|memory| kind_of(memory.id, &planted, &ids) != Some(Kind::Stale))
        .filter(|memory| !merged_losers.contains(&memory.id))
        .count();
    Ok(DreamerReport {
        files: folder.list_files()?.len(),
        memories: planted.len(),
        stale: count(&planted, |kind| kind == Kind::Stale),
        duplicates: count(&planted, |kind| matches!(kind, Kind::Restates(_))),
        evidence_stale,
        evidence_duplicates,
        stale_outcome: Score::of(
            verified.len(),
            stale_hits,
            count(&planted, |kind| kind == Kind::Stale),
        ),
        merge_outcome,
        true_memories_lost,
        model_calls: runs.iter().map(|run| run.model_calls).sum(),
        input_tokens: runs.iter().map(|run| run.input_tokens).sum(),
        output_tokens: runs.iter().map(|run| run.output_tokens).sum(),
        cost_usd: runs.iter().map(|run| run.cost_usd).sum(),
        wall_ms,
    })
}

/// Consolidate then verify, as the nightly schedules order them, with the simulator as the
/// model; the runs and their wall time in milliseconds.
fn nightly_run(
    store: &Store,
    project: &ProjectId,
    root: &std::path::Path,
) -> anyhow::Result<(Vec<DreamerRun>, u64)> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let script = Script::parse(r#"{"turns": [], "final_text": "ok"}"#, "bench dreamer")?;
    let sim = runtime.block_on(SimServer::bind(
        ([127, 0, 0, 1], 0).into(),
        SimConfig::new(Responder::Script(script)),
    ))?;
    let endpoint = ModelEndpoint::new(
        Wire::Anthropic,
        format!("http://{}", sim.local_addr()),
        MODEL,
        None,
    );
    let client = LlmClient::new(RetryPolicy::default()).context("cannot build the HTTP client")?;
    let judge = LlmJudge::new(client, vec![endpoint], runtime.handle().clone());
    let calls = InFlightCalls::default();
    let clock = || now_ms().unwrap_or(0);
    let runner = Runner {
        store,
        model: &judge,
        calls: &calls,
        owner: "bench",
        clock: &clock,
        limits: Limits::default(),
        settings: TaskSettings::default(),
        team: None,
    };
    let started = Instant::now();
    let runs = [Task::ConsolidateMemories, Task::VerifyMemories]
        .into_iter()
        .map(|task| runner.run(task, project, Some(root)))
        .collect::<Result<Vec<_>, _>>()?;
    let wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok((runs, wall_ms))
}

/// Stores the planted memories; their ids, in order.
fn plant(store: &Store, project: &ProjectId, planted: &[Planted]) -> anyhow::Result<Vec<u64>> {
    let created_ms = now_ms()? - 30 * 86_400_000;
    Ok(store.write(|tx| {
        planted
            .iter()
            .map(|memory| {
                let new = NewMemory {
                    category: MemoryCategory::Architecture,
                    content: &memory.content,
                    source: MemorySource::Historian,
                    permanent: false,
                };
                tx.add_memory(project, &new, created_ms)
                    .map(|added| added.id())
            })
            .collect()
    })?)
}

fn kind_of(id: u64, planted: &[Planted], ids: &[u64]) -> Option<Kind> {
    ids.iter()
        .position(|known| *known == id)
        .map(|at| planted[at].kind)
}

fn count(planted: &[Planted], wanted: impl Fn(Kind) -> bool) -> usize {
    planted.iter().filter(|memory| wanted(memory.kind)).count()
}

/// The planted restatement pairs as store ids.
fn planted_pairs(planted: &[Planted], ids: &[u64]) -> BTreeSet<(u64, u64)> {
    planted
        .iter()
        .zip(ids)
        .filter_map(|(memory, id)| match memory.kind {
            Kind::Restates(original) => Some((ids[original].min(*id), ids[original].max(*id))),
            Kind::True | Kind::Stale => None,
        })
        .collect()
}

fn evidence_stale(
    stored: &[StoredMemory],
    index: &ProjectIndex,
    planted: &[Planted],
    ids: &[u64],
) -> Score {
    let candidates: Vec<u64> = stored
        .iter()
        .filter_map(|memory| candidate_of(memory, index))
        .map(|candidate| candidate.memory_id)
        .collect();
    let hits = candidates
        .iter()
        .filter(|id| kind_of(**id, planted, ids) == Some(Kind::Stale))
        .count();
    Score::of(
        candidates.len(),
        hits,
        count(planted, |kind| kind == Kind::Stale),
    )
}

fn evidence_duplicates(stored: &[StoredMemory], planted: &[Planted], ids: &[u64]) -> Score {
    let pairs = planted_pairs(planted, ids);
    let mut grouped = BTreeSet::new();
    for group in near_duplicate_groups(stored) {
        for (at, (a, ..)) in group.memories.iter().enumerate() {
            for (b, ..) in &group.memories[at + 1..] {
                grouped.insert(((*a).min(*b), (*a).max(*b)));
            }
        }
    }
    let hits = grouped.intersection(&pairs).count();
    Score::of(grouped.len(), hits, pairs.len())
}

/// Merges as (retired, kept) pairs scored against the planted pairs; also the retired ids
/// that belong to a planted pair (their loss is the merge, not a mistake).
fn merge_outcome(
    after: &[StoredMemory],
    planted: &[Planted],
    ids: &[u64],
) -> (Score, BTreeSet<u64>) {
    let pairs = planted_pairs(planted, ids);
    let merged: BTreeMap<(u64, u64), u64> = after
        .iter()
        .filter_map(|memory| {
            let kept = memory.superseded_by?;
            Some(((memory.id.min(kept), memory.id.max(kept)), memory.id))
        })
        .collect();
    let hits: BTreeSet<u64> = merged
        .iter()
        .filter(|(pair, _)| pairs.contains(pair))
        .map(|(_, retired)| *retired)
        .collect();
    (Score::of(merged.len(), hits.len(), pairs.len()), hits)
}
