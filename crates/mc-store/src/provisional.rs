//! The provisional compartment (schema v15): the last compartment of a session's history,
//! published before anything showed that its episode had ended.
//!
//! Holding such a compartment back until a later run confirms it keeps its messages raw in
//! every request meanwhile, and on long sessions that wait is most of what a bust has to
//! rewrite. So it is published (rendered and searched like any other, its messages leave
//! the prompt) and marked: the historian's next run reads its range again together with what
//! followed, and replaces it in one transaction with its own answer.

use mc_core::SessionId;

use crate::error::{Result, StoreError};
use crate::store::{ReadTx, WriteTx};

impl ReadTx<'_> {
    /// Where the session's provisional compartment starts, if its last one is provisional.
    pub fn provisional_start(&self, session: &SessionId) -> Result<Option<u64>> {
        use rusqlite::OptionalExtension;
        self.conn()
            .prepare_cached(
                "SELECT start_ordinal FROM provisional_compartments WHERE session_id = ?1",
            )
            .and_then(|mut statement| {
                statement
                    .query_row([session.as_str()], |row| row.get(0))
                    .optional()
            })
            .map_err(StoreError::sqlite("reading the provisional compartment"))
    }
}

impl WriteTx<'_> {
    /// Marks the session's last compartment, which starts at `start_ordinal`, provisional.
    /// Refused ([`StoreError::CompartmentGap`]) when no compartment starts there or it is
    /// not the last.
    pub fn mark_provisional(&self, session: &SessionId, start_ordinal: u64) -> Result<()> {
        let last_start = self
            .compartments_from(session, start_ordinal)?
            .last()
            .map(|compartment| compartment.start_ordinal);
        if last_start != Some(start_ordinal) {
            return Err(StoreError::CompartmentGap {
                session: session.clone(),
                reason: format!(
                    "the compartment marked provisional must be the last, starting at \
                     {start_ordinal}; the last starts at {last_start:?}"
                ),
            });
        }
        self.conn()
            .execute(
                "INSERT INTO provisional_compartments (session_id, start_ordinal) VALUES (?1, ?2)
                 ON CONFLICT (session_id) DO UPDATE SET start_ordinal = excluded.start_ordinal",
                rusqlite::params![session.as_str(), start_ordinal],
            )
            .map_err(StoreError::sqlite("marking the provisional compartment"))?;
        Ok(())
    }

    /// Removes the session's provisional compartment, to be replaced by the run that read its
    /// range again; returns where it started (the history now ends there), or `None` when
    /// the session has none.
    pub fn reopen_provisional(&self, session: &SessionId) -> Result<Option<u64>> {
        const DOING: &str = "reopening the provisional compartment";
        let Some(start) = self.provisional_start(session)? else {
            return Ok(None);
        };
        let conn = self.conn();
        conn.execute(
            "DELETE FROM compartments WHERE session_id = ?1 AND start_ordinal >= ?2",
            rusqlite::params![session.as_str(), start],
        )
        .map_err(StoreError::sqlite(DOING))?;
        self.settle_provisional(session)?;
        Ok(Some(start))
    }

    /// Takes the session's last compartment as final (a later publish that confirms it, or a
    /// history replaced whole).
    pub fn settle_provisional(&self, session: &SessionId) -> Result<()> {
        self.conn()
            .execute(
                "DELETE FROM provisional_compartments WHERE session_id = ?1",
                [session.as_str()],
            )
            .map_err(StoreError::sqlite("settling the provisional compartment"))?;
        Ok(())
    }
}
