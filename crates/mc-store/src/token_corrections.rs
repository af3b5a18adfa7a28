//! Learned token corrections, per model (see `mc_core::window_fit::TokenCorrection`).

use mc_core::window_fit::TokenCorrection;
use rusqlite::OptionalExtension;

use crate::error::{Result, StoreError};
use crate::store::{ReadTx, WriteTx};

impl ReadTx<'_> {
    /// Every learned correction, by model name.
    pub fn token_corrections(&self) -> Result<Vec<(String, TokenCorrection)>> {
        const DOING: &str = "reading token corrections";
        let mut statement = self
            .conn()
            .prepare_cached("SELECT model, permille, samples FROM token_corrections ORDER BY model")
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map([], |row| {
                Ok((
                    row.get(0)?,
                    TokenCorrection {
                        permille: row.get(1)?,
                        samples: row.get(2)?,
                    },
                ))
            })
            .map_err(StoreError::sqlite(DOING))?;
        rows.map(|row| row.map_err(StoreError::sqlite(DOING)))
            .collect()
    }

    /// The correction learned for `model`, if any.
    pub fn token_correction(&self, model: &str) -> Result<Option<TokenCorrection>> {
        self.conn()
            .prepare_cached("SELECT permille, samples FROM token_corrections WHERE model = ?1")
            .and_then(|mut statement| {
                statement
                    .query_row([model], |row| {
                        Ok(TokenCorrection {
                            permille: row.get(0)?,
                            samples: row.get(1)?,
                        })
                    })
                    .optional()
            })
            .map_err(StoreError::sqlite("reading a token correction"))
    }
}

impl WriteTx<'_> {
    /// Stores the correction learned for `model`.
    pub fn put_token_correction(
        &self,
        model: &str,
        correction: TokenCorrection,
        now_ms: i64,
    ) -> Result<()> {
        self.conn()
            .prepare_cached(
                "INSERT INTO token_corrections (model, permille, samples, updated_ms)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (model) DO UPDATE SET permille = excluded.permille,
                     samples = excluded.samples, updated_ms = excluded.updated_ms",
            )
            .and_then(|mut statement| {
                statement.execute((model, correction.permille, correction.samples, now_ms))
            })
            .map(|_| ())
            .map_err(StoreError::sqlite("storing a token correction"))
    }
}

#[cfg(test)]
mod tests {
    use mc_core::window_fit::TokenCorrection;

    use crate::Store;

    #[test]
    fn a_correction_survives_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("context.db");
        let learned = TokenCorrection::default().observe(10_000, 12_500);
        {
            let store = Store::open(&path).unwrap();
            store
                .write_with(|tx| tx.put_token_correction("claude-x", learned, 1))
                .unwrap();
        }
        let store = Store::open(&path).unwrap();
        let read = store
            .read(|tx| {
                Ok((
                    tx.token_correction("claude-x")?,
                    tx.token_correction("gpt")?,
                ))
            })
            .unwrap();
        assert_eq!(read, (Some(learned), None));
        let all = store.read(|tx| tx.token_corrections()).unwrap();
        assert_eq!(all, [("claude-x".to_owned(), learned)]);
    }
}
