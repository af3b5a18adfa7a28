//! The transform engine's persisted decisions: tag numbers, drops, the engine state blob and
//! the pass log. Each pass writes its decisions in the same transaction as its ingest, so a
//! restart replays exactly what the provider last saw.

use mc_core::SessionId;
use mc_core::reduction::DropState;
use mc_core::tags::{TagAssignment, TagNo, UnitRef};
use rusqlite::OptionalExtension;

use crate::error::{Result, StoreError};
use crate::store::{ReadTx, WriteTx};

/// A drop as stored: queued until a busting pass lands it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropRow {
    /// The dropped unit's tag.
    pub tag: TagNo,
    /// Who asked: `ctx_reduce`, `operator`, or a reclaim lane's name.
    pub source: String,
    /// When it was queued.
    pub queued_ms: i64,
    /// The pass that landed it, once landed.
    pub landed_pass: Option<u64>,
}

/// One pass of the engine, for the ledger and `status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassRow {
    /// The pass's number within the session, from 0.
    pub seq: u64,
    /// When it ran.
    pub at_ms: i64,
    /// `cache_hit`, `soft_bust` or `hard_fold`.
    pub kind: String,
    /// Why it busted, when it did.
    pub cause: Option<String>,
    /// Tokens its landed drops removed (an estimate).
    pub tokens_removed: u64,
}

