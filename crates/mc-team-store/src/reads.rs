//! Reading a project's knowledge from the team store: its memories, its change log by
//! version cursor, and full-text hits ranked by PostgreSQL.

use mc_core::ProjectId;
use mc_store::{Commit, MemoryLogEntry, MemoryStatus, StoredMemory, TeamNote, TeamUse};

use crate::commits::{COMMIT_COLUMNS, commit_of};
use crate::notes::{NOTE_COLUMNS, note_of};

use crate::client::TeamStore;
use crate::error::{Result, postgres};
use crate::rows::{LOG_COLUMNS, MEMORY_COLUMNS, id, log_entry_of, memory_of, pg_id};

/// What changed in a project after a version: the memory rows as they stand now, the log
/// entries to show, the team's use of its memories, its smart notes, the commits added to its
/// index, and the version they reach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Every memory whose row changed after the cursor, oldest first, with the version of
    /// its row.
    pub memories: Vec<(StoredMemory, u64)>,
    /// The change log after the cursor; each entry's id is its version.
    pub log: Vec<MemoryLogEntry>,
    /// The team's use of every memory whose use changed after the cursor: its totals now.
    pub uses: Vec<TeamUse>,
    /// Every smart note changed after the cursor, as it stands now.
    pub notes: Vec<TeamNote>,
    /// The commits added to the project's index after the cursor.
    pub commits: Vec<Commit>,
    /// The newest version seen (the cursor to ask from next time).
    pub head: u64,
}

impl TeamStore {
    /// The project's memories whose status is in `statuses`, oldest first.
    pub async fn memories(
        &self,
        project: &ProjectId,
        statuses: &[MemoryStatus],
    ) -> Result<Vec<StoredMemory>> {
        const DOING: &str = "reading memories";
        let names: Vec<&str> = statuses.iter().map(|status| status.as_str()).collect();
        let client = self.client(DOING).await?;
        let rows = client
            .query(
                &format!(
                    "SELECT {MEMORY_COLUMNS} FROM mc_memories
                     WHERE project_id = $1 AND status = ANY($2) ORDER BY id"
                ),
                &[&project.as_str(), &names],
            )
            .await
            .map_err(postgres(self.redacted(), DOING))?;
        rows.iter()
            .map(|row| memory_of(row).map(|(memory, _)| memory))
            .collect()
    }

    /// The project's memory `id`, or `None`.
    pub async fn memory(&self, project: &ProjectId, id: u64) -> Result<Option<StoredMemory>> {
        const DOING: &str = "reading a memory";
        let client = self.client(DOING).await?;
        let row = client
            .query_opt(
                &format!(
                    "SELECT {MEMORY_COLUMNS} FROM mc_memories WHERE project_id = $1 AND id = $2"
                ),
                &[&project.as_str(), &pg_id(id)],
            )
            .await
            .map_err(postgres(self.redacted(), DOING))?;
        row.map(|row| memory_of(&row).map(|(memory, _)| memory))
            .transpose()
    }

    /// The newest version of the project's log (0 when it has none).
    pub async fn memory_log_head(&self, project: &ProjectId) -> Result<u64> {
        const DOING: &str = "reading the memory log";
        let client = self.client(DOING).await?;
        let head: i64 = client
            .query_one(
                "SELECT COALESCE(MAX(version), 0) FROM mc_memory_log WHERE project_id = $1",
                &[&project.as_str()],
            )
            .await
            .map_err(postgres(self.redacted(), DOING))?
            .get(0);
        Ok(u64::try_from(head).unwrap_or_default())
    }

    /// Everything that changed in the project after version `after`, read in one snapshot
    /// so the rows and the log agree.
    pub async fn changes_since(&self, project: &ProjectId, after: u64) -> Result<Changes> {
        const DOING: &str = "reading changes";
        let mut client = self.client(DOING).await?;
        let tx = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(postgres(self.redacted(), DOING))?;
        let after = pg_id(after);
        // The project's rows of one table past the cursor, in `order`.
        let past = |columns: &str, table: &str, order: &str| {
            let sql = format!(
                "SELECT {columns} FROM {table}
                 WHERE project_id = $1 AND version > $2 ORDER BY {order}"
            );
            let tx = &tx;
            async move {
                tx.query(&sql, &[&project.as_str(), &after])
                    .await
                    .map_err(postgres(self.redacted(), DOING))
            }
        };
        let rows = past(MEMORY_COLUMNS, "mc_memories", "id").await?;
        let log_rows = past(LOG_COLUMNS, "mc_memory_log", "version").await?;
        let use_rows = past(
            "memory_id, retrievals, last_retrieved_ms, last_restated_ms, version",
            "mc_memory_use",
            "version",
        )
        .await?;
        let note_rows = past(NOTE_COLUMNS, "mc_notes", "version").await?;
        let commit_rows = past(COMMIT_COLUMNS, "mc_commits", "version").await?;
        tx.commit()
            .await
            .map_err(postgres(self.redacted(), DOING))?;
        let mut changes = Changes {
            head: u64::try_from(after).unwrap_or_default(),
            ..Changes::default()
        };
        for row in &rows {
            let (memory, version) = memory_of(row)?;
            changes.head = changes.head.max(version);
            changes.memories.push((memory, version));
        }
        for row in &log_rows {
            let entry = log_entry_of(row)?;
            changes.head = changes.head.max(entry.id);
            changes.log.push(entry);
        }
        for row in &use_rows {
            let version = id(row.get(4));
            changes.head = changes.head.max(version);
            changes.uses.push(TeamUse {
                id: id(row.get(0)),
                retrievals: id(row.get(1)),
                last_retrieved_ms: row.get(2),
                last_restated_ms: row.get(3),
            });
        }
        for row in &note_rows {
            let (note, version) = note_of(row)?;
            changes.head = changes.head.max(id(version));
            changes.notes.push(note);
        }
        for row in &commit_rows {
            let (commit, version) = commit_of(row);
            changes.head = changes.head.max(id(version));
            changes.commits.push(commit);
        }
        Ok(changes)
    }

    /// Live memories of the project matching any of `terms`, best first, with their
    /// `ts_rank` score.
    pub async fn search_memories(
        &self,
        project: &ProjectId,
        terms: &[String],
        limit: u32,
    ) -> Result<Vec<(u64, f64)>> {
        const DOING: &str = "searching memories";
        let Some(query) = tsquery(terms) else {
            return Ok(Vec::new());
        };
        let client = self.client(DOING).await?;
        let rows = client
            .query(
                "SELECT id, ts_rank(search, q)::float8 AS score
                 FROM mc_memories, to_tsquery('simple', $2) q
                 WHERE project_id = $1 AND status <> 'archived' AND search @@ q
                 ORDER BY score DESC, id LIMIT $3",
                &[&project.as_str(), &query, &i64::from(limit)],
            )
            .await
            .map_err(postgres(self.redacted(), DOING))?;
        Ok(rows
            .iter()
            .map(|row| {
                (
                    u64::try_from(row.get::<_, i64>(0)).unwrap_or_default(),
                    row.get(1),
                )
            })
            .collect())
    }
}

/// `terms` as a `tsquery` matching any of them; each term keeps only letters and digits, so
/// no query syntax reaches PostgreSQL from the user's text.
fn tsquery(terms: &[String]) -> Option<String> {
    let words: Vec<String> = terms
        .iter()
        .map(|term| {
            term.chars()
                .filter(|c| c.is_alphanumeric())
                .collect::<String>()
        })
        .filter(|word| !word.is_empty())
        .map(|word| format!("'{word}'"))
        .collect();
    (!words.is_empty()).then(|| words.join(" | "))
}
