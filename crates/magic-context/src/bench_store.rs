//! `magic-context bench search-store`: full-text search at scale.
//!
//! Builds a store of `messages` raw messages from recorded sessions (the corpus repeated as
//! many sessions of one project as it takes, each copy's texts marked so copies are not
//! identical), appending two messages per transaction as a proxied call does, then asks
//! queries of four words drawn from stored messages through the one search path. Reports
//! ingest throughput and per-append latency (the index is written in the append's
//! transaction, so this is what a proxied call pays), and query latency.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, anyhow};
use mc_core::search::{FusionWeights, indexed_text};
use mc_core::{Host, Message, Part, ProjectId, SessionId};
use mc_engine::search::{SearchRequest, search};
use mc_store::{KnowledgeSource, NewSession, SearchScope, Store};
use serde::Serialize;

use crate::bench_locomo::percentile;

/// Messages appended per transaction, as one proxied call of an agent adds them.
const PER_APPEND: usize = 2;

/// What the benchmark reports.
#[derive(Debug, Serialize)]
pub struct StoreReport {
    /// Messages stored.
    pub messages: usize,
    /// Sessions they were stored in.
    pub sessions: usize,
    /// Bytes of indexed text.
    pub text_bytes: usize,
    /// Messages stored per second, indexing included.
    pub ingest_messages_per_s: f64,
    /// Median time of one append of two messages, milliseconds.
    pub append_p50_ms: f64,
    /// 95th percentile of an append, milliseconds.
    pub append_p95_ms: f64,
    /// Queries asked.
    pub queries: usize,
    /// Median query time, milliseconds.
    pub p50_ms: f64,
    /// 95th percentile query time, milliseconds.
    pub p95_ms: f64,
    /// Size of the store file, bytes.
    pub store_bytes: u64,
}

/// Builds the store under `dir` from the recordings at `corpus` and measures it.
pub fn run(
    corpus: &Path,
    dir: &Path,
    messages: usize,
    queries: usize,
) -> anyhow::Result<StoreReport> {
    let recordings = mc_sim::recording::load(corpus, None)
        .with_context(|| format!("cannot load recordings from {}", corpus.display()))?;
    let conversations: Vec<Vec<Message>> = recordings
        .iter()
        .filter_map(|recording| {
            let last = recording.steps.last()?;
            let mut conversation = last.messages[..last.len].to_vec();
            conversation.push(last.response.clone());
            Some(conversation)
        })
        .filter(|conversation| !conversation.is_empty())
        .collect();
    if conversations.is_empty() {
        return Err(anyhow!("{} holds no conversation", corpus.display()));
    }
    let store = Store::open(dir.join("context.db")).context("cannot open the benchmark store")?;
    let project = ProjectId::new("bench-project").context("project id")?;
    let mut appends = Vec::new();
    let mut stored = 0;
    let mut sessions = 0;
    let mut text_bytes = 0;
    let started = Instant::now();
    'fill: for copy in 0.. {
        for (index, conversation) in conversations.iter().enumerate() {
            let session = SessionId::new(format!("bench-{copy}-{index}")).context("session id")?;
            store.write(|tx| {
                tx.upsert_session(
                    &NewSession {
                        id: session.clone(),
                        host: Host::Other,
                        project: Some(project.clone()),
                    },
                    0,
                )
                .map(|_| ())
            })?;
            sessions += 1;
            let marked: Vec<Message> = conversation
                .iter()
                .map(|message| marked(message, copy))
                .collect();
            let mut ordinal = 0u64;
            for chunk in marked.chunks(PER_APPEND) {
                let take = chunk.len().min(messages - stored);
                let chunk = &chunk[..take];
                text_bytes += chunk.iter().map(|m| indexed_text(m).len()).sum::<usize>();
                let at = Instant::now();
                ordinal = store.write(|tx| tx.append_messages(&session, ordinal, chunk, 1_000))?;
                appends.push(at.elapsed().as_secs_f64() * 1000.0);
                stored += take;
                if stored >= messages {
                    break 'fill;
                }
            }
        }
    }
    let ingest_s = started.elapsed().as_secs_f64();
    appends.sort_by(f64::total_cmp);
    let texts: Vec<String> = conversations
        .iter()
        .flatten()
        .map(indexed_text)
        .filter(|text| text.split_whitespace().count() >= 8)
        .collect();
    let mut times = Vec::new();
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..queries {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        let text = &texts[(state >> 33) as usize % texts.len()];
        let words: Vec<&str> = text.split_whitespace().collect();
        let start = (state >> 13) as usize % words.len().saturating_sub(4).max(1);
        let query = words[start..(start + 4).min(words.len())].join(" ");
        let request = SearchRequest {
            query,
            scope: SearchScope {
                project: Some(project.clone()),
                ..SearchScope::default()
            },
            viewer: None,
            limit: 10,
            shared: Vec::new(),
            knowledge: KnowledgeSource::Local,
        };
        let at = Instant::now();
        match search(&store, &request, None, &FusionWeights::default()) {
            Ok(_) | Err(mc_engine::search::SearchError::Query(_)) => {}
            Err(error) => return Err(error).context("a benchmark query failed"),
        }
        times.push(at.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    let store_bytes = std::fs::metadata(dir.join("context.db")).map_or(0, |m| m.len());
    Ok(StoreReport {
        messages: stored,
        sessions,
        text_bytes,
        ingest_messages_per_s: stored as f64 / ingest_s.max(1e-9),
        append_p50_ms: percentile(&appends, 0.50),
        append_p95_ms: percentile(&appends, 0.95),
        queries: times.len(),
        p50_ms: percentile(&times, 0.50),
        p95_ms: percentile(&times, 0.95),
        store_bytes,
    })
}

/// `message` with copy `copy`'s marker appended to its first text, so copies differ.
fn marked(message: &Message, copy: usize) -> Message {
    let mut message = message.clone();
    if copy > 0
        && let Some(Part::Text { text, .. }) = message
            .parts
            .iter_mut()
            .find(|part| matches!(part, Part::Text { .. }))
    {
        text.push_str(&format!(" copy{copy}"));
    }
    message
}