impl ReadTx<'_> {
    /// Every tag of the session, in tag order.
    pub fn tags(&self, session: &SessionId) -> Result<Vec<TagAssignment>> {
        const DOING: &str = "reading tags";
        let mut statement = self
            .conn()
            .prepare_cached(
                "SELECT tag, ordinal, part FROM tags WHERE session_id = ?1 ORDER BY tag",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map([session.as_str()], |row| {
                Ok(TagAssignment {
                    tag: TagNo(row.get(0)?),
                    unit: UnitRef {
                        ordinal: row.get(1)?,
                        part: row.get(2)?,
                    },
                })
            })
            .map_err(StoreError::sqlite(DOING))?;
        rows.map(|row| row.map_err(StoreError::sqlite(DOING)))
            .collect()
    }

    /// Every drop of the session, in tag order.
    pub fn drops(&self, session: &SessionId) -> Result<Vec<DropRow>> {
        const DOING: &str = "reading drops";
        let mut statement = self
            .conn()
            .prepare_cached(
                "SELECT tag, source, queued_ms, landed_pass FROM drops WHERE session_id = ?1 ORDER BY tag",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map([session.as_str()], |row| {
                Ok(DropRow {
                    tag: TagNo(row.get(0)?),
                    source: row.get(1)?,
                    queued_ms: row.get(2)?,
                    landed_pass: row.get(3)?,
                })
            })
            .map_err(StoreError::sqlite(DOING))?;
        rows.map(|row| row.map_err(StoreError::sqlite(DOING)))
            .collect()
    }

    /// The tags of the session's drops, queued and landed: what every pass needs of them,
    /// read without the source names [`drops`](ReadTx::drops) allocates a string for each.
    pub fn drop_state(&self, session: &SessionId) -> Result<DropState> {
        const DOING: &str = "reading drops";
        let mut statement = self
            .conn()
            .prepare_cached(
                "SELECT tag, landed_pass IS NOT NULL FROM drops WHERE session_id = ?1 ORDER BY tag",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let mut rows = statement
            .query([session.as_str()])
            .map_err(StoreError::sqlite(DOING))?;
        let mut state = DropState::default();
        while let Some(row) = rows.next().map_err(StoreError::sqlite(DOING))? {
            let tag = TagNo(row.get(0).map_err(StoreError::sqlite(DOING))?);
            if row.get(1).map_err(StoreError::sqlite(DOING))? {
                state.landed.insert(tag);
            } else {
                state.queued.insert(tag);
            }
        }
        Ok(state)
    }

    /// The engine's state blob (JSON written by the engine), if a pass has run.
    pub fn engine_state(&self, session: &SessionId) -> Result<Option<String>> {
        self.conn()
            .prepare_cached("SELECT state FROM engine_state WHERE session_id = ?1")
            .and_then(|mut statement| {
                statement
                    .query_row([session.as_str()], |row| row.get(0))
                    .optional()
            })
            .map_err(StoreError::sqlite("reading the engine state"))
    }

    /// The newest `limit` passes, newest first.
    pub fn passes(&self, session: &SessionId, limit: usize) -> Result<Vec<PassRow>> {
        const DOING: &str = "reading passes";
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut statement = self
            .conn()
            .prepare_cached(
                "SELECT seq, at_ms, kind, cause, tokens_removed FROM passes
                 WHERE session_id = ?1 ORDER BY seq DESC LIMIT ?2",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map((session.as_str(), limit), |row| {
                Ok(PassRow {
                    seq: row.get(0)?,
                    at_ms: row.get(1)?,
                    kind: row.get(2)?,
                    cause: row.get(3)?,
                    tokens_removed: row.get(4)?,
                })
            })
            .map_err(StoreError::sqlite(DOING))?;
        rows.map(|row| row.map_err(StoreError::sqlite(DOING)))
            .collect()
    }

    /// The session's newest tag number, `None` before its first tag; one indexed lookup,
    /// where reading every tag would cost a pass time proportional to the session.
    pub fn newest_tag(&self, session: &SessionId) -> Result<Option<TagNo>> {
        self.conn()
            .prepare_cached("SELECT MAX(tag) FROM tags WHERE session_id = ?1")
            .and_then(|mut statement| {
                statement.query_row([session.as_str()], |row| row.get::<_, Option<u32>>(0))
            })
            .map(|tag| tag.map(TagNo))
            .map_err(StoreError::sqlite("reading the newest tag"))
    }

    /// The number the next pass gets.
    pub fn next_pass_seq(&self, session: &SessionId) -> Result<u64> {
        self.conn()
            .prepare_cached("SELECT COALESCE(MAX(seq) + 1, 0) FROM passes WHERE session_id = ?1")
            .and_then(|mut statement| statement.query_row([session.as_str()], |row| row.get(0)))
            .map_err(StoreError::sqlite("numbering a pass"))
    }
}

impl WriteTx<'_> {
    /// Stores new tag assignments; a unit or number already taken is a constraint error,
    /// because the same unit must always keep the same number.
    pub fn insert_tags(&self, session: &SessionId, assignments: &[TagAssignment]) -> Result<()> {
        let mut insert = self
            .conn()
            .prepare_cached(
                "INSERT INTO tags (session_id, tag, ordinal, part) VALUES (?1, ?2, ?3, ?4)",
            )
            .map_err(StoreError::sqlite("storing tags"))?;
        for assignment in assignments {
            insert
                .execute((
                    session.as_str(),
                    assignment.tag.0,
                    assignment.unit.ordinal,
                    assignment.unit.part,
                ))
                .map_err(StoreError::sqlite("storing tags"))?;
        }
        Ok(())
    }

    /// Queues a drop; returns false when the tag already has one (queued or landed).
    pub fn queue_drop(
        &self,
        session: &SessionId,
        tag: TagNo,
        source: &str,
        now_ms: i64,
    ) -> Result<bool> {
        self.note_drop_write();
        let inserted = self
            .conn()
            .prepare_cached(
                "INSERT INTO drops (session_id, tag, source, queued_ms) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (session_id, tag) DO NOTHING",
            )
            .and_then(|mut statement| statement.execute((session.as_str(), tag.0, source, now_ms)))
            .map_err(StoreError::sqlite("queueing a drop"))?;
        Ok(inserted == 1)
    }

    /// Marks queued drops as landed by pass `seq`; already landed ones keep their pass.
    pub fn land_drops(&self, session: &SessionId, tags: &[TagNo], seq: u64) -> Result<()> {
        if tags.is_empty() {
            return Ok(());
        }
        self.note_drop_write();
        let mut update = self
            .conn()
            .prepare_cached(
                "UPDATE drops SET landed_pass = ?3 WHERE session_id = ?1 AND tag = ?2 AND landed_pass IS NULL",
            )
            .map_err(StoreError::sqlite("landing drops"))?;
        for tag in tags {
            update
                .execute((session.as_str(), tag.0, seq))
                .map_err(StoreError::sqlite("landing drops"))?;
        }
        Ok(())
    }

    /// Replaces the engine's state blob.
    pub fn put_engine_state(&self, session: &SessionId, state: &str) -> Result<()> {
        self.conn()
            .prepare_cached(
                "INSERT INTO engine_state (session_id, state) VALUES (?1, ?2)
                 ON CONFLICT (session_id) DO UPDATE SET state = excluded.state",
            )
            .and_then(|mut statement| statement.execute((session.as_str(), state)))
            .map(|_| ())
            .map_err(StoreError::sqlite("storing the engine state"))
    }

    /// Appends a pass to the log.
    pub fn record_pass(&self, session: &SessionId, pass: &PassRow) -> Result<()> {
        self.conn()
            .prepare_cached(
                "INSERT INTO passes (session_id, seq, at_ms, kind, cause, tokens_removed)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .and_then(|mut statement| {
                statement.execute((
                    session.as_str(),
                    pass.seq,
                    pass.at_ms,
                    pass.kind.as_str(),
                    pass.cause.as_deref(),
                    pass.tokens_removed,
                ))
            })
            .map(|_| ())
            .map_err(StoreError::sqlite("recording a pass"))
    }
}

