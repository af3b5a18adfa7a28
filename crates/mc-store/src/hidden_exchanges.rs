//! Exchanges the proxy ran with the model on a client's behalf (schema v12).
//!
//! When the proxy executes its own agent tools, the model's calls and their results never
//! reach the client, yet every later request must carry them again, at the same place and
//! byte for byte, or the provider's cached prefix breaks and calls lose their results. The
//! proxy stores each such exchange under an anchor (a hash of the conversation before it,
//! chosen by the proxy) as an opaque JSON splice, and looks it up when a later request
//! passes the same point. The store neither reads nor checks the splice.

use rusqlite::OptionalExtension;

use crate::error::{Result, StoreError};
use crate::store::{ReadTx, WriteTx};

impl ReadTx<'_> {
    /// The splice stored under `anchor`, if any.
    pub fn hidden_exchange(&self, anchor: &str) -> Result<Option<String>> {
        self.conn()
            .prepare_cached("SELECT splice FROM hidden_exchanges WHERE anchor = ?1")
            .and_then(|mut statement| statement.query_row([anchor], |row| row.get(0)).optional())
            .map_err(StoreError::sqlite("reading a hidden exchange"))
    }
}

impl WriteTx<'_> {
    /// Stores `splice` under `anchor`, replacing an earlier one: when a client repeats a
    /// request, the answer it echoes later is the one it received last.
    pub fn put_hidden_exchange(&self, anchor: &str, splice: &str, now_ms: i64) -> Result<()> {
        self.conn()
            .prepare_cached(
                "INSERT INTO hidden_exchanges (anchor, splice, created_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT (anchor) DO UPDATE SET splice = excluded.splice,
                     created_ms = excluded.created_ms",
            )
            .and_then(|mut statement| statement.execute((anchor, splice, now_ms)))
            .map(|_| ())
            .map_err(StoreError::sqlite("storing a hidden exchange"))
    }
}

#[cfg(test)]
mod tests {
    use crate::Store;

    #[test]
    fn the_latest_splice_under_an_anchor_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        assert_eq!(store.read(|tx| tx.hidden_exchange("a")).unwrap(), None);
        store
            .write(|tx| tx.put_hidden_exchange("a", "[1]", 1))
            .unwrap();
        store
            .write(|tx| tx.put_hidden_exchange("a", "[2]", 2))
            .unwrap();
        assert_eq!(
            store.read(|tx| tx.hidden_exchange("a")).unwrap().as_deref(),
            Some("[2]")
        );
    }
}
