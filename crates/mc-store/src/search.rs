//! Full-text queries over the indexes: ranked hits per source, scoped to a project (and
//! optionally a session and a time window).
//!
//! Every query takes an [`FtsQuery`], whose expression holds only quoted words, so no user text
//! reaches `MATCH` unescaped. Scores are the negated `bm25()` value (higher is better) and are
//! only comparable within one query over one index; fusion across sources happens above.

use mc_core::search::FtsQuery;
use mc_core::{ContentHash, ProjectId, SessionId};

use crate::error::{Result, RowProblem, StoreError};
use crate::messages::hash_from_column;
use crate::store::ReadTx;

/// Which rows a search may see.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchScope {
    /// Only sessions of this project (and memories of it); `None` searches every project,
    /// which only the operator's own command line may ask for.
    pub project: Option<ProjectId>,
    /// Only this session's messages and compartments.
    pub session: Option<SessionId>,
    /// Only rows at or after this time, unix milliseconds.
    pub since_ms: Option<i64>,
    /// Only rows before this time, unix milliseconds.
    pub until_ms: Option<i64>,
}

impl SearchScope {
    pub(crate) fn bounds(&self) -> (i64, i64) {
        (
            self.since_ms.unwrap_or(i64::MIN),
            self.until_ms.unwrap_or(i64::MAX),
        )
    }
}

/// A message that matched.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageHit {
    /// Its session.
    pub session: SessionId,
    /// Its ordinal there.
    pub ordinal: u64,
    /// Its content hash (a fork's copy of a message has the same one).
    pub hash: ContentHash,
    /// When it was stored.
    pub created_ms: i64,
    /// Negated BM25, higher is better.
    pub score: f64,
}

/// A compartment that matched.
#[derive(Debug, Clone, PartialEq)]
pub struct CompartmentHit {
    /// Its session.
    pub session: SessionId,
    /// The first ordinal it covers; with the session, its key.
    pub start_ordinal: u64,
    /// Negated BM25, higher is better.
    pub score: f64,
}

/// A memory that matched.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryHit {
    /// The memory's id.
    pub id: u64,
    /// Negated BM25, higher is better.
    pub score: f64,
}

const DOING: &str = "searching";

/// `first`, then the hits of `then` it does not hold, at most `limit` in all. BM25 scores of
/// two expressions do not compare, and a caller fuses hits by score, so `then`'s scores are
/// scaled to rank below the last of `first`, in their own order.
fn ranked_after(mut first: Vec<MessageHit>, then: Vec<MessageHit>, limit: u32) -> Vec<MessageHit> {
    let floor = first.last().map(|hit| hit.score);
    let best = then.first().map_or(0.0, |hit| hit.score);
    for hit in then {
        if first.len() >= limit as usize {
            break;
        }
        let held = first
            .iter()
            .any(|kept| kept.session == hit.session && kept.ordinal == hit.ordinal);
        if held {
            continue;
        }
        let score = match floor {
            Some(floor) if best > 0.0 => floor * 0.999 * (hit.score / best).min(1.0),
            Some(floor) => floor * 0.999,
            None => hit.score,
        };
        first.push(MessageHit { score, ..hit });
    }
    first
}