#[cfg(test)]
mod tests {
    use mc_core::{Host, Message, Part, Role};

    use super::*;
    use crate::{NewSession, Store};

    fn store_with_session() -> (tempfile::TempDir, Store, SessionId) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        let id = SessionId::new("s").unwrap();
        store
            .write(|tx| {
                tx.upsert_session(
                    &NewSession {
                        id: id.clone(),
                        host: Host::Other,
                        project: None,
                    },
                    1,
                )?;
                tx.append_messages(
                    &id,
                    0,
                    &[Message::new(
                        Role::User,
                        vec![Part::text("a"), Part::text("b")],
                    )],
                    1,
                )
            })
            .unwrap();
        (dir, store, id)
    }

    #[test]
    fn tags_drops_state_and_passes_round_trip() {
        let (_dir, store, id) = store_with_session();
        let assignments = vec![
            TagAssignment {
                tag: TagNo(1),
                unit: UnitRef {
                    ordinal: 0,
                    part: 0,
                },
            },
            TagAssignment {
                tag: TagNo(2),
                unit: UnitRef {
                    ordinal: 0,
                    part: 1,
                },
            },
        ];
        store
            .write(|tx| {
                tx.insert_tags(&id, &assignments)?;
                assert!(tx.queue_drop(&id, TagNo(1), "ctx_reduce", 5)?);
                assert!(
                    !tx.queue_drop(&id, TagNo(1), "stale-output", 6)?,
                    "one drop per tag"
                );
                tx.land_drops(&id, &[TagNo(1)], 0)?;
                tx.land_drops(&id, &[TagNo(1)], 3)?;
                tx.put_engine_state(&id, r#"{"v":1}"#)?;
                tx.put_engine_state(&id, r#"{"v":2}"#)?;
                tx.record_pass(
                    &id,
                    &PassRow {
                        seq: 0,
                        at_ms: 9,
                        kind: "hard_fold".into(),
                        cause: Some("first_render".into()),
                        tokens_removed: 0,
                    },
                )
            })
            .unwrap();
        store
            .read(|tx| {
                assert_eq!(tx.tags(&id)?, assignments);
                let drops = tx.drops(&id)?;
                assert_eq!(drops.len(), 1);
                assert_eq!(
                    (drops[0].source.as_str(), drops[0].landed_pass),
                    ("ctx_reduce", Some(0))
                );
                assert_eq!(tx.engine_state(&id)?.as_deref(), Some(r#"{"v":2}"#));
                assert_eq!(tx.passes(&id, 10)?.len(), 1);
                assert_eq!(tx.next_pass_seq(&id)?, 1);
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn a_unit_keeps_one_number() {
        let (_dir, store, id) = store_with_session();
        let first = TagAssignment {
            tag: TagNo(1),
            unit: UnitRef {
                ordinal: 0,
                part: 0,
            },
        };
        let again = TagAssignment {
            tag: TagNo(7),
            unit: UnitRef {
                ordinal: 0,
                part: 0,
            },
        };
        store.write(|tx| tx.insert_tags(&id, &[first])).unwrap();
        assert!(store.write(|tx| tx.insert_tags(&id, &[again])).is_err());
        let unknown = store.write(|tx| tx.queue_drop(&id, TagNo(99), "operator", 1));
        assert!(unknown.is_err(), "a drop must name a stored tag");
    }
}
