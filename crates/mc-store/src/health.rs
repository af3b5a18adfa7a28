//! A read-only health summary of the store, for `doctor` and `status`.

use crate::error::{Result, StoreError};
use crate::store::ReadTx;

/// What an operator checks first when something looks wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreHealth {
    /// `PRAGMA user_version`: the schema version the file is at.
    pub schema_version: u32,
    /// The SQLite library version compiled in.
    pub sqlite_version: &'static str,
    /// The journal mode; `wal` when healthy.
    pub journal_mode: String,
    /// Sessions stored.
    pub sessions: u64,
    /// Raw messages stored, over all sessions.
    pub messages: u64,
}

impl ReadTx<'_> {
    /// Reads the health summary in this transaction's snapshot.
    pub fn health(&self) -> Result<StoreHealth> {
        let conn = self.conn();
        let schema_version: u32 = conn
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .map_err(StoreError::sqlite("reading the schema version"))?;
        let journal_mode: String = conn
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .map_err(StoreError::sqlite("reading the journal mode"))?;
        let count = |sql: &str, doing: &'static str| -> Result<u64> {
            conn.query_row(sql, [], |row| row.get::<_, i64>(0))
                .map(|n| u64::try_from(n).unwrap_or(0))
                .map_err(StoreError::sqlite(doing))
        };
        Ok(StoreHealth {
            schema_version,
            sqlite_version: rusqlite::version(),
            journal_mode,
            sessions: count("SELECT count(*) FROM sessions", "counting sessions")?,
            messages: count("SELECT count(*) FROM messages", "counting messages")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use mc_core::{Host, Message, Part, Role, SessionId};

    use crate::{NewSession, SCHEMA_VERSION, Store};

    #[test]
    fn health_counts_what_is_stored() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        let id = SessionId::new("s1").unwrap();
        store
            .write(|tx| {
                tx.upsert_session(
                    &NewSession {
                        id: id.clone(),
                        host: Host::ClaudeCode,
                        project: None,
                    },
                    1,
                )?;
                tx.append_messages(
                    &id,
                    0,
                    &[Message::new(Role::User, vec![Part::text("hi")])],
                    1,
                )
            })
            .unwrap();
        let health = store.read(|tx| tx.health()).unwrap();
        assert_eq!(health.schema_version, SCHEMA_VERSION);
        assert_eq!(health.journal_mode, "wal");
        assert_eq!((health.sessions, health.messages), (1, 1));
        assert!(health.sqlite_version.starts_with('3'));
    }
}
