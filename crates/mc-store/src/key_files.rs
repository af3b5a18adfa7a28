//! The files the dreamer pinned for each project (schema v29), and the agent's tool calls
//! they are ranked from.
//!
//! A run of `pin_key_files` replaces a project's pins in one statement group, in rank order,
//! so the head, which reads them when it is rebuilt anyway, sees either the old set or the
//! new one. The raw log stays the truth: the task reads the assistant messages of the
//! project's sessions, nothing else.

use mc_core::head::KeyFile;
use mc_core::{ContentHash, Message, ProjectId, Role, SessionId};

use crate::error::{Result, StoreError};
use crate::messages::MessageRow;
use crate::store::{ReadTx, WriteTx};

/// A pinned file with what the dreamer knew of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinnedFile {
    /// What `m[0]` shows.
    pub file: KeyFile,
    /// Reads counted when it was pinned.
    pub reads: u32,
    /// The digest of the whole file when it was read.
    pub content_hash: ContentHash,
}

impl WriteTx<'_> {
    /// Makes `files` (in rank order) `project`'s pinned files, replacing any before.
    pub fn replace_key_files(
        &self,
        project: &ProjectId,
        files: &[PinnedFile],
        now_ms: i64,
    ) -> Result<()> {
        let doing = "replacing a project's key files";
        self.conn()
            .prepare_cached("DELETE FROM key_files WHERE project_id = ?1")
            .and_then(|mut statement| statement.execute([project.as_str()]))
            .map_err(StoreError::sqlite(doing))?;
        let mut insert = self
            .conn()
            .prepare_cached(
                "INSERT INTO key_files
                     (project_id, rank, path, reads, content_hash, text, cut_lines, pinned_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )
            .map_err(StoreError::sqlite(doing))?;
        for (rank, pinned) in files.iter().enumerate() {
            insert
                .execute((
                    project.as_str(),
                    i64::try_from(rank).unwrap_or(i64::MAX),
                    &pinned.file.path,
                    pinned.reads,
                    pinned.content_hash.as_bytes().as_slice(),
                    &pinned.file.text,
                    pinned.file.cut_lines,
                    now_ms,
                ))
                .map_err(StoreError::sqlite(doing))?;
        }
        Ok(())
    }
}

