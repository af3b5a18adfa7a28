//! `magic-context bench locomo`: recall of the unified search on LoCoMo.
//!
//! Each conversation is stored as one session (its own project, so no conversation sees
//! another), each dialog turn one message at its session's date; every question of
//! categories 1–4 goes through [`mc_engine::search::search`], the path `ctx_search` uses.
//! recall@k is, per question, the share of its evidence turns among the first k results,
//! averaged over questions; MRR is the mean reciprocal rank of the first evidence turn within
//! the largest k (0 when none is there).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use mc_core::search::FusionWeights;
use mc_core::{Host, Message, Part, ProjectId, Role, SessionId};
use mc_engine::search::{HitPlace, SearchRequest, SemanticSearch, search};
use mc_store::{KnowledgeSource, NewSession, SearchScope, Store};
use serde::Serialize;

use crate::locomo::{Conversation, Question, load};

/// What the benchmark reports.
#[derive(Debug, Serialize)]
pub struct LocomoReport {
    /// `bm25` or `hybrid`.
    pub mode: String,
    /// Questions asked.
    pub questions: usize,
    /// Mean recall of the evidence turns within the first k results, by k.
    pub recall_at_k: BTreeMap<usize, f64>,
    /// recall at the largest k per LoCoMo category.
    pub recall_by_category: BTreeMap<u8, f64>,
    /// Mean reciprocal rank of the first evidence turn.
    pub mrr: f64,
    /// Median query time, milliseconds.
    pub p50_ms: f64,
    /// 95th percentile query time, milliseconds.
    pub p95_ms: f64,
    /// Evidence ids naming no turn, left out of the denominators.
    pub unresolved_evidence: usize,
    /// Questions whose every evidence id was unresolved, left out.
    pub questions_without_evidence: usize,
}

/// Loads `data` and stores every conversation as a session of `store`.
pub fn ingest_file(store: &Store, data: &Path) -> anyhow::Result<Vec<Conversation>> {
    let conversations = load(data)?;
    for conversation in &conversations {
        ingest(store, conversation)?;
    }
    Ok(conversations)
}

/// Asks every question of `conversations` (stored by [`ingest_file`]) and scores the answers.
pub fn ask(
    store: &Store,
    conversations: &[Conversation],
    ks: &[usize],
    mode: &str,
    semantic: Option<&dyn SemanticSearch>,
) -> anyhow::Result<LocomoReport> {
    let max_k = ks.iter().copied().max().unwrap_or(10);
    let mut found_at: BTreeMap<usize, f64> = ks.iter().map(|&k| (k, 0.0)).collect();
    let mut by_category: BTreeMap<u8, (f64, usize)> = BTreeMap::new();
    let mut reciprocal = 0.0;
    let mut times = Vec::new();
    let mut unresolved = 0;
    let mut without = 0;
    for conversation in conversations {
        let (project, session) = ids(conversation)?;
        for question in &conversation.questions {
            unresolved += question.unresolved;
            if question.evidence.is_empty() {
                without += 1;
                continue;
            }
            let asked = Asked {
                store,
                project: &project,
                session: &session,
                semantic,
            };
            let started = Instant::now();
            let ranked = asked.ranked_turns(question, max_k, &FusionWeights::default())?;
            times.push(started.elapsed().as_secs_f64() * 1000.0);
            for (&k, sum) in &mut found_at {
                *sum += recall_at(question, &ranked, k);
            }
            let entry = by_category.entry(question.category).or_default();
            entry.0 += recall_at(question, &ranked, max_k);
            entry.1 += 1;
            if let Some(rank) = ranked
                .iter()
                .take(max_k)
                .position(|turn| question.evidence.contains(turn))
            {
                reciprocal += 1.0 / (rank + 1) as f64;
            }
        }
    }
    let asked = times.len();
    let mean = |sum: f64| if asked == 0 { 0.0 } else { sum / asked as f64 };
    times.sort_by(f64::total_cmp);
    Ok(LocomoReport {
        mode: mode.to_owned(),
        questions: asked,
        recall_at_k: found_at
            .into_iter()
            .map(|(k, sum)| (k, mean(sum)))
            .collect(),
        recall_by_category: by_category
            .into_iter()
            .map(|(category, (sum, count))| (category, sum / count.max(1) as f64))
            .collect(),
        mrr: mean(reciprocal),
        p50_ms: percentile(&times, 0.50),
        p95_ms: percentile(&times, 0.95),
        unresolved_evidence: unresolved,
        questions_without_evidence: without,
    })
}