impl ReadTx<'_> {
    /// The best `limit` messages for `query` within `scope`.
    ///
    /// Ranking every match of a common word costs tens of milliseconds on a large log, so
    /// the cheap questions are asked first. A query that is made names alone
    /// ([`FtsQuery::made_names`]: `old_field`, `self.do_query`) first asks for the messages
    /// whose own words name them, each as one phrase: the agent looking for a name it lost
    /// wants where it was written, not every message that says `old` and `field` apart or
    /// that neighbours one naming it (`bench recall-dropped` on the swe set at 64K: recall@5
    /// 0.884 to 0.888, recall@1 0.583 to 0.587; LoCoMo unchanged). When they are too few to
    /// answer alone they still come first, above what the next question finds, those whose
    /// text writes the name exactly first of all ([`Self::split_written`]: a phrase also
    /// matches `models/fields` for `model_fields`; recall-dropped at 64K by identifier with
    /// neighbours' shares off for such queries, recall@1 0.906 to 0.967): a name
    /// written in one message was otherwise lost behind every message holding one of its
    /// words (recall@5 0.888 to 0.946 at 64K and to 0.953 at 200K, recall@1 0.587 to 0.710;
    /// LoCoMo unchanged, where ranking the all-words question's few finds first the same way
    /// cost 0.011 of MRR, so that one does not). A sentence around made names (`why does
    /// self.do_query fail`) first asks the same of its names, any of them, and ranks what that
    /// finds first, then the sentence's words rank the rest (the bench's sentence queries:
    /// recall@5 0.884 to 0.938 at 64K, 0.893 to 0.935 at 200K; LoCoMo, whose questions name
    /// little, unchanged). When at least a fifth of
    /// `limit` messages in scope hold every word, those are the answer (finding them
    /// intersects the words' postings instead of ranking their union; callers ask for more
    /// candidates than they show, so a fifth still fills a page); otherwise any word counts.
    /// And the index ranks alone before its best `limit × 20` (at least 500) are joined to
    /// their sessions and filtered by scope; when the scope leaves fewer than `limit` of
    /// those (a store shared by many projects), every match is ranked.
    ///
    /// In a gated session only messages a provider accepted are found
    /// (`WriteTx::gate_until_accepted`).
    ///
    /// A message's own words weigh 1.0, the start of the message before it 0.4 and of the
    /// message after it 0.3. The successor's weight was measured on the shared LoCoMo file
    /// (`bench locomo --mode bm25`): recall@10 0.721 without the column, 0.727 / 0.727 /
    /// 0.729 / 0.720 / 0.706 at 0 / 0.2 / 0.3 / 0.5 / 0.7.
    pub fn search_messages(
        &self,
        query: &FtsQuery,
        scope: &SearchScope,
        limit: u32,
    ) -> Result<Vec<MessageHit>> {
        let pool = i64::from(limit).saturating_mul(20).max(500);
        let enough = (limit as usize).div_ceil(5);
        let mut found = Vec::new();
        if let Some(made_names) = &query.made_names {
            let own = format!("body : ({made_names})");
            let hits = self.search_messages_in_pool(&own, scope, limit, pool)?;
            let tier = hits.len();
            found = self.written_first(found, hits, query, limit)?;
            if tier >= enough {
                return Ok(found);
            }
        }
        if let Some(named) = &query.named_in_text {
            let own = format!("body : ({named})");
            let hits = self.search_messages_in_pool(&own, scope, limit, pool)?;
            found = self.written_first(found, hits, query, limit)?;
        }
        if query.terms.len() > 1 {
            let hits = self.search_messages_in_pool(&query.all_words, scope, limit, pool)?;
            if hits.len() >= enough {
                return Ok(ranked_after(found, hits, limit));
            }
        }
        // The same expression over every match supersedes its pool's answer, scores as they are.
        let mut hits = self.search_messages_in_pool(&query.expression, scope, limit, pool)?;
        if hits.len() < limit as usize {
            hits = self.search_messages_in_pool(&query.expression, scope, limit, -1)?;
        }
        Ok(ranked_after(found, hits, limit))
    }

    /// `found`, then the tier `hits` that write one of the query's names exactly, then the
    /// rest of the tier ([`Self::split_written`]).
    fn written_first(
        &self,
        found: Vec<MessageHit>,
        hits: Vec<MessageHit>,
        query: &FtsQuery,
        limit: u32,
    ) -> Result<Vec<MessageHit>> {
        let (written, rest) = self.split_written(hits, &query.written)?;
        let found = ranked_after(found, written, limit);
        Ok(ranked_after(found, rest, limit))
    }

    /// [`Self::search_messages`] of the FTS5 `expression` over the index's best `pool`
    /// matches (`-1`: all).
    fn search_messages_in_pool(
        &self,
        expression: &str,
        scope: &SearchScope,
        limit: u32,
        pool: i64,
    ) -> Result<Vec<MessageHit>> {
        let (since, until) = scope.bounds();
        let mut statement = self
            .conn()
            .prepare_cached(
                "SELECT m.session_id, m.ordinal, m.hash, m.created_ms, ranked.score
                 FROM (SELECT rowid, -bm25(message_search, 1.0, 0.4, 0.3) AS score
                       FROM message_search WHERE message_search MATCH ?1
                       ORDER BY score DESC LIMIT ?7) AS ranked
                 JOIN messages m ON m.rowid = ranked.rowid
                 JOIN sessions s ON s.id = m.session_id
                 WHERE (s.accepted_messages IS NULL OR m.ordinal < s.accepted_messages)
                   AND (?2 IS NULL OR s.project = ?2)
                   AND (?3 IS NULL OR m.session_id = ?3)
                   AND m.created_ms >= ?4 AND m.created_ms < ?5
                 ORDER BY ranked.score DESC, m.rowid
                 LIMIT ?6",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map(
                rusqlite::params![
                    expression,
                    scope.project.as_ref().map(ProjectId::as_str),
                    scope.session.as_ref().map(SessionId::as_str),
                    since,
                    until,
                    limit,
                    pool,
                ],
                |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, u64>(1)?,
                        row.get::<_, Vec<u8>>(2)?,
                        row.get::<_, i64>(3)?,
                        row.get::<_, f64>(4)?,
                    ))
                },
            )
            .map_err(StoreError::sqlite(DOING))?;
        let mut hits = Vec::new();
        for row in rows {
            let (session, ordinal, hash, created_ms, score) =
                row.map_err(StoreError::sqlite(DOING))?;
            let session = session_of(session)?;
            let hash =
                hash_from_column("hash", &hash).map_err(|problem| StoreError::CorruptRow {
                    session: session.clone(),
                    ordinal,
                    problem,
                })?;
            hits.push(MessageHit {
                session,
                ordinal,
                hash,
                created_ms,
                score,
            });
        }
        Ok(hits)
    }

    /// The best `limit` compartments for `query` within `scope`; a compartment is in the
    /// time window when any of its span is.
    pub fn search_compartments(
        &self,
        query: &FtsQuery,
        scope: &SearchScope,
        limit: u32,
    ) -> Result<Vec<CompartmentHit>> {
        let (since, until) = scope.bounds();
        let mut statement = self
            .conn()
            .prepare_cached(
                "SELECT c.session_id, c.start_ordinal, -bm25(compartment_search) AS score
                 FROM compartment_search
                 JOIN compartments c ON c.session_id = compartment_search.session_id
                                    AND c.start_ordinal = compartment_search.start_ordinal
                 JOIN sessions s ON s.id = c.session_id
                 WHERE compartment_search MATCH ?1
                   AND (?2 IS NULL OR s.project = ?2)
                   AND (?3 IS NULL OR c.session_id = ?3)
                   AND c.end_ms >= ?4 AND c.start_ms < ?5
                 ORDER BY score DESC, c.session_id, c.start_ordinal
                 LIMIT ?6",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map(
                rusqlite::params![
                    query.expression,
                    scope.project.as_ref().map(ProjectId::as_str),
                    scope.session.as_ref().map(SessionId::as_str),
                    since,
                    until,
                    limit,
                ],
                |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, u64>(1)?,
                        row.get::<_, f64>(2)?,
                    ))
                },
            )
            .map_err(StoreError::sqlite(DOING))?;
        let mut hits = Vec::new();
        for row in rows {
            let (session, start_ordinal, score) = row.map_err(StoreError::sqlite(DOING))?;
            hits.push(CompartmentHit {
                session: session_of(session)?,
                start_ordinal,
                score,
            });
        }
        Ok(hits)
    }

    /// The best `limit` live (not archived) memories of `project` for `query`, last changed
    /// within the scope's time window.
    pub fn search_memories(
        &self,
        query: &FtsQuery,
        project: &ProjectId,
        scope: &SearchScope,
        limit: u32,
    ) -> Result<Vec<MemoryHit>> {
        self.memory_fts_hits(
            "SELECT m.id, -bm25(memory_search) AS score
             FROM memory_search JOIN memories m ON m.id = memory_search.rowid
             WHERE memory_search MATCH ?1 AND m.project_id = ?2 AND m.status <> 'archived'
               AND m.updated_ms >= ?3 AND m.updated_ms < ?4
             ORDER BY score DESC, m.id
             LIMIT ?5",
            DOING,
            query,
            project,
            scope,
            limit,
        )
    }

    /// [`Self::project_fts_hits`] read as memory hits.
    pub(crate) fn memory_fts_hits(
        &self,
        sql: &str,
        doing: &'static str,
        query: &FtsQuery,
        project: &ProjectId,
        scope: &SearchScope,
        limit: u32,
    ) -> Result<Vec<MemoryHit>> {
        let hits = self.project_fts_hits(sql, doing, query, project, scope, limit)?;
        Ok(hits
            .into_iter()
            .map(|(id, score)| MemoryHit { id, score })
            .collect())
    }

    /// The `(id, negated BM25)` rows of a project's full-text search: `sql` binds the
    /// query as ?1, the project as ?2, `scope`'s time window as ?3 and ?4, and `limit` as
    /// ?5.
    pub(crate) fn project_fts_hits(
        &self,
        sql: &str,
        doing: &'static str,
        query: &FtsQuery,
        project: &ProjectId,
        scope: &SearchScope,
        limit: u32,
    ) -> Result<Vec<(u64, f64)>> {
        let (since, until) = scope.bounds();
        let mut statement = self
            .conn()
            .prepare_cached(sql)
            .map_err(StoreError::sqlite(doing))?;
        let rows = statement
            .query_map(
                rusqlite::params![query.expression, project.as_str(), since, until, limit],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .map_err(StoreError::sqlite(doing))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(StoreError::sqlite(doing))
    }
}

fn session_of(id: String) -> Result<SessionId> {
    SessionId::new(id.clone()).map_err(|err| StoreError::CorruptSession {
        id,
        problem: RowProblem::Id(err),
    })
}