impl ReadTx<'_> {
    /// `project`'s pinned files, in rank order.
    pub fn key_files(&self, project: &ProjectId) -> Result<Vec<PinnedFile>> {
        let doing = "reading a project's key files";
        let rows: Vec<(String, u32, Vec<u8>, String, u32)> = self
            .conn()
            .prepare_cached(
                "SELECT path, reads, content_hash, text, cut_lines FROM key_files
                 WHERE project_id = ?1 ORDER BY rank",
            )
            .and_then(|mut statement| {
                statement
                    .query_map([project.as_str()], |row| {
                        Ok((
                            row.get(0)?,
                            row.get(1)?,
                            row.get(2)?,
                            row.get(3)?,
                            row.get(4)?,
                        ))
                    })?
                    .collect()
            })
            .map_err(StoreError::sqlite(doing))?;
        Ok(rows
            .into_iter()
            .filter_map(|(path, reads, hash, text, cut_lines)| {
                // The schema checks the digest's length; a row that still fails is skipped.
                let content_hash = ContentHash::from_bytes(<[u8; 32]>::try_from(hash).ok()?);
                Some(PinnedFile {
                    file: KeyFile {
                        path,
                        text,
                        cut_lines,
                    },
                    reads,
                    content_hash,
                })
            })
            .collect())
    }

    /// The assistant messages of `project`'s sessions stored at or after `since_ms`, with
    /// when each was stored, oldest first: where the agent's tool calls are.
    pub fn project_assistant_messages_since(
        &self,
        project: &ProjectId,
        since_ms: i64,
    ) -> Result<Vec<(i64, Message)>> {
        let doing = "reading a project's assistant messages";
        let mut statement = self
            .conn()
            .prepare_cached(
                "SELECT m.ordinal, m.role, m.content, m.hash, m.chain, m.created_ms, m.session_id
                 FROM messages AS m JOIN sessions AS s ON s.id = m.session_id
                 WHERE s.project = ?1 AND m.role = ?2 AND m.created_ms >= ?3
                 ORDER BY m.created_ms, m.session_id, m.ordinal",
            )
            .map_err(StoreError::sqlite(doing))?;
        let rows = statement
            .query_map(
                (project.as_str(), Role::Assistant.as_str(), since_ms),
                |row| Ok((MessageRow::from_row(row)?, row.get::<_, String>(6)?)),
            )
            .map_err(StoreError::sqlite(doing))?;
        rows.map(|row| {
            let (row, session) = row.map_err(StoreError::sqlite(doing))?;
            let session =
                SessionId::new(session.as_str()).map_err(|error| StoreError::CorruptSession {
                    id: session.clone(),
                    problem: crate::error::RowProblem::Id(error),
                })?;
            let stored = row.decode(&session)?;
            Ok((stored.created_ms, stored.message))
        })
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use mc_core::{Part, SessionId};

    use crate::{NewSession, Store};

    use super::*;

    fn pinned(path: &str, reads: u32) -> PinnedFile {
        PinnedFile {
            file: KeyFile {
                path: path.into(),
                text: format!("// {path}\n"),
                cut_lines: 0,
            },
            reads,
            content_hash: ContentHash::from_bytes([7; 32]),
        }
    }

    #[test]
    fn a_run_replaces_the_projects_pins_in_rank_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        let project = ProjectId::new("git:abc").unwrap();
        let other = ProjectId::new("git:def").unwrap();
        store
            .write(|tx| {
                tx.replace_key_files(&project, &[pinned("b.rs", 5), pinned("a.rs", 3)], 1)?;
                tx.replace_key_files(&other, &[pinned("c.rs", 4)], 1)
            })
            .unwrap();
        let read = |project: &ProjectId| store.read(|tx| tx.key_files(project)).unwrap();
        assert_eq!(read(&project), [pinned("b.rs", 5), pinned("a.rs", 3)]);
        store
            .write(|tx| tx.replace_key_files(&project, &[pinned("a.rs", 6)], 2))
            .unwrap();
        assert_eq!(read(&project), [pinned("a.rs", 6)]);
        assert_eq!(
            read(&other),
            [pinned("c.rs", 4)],
            "another project's pins stay"
        );
    }

    #[test]
    fn the_projects_assistant_messages_since_a_time_are_read_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        let project = ProjectId::new("git:abc").unwrap();
        let say = |role, text: &str| Message::new(role, vec![Part::text(text)]);
        store
            .write(|tx| {
                for (id, project, at_ms) in [("s-1", Some(&project), 100), ("s-2", None, 100)] {
                    let session = SessionId::new(id).unwrap();
                    tx.upsert_session(
                        &NewSession {
                            id: session.clone(),
                            host: mc_core::Host::ClaudeCode,
                            project: project.cloned(),
                        },
                        at_ms,
                    )?;
                    let messages = [
                        say(Role::User, "task"),
                        say(Role::Assistant, &format!("{id} reads")),
                        say(Role::User, "output"),
                        say(Role::Assistant, &format!("{id} reads again")),
                    ];
                    for ((ordinal, at_ms), message) in
                        (0..).zip((at_ms..).step_by(10)).zip(&messages)
                    {
                        tx.append_messages(
                            &session,
                            ordinal,
                            std::slice::from_ref(message),
                            at_ms,
                        )?;
                    }
                }
                Ok(())
            })
            .unwrap();
        let read = store
            .read(|tx| tx.project_assistant_messages_since(&project, 115))
            .unwrap();
        assert_eq!(read, [(130, say(Role::Assistant, "s-1 reads again"))]);
    }
}