/// Where a conversation's questions are asked: its session in the benchmark's store, with
/// the semantic signal or without.
pub struct Asked<'a> {
    /// The store holding every conversation.
    pub store: &'a Store,
    /// The conversation's project.
    pub project: &'a ProjectId,
    /// The conversation's session.
    pub session: &'a SessionId,
    /// The semantic signal, for hybrid search.
    pub semantic: Option<&'a dyn SemanticSearch>,
}

impl Asked<'_> {
    /// The turns (indexes into the conversation) the first `limit` results of searching
    /// for `question` with `weights` show, best first.
    pub fn ranked_turns(
        &self,
        question: &Question,
        limit: usize,
        weights: &FusionWeights,
    ) -> anyhow::Result<Vec<usize>> {
        let request = SearchRequest {
            query: question.text.clone(),
            scope: SearchScope {
                project: Some(self.project.clone()),
                session: Some(self.session.clone()),
                ..SearchScope::default()
            },
            viewer: None,
            limit,
            shared: Vec::new(),
            knowledge: KnowledgeSource::Local,
        };
        let hits = search(self.store, &request, self.semantic, weights)
            .with_context(|| format!("searching for `{}`", question.text))?;
        Ok(hits
            .iter()
            .filter_map(|hit| match hit.place {
                HitPlace::Messages { start, .. } => usize::try_from(start).ok(),
                HitPlace::Memory { .. } | HitPlace::Commit { .. } | HitPlace::Note { .. } => None,
            })
            .collect())
    }
}

/// The share of `question`'s evidence turns among the first `k` of `ranked`.
pub fn recall_at(question: &Question, ranked: &[usize], k: usize) -> f64 {
    let found = ranked
        .iter()
        .take(k)
        .filter(|turn| question.evidence.contains(turn))
        .count();
    found as f64 / question.evidence.len().max(1) as f64
}

/// The project and session a conversation is stored as.
pub fn ids(conversation: &Conversation) -> anyhow::Result<(ProjectId, SessionId)> {
    let name = format!("locomo-{}", conversation.id);
    Ok((
        ProjectId::new(name.clone())
            .with_context(|| format!("conversation id `{}`", conversation.id))?,
        SessionId::new(name).with_context(|| format!("conversation id `{}`", conversation.id))?,
    ))
}

fn ingest(store: &Store, conversation: &Conversation) -> anyhow::Result<()> {
    let (project, session) = ids(conversation)?;
    let first_speaker = conversation
        .turns
        .first()
        .and_then(|turn| turn.text.split(':').next())
        .unwrap_or_default()
        .to_owned();
    store.write(|tx| {
        let created = conversation.turns.first().map_or(0, |turn| turn.at_ms);
        tx.upsert_session(
            &NewSession {
                id: session.clone(),
                host: Host::Other,
                project: Some(project.clone()),
            },
            created,
        )?;
        let mut ordinal = 0;
        for turn in &conversation.turns {
            let role = if turn.text.split(':').next() == Some(first_speaker.as_str()) {
                Role::User
            } else {
                Role::Assistant
            };
            let message = Message::new(role, vec![Part::text(turn.text.clone())]);
            ordinal = tx.append_messages(&session, ordinal, &[message], turn.at_ms)?;
        }
        Ok(())
    })?;
    Ok(())
}

/// The `q` quantile of sorted `values` (nearest rank).
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}
