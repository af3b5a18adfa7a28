//! `magic-context bench team-store`: what a hard fold pays to read the project's memories
//! from PostgreSQL instead of SQLite.
//!
//! A hard fold reads every live memory of the project and the log position they reflect
//! (`memories_for_fold`). The benchmark stores the same memories three ways and times that
//! read in each: the local SQLite tables (no team store), PostgreSQL directly through the
//! pool (what a fold would pay reading the team store on the request path), and the team
//! store's local cache (what a fold actually reads with a team store: the sync loop keeps
//! the cache current off the request path). It reports p50 and p95 of each and the added
//! latency of PostgreSQL over SQLite. It needs a server it may create a scratch database on
//! (`--server`, else `MC_TEST_PG_URL`).

use std::time::Instant;

use anyhow::{Context, anyhow};
use mc_core::ProjectId;
use mc_core::head::MemoryCategory;
use mc_store::{
    MemorySource, MemoryStatus, NewMemory, ProjectKnowledge, Store, TeamCache, TeamWrite,
};
use mc_team_store::{TeamStore, TeamStoreUrl, create_scratch_database};
use serde::Serialize;

use crate::bench_locomo::percentile;

const LIVE: &[MemoryStatus] = &[MemoryStatus::Active, MemoryStatus::Permanent];

/// Latency of one way of reading, milliseconds.
#[derive(Debug, Serialize)]
pub struct Latency {
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
}

/// What the benchmark reports.
#[derive(Debug, Serialize)]
pub struct TeamStoreReport {
    /// Live memories read per fold.
    pub memories: usize,
    /// Reads timed per store.
    pub reads: usize,
    /// The local SQLite tables.
    pub sqlite: Latency,
    /// PostgreSQL through the pool.
    pub postgres: Latency,
    /// The team store's local cache.
    pub team_cache: Latency,
    /// PostgreSQL minus SQLite.
    pub added: Latency,
}

/// Stores `memories` memories each way under `dir` and on a scratch database of `server`,
/// then times `reads` fold reads of each.
pub fn run(
    server: &str,
    dir: &std::path::Path,
    memories: usize,
    reads: usize,
) -> anyhow::Result<TeamStoreReport> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let url = runtime
        .block_on(create_scratch_database(server))
        .context("cannot create a scratch database on --server")?;
    let url = TeamStoreUrl::parse(&url).map_err(|problem| anyhow!(problem))?;
    let team = TeamStore::new(url)?;
    runtime.block_on(team.migrate())?;
    let store = Store::open(dir.join("context.db"))?;
    let project = ProjectId::new("bench:team-store")?;
    let texts: Vec<String> = (0..memories)
        .map(|n| {
            format!(
                "Fact {n}: the service named unit-{n} answers on port {} and retries twice.",
                8_000 + n
            )
        })
        .collect();
    store.write(|tx| {
        for text in &texts {
            let memory = NewMemory {
                category: MemoryCategory::ConfigValues,
                content: text,
                source: MemorySource::Agent,
                permanent: false,
            };
            tx.add_memory(&project, &memory, 0)?;
        }
        Ok(())
    })?;
    runtime.block_on(async {
        for (n, text) in texts.iter().enumerate() {
            let write = TeamWrite::Add {
                category: MemoryCategory::ConfigValues,
                content: text.clone(),
                source: MemorySource::Agent,
                permanent: false,
            };
            team.apply(&format!("bench-{n}"), &project, &write, 0)
                .await?;
        }
        let changes = team.changes_since(&project, 0).await?;
        store.write(|tx| {
            tx.cache_team_changes(&project, &changes.memories, &changes.log, changes.head, 0)
        })?;
        anyhow::Ok(())
    })?;

    let sqlite = time(reads, || {
        store.read(|tx| {
            Ok((
                tx.memories(&project, LIVE)?.len(),
                tx.memory_log_head(&project)?,
            ))
        })?;
        Ok(())
    })?;
    let team_cache = time(reads, || {
        store.read(|tx| {
            let cache = TeamCache::new(tx);
            Ok((
                cache.memories(&project, LIVE)?.len(),
                cache.memory_log_head(&project)?,
            ))
        })?;
        Ok(())
    })?;
    let postgres = time(reads, || {
        runtime.block_on(async {
            let read = team.memories(&project, LIVE).await?;
            let head = team.memory_log_head(&project).await?;
            anyhow::ensure!(
                read.len() == memories && head > 0,
                "the team store lost memories"
            );
            Ok(())
        })
    })?;
    let added = Latency {
        p50_ms: postgres.p50_ms - sqlite.p50_ms,
        p95_ms: postgres.p95_ms - sqlite.p95_ms,
    };
    Ok(TeamStoreReport {
        memories,
        reads,
        sqlite,
        postgres,
        team_cache,
        added,
    })
}

/// p50 and p95 of `reads` runs of `read`, after a few untimed ones warm caches and the pool.
fn time(reads: usize, mut read: impl FnMut() -> anyhow::Result<()>) -> anyhow::Result<Latency> {
    for _ in 0..10 {
        read()?;
    }
    let mut samples = Vec::with_capacity(reads);
    for _ in 0..reads {
        let started = Instant::now();
        read()?;
        samples.push(started.elapsed().as_secs_f64() * 1_000.0);
    }
    samples.sort_by(f64::total_cmp);
    Ok(Latency {
        p50_ms: percentile(&samples, 0.5),
        p95_ms: percentile(&samples, 0.95),
    })
}

/// The report as text.
pub fn text(report: &TeamStoreReport) -> String {
    let line = |name: &str, latency: &Latency| {
        format!(
            "  {name:<11} p50 {:>7.3} ms   p95 {:>7.3} ms\n",
            latency.p50_ms, latency.p95_ms
        )
    };
    format!(
        "a hard fold's memory read ({} live memories, {} reads each):\n{}{}{}\
         added by PostgreSQL over SQLite: p50 {:.3} ms, p95 {:.3} ms\n",
        report.memories,
        report.reads,
        line("sqlite", &report.sqlite),
        line("postgres", &report.postgres),
        line("team cache", &report.team_cache),
        report.added.p50_ms,
        report.added.p95_ms,
    )
}
