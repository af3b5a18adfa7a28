//! Within a search's made-name tier, the messages that write a name exactly come first.
//!
//! The tier asks FTS5 for each made name as a phrase, and a phrase is words side by side
//! after tokenising and stemming: `"model fields"` also matches the path `models/fields`,
//! `"subquery query"` the text `Subquery. Query`. For an agent looking for where it saw
//! `model_fields`, those rows are noise that outranks the one that wrote it (a long tool
//! output loses to a short message on BM25's length norm). The index keeps no text
//! (contentless), so the few rows of the tier are read back from the raw log and checked.

use mc_core::search::writes_name;

use crate::error::{Result, StoreError};
use crate::search::MessageHit;
use crate::search_index::words_of;
use crate::store::ReadTx;

/// The tier's first rows checked against their text: a tier larger than this answers alone
/// anyway ([`ReadTx::search_messages`]), and reading back a long tool output costs time.
const CHECKED: usize = 25;

const DOING: &str = "reading messages back for search";

impl ReadTx<'_> {
    /// `hits` (a made-name tier, best first) split into those whose words write one of
    /// `names` exactly and the rest, each in its order; only the first [`CHECKED`] are
    /// read, the others count as the rest.
    pub(crate) fn split_written(
        &self,
        hits: Vec<MessageHit>,
        names: &[String],
    ) -> Result<(Vec<MessageHit>, Vec<MessageHit>)> {
        if names.is_empty() {
            return Ok((Vec::new(), hits));
        }
        let mut statement = self
            .conn()
            .prepare_cached(
                "SELECT role, content FROM messages WHERE session_id = ?1 AND ordinal = ?2",
            )
            .map_err(StoreError::sqlite(DOING))?;
        let (mut written, mut rest) = (Vec::new(), Vec::new());
        for (at, hit) in hits.into_iter().enumerate() {
            if at >= CHECKED {
                rest.push(hit);
                continue;
            }
            let row: Option<(String, String)> = statement
                .query_row((hit.session.as_str(), hit.ordinal), |row| {
                    Ok((row.get(0)?, row.get(1)?))
                })
                .map(Some)
                .or_else(|err| match err {
                    rusqlite::Error::QueryReturnedNoRows => Ok(None),
                    other => Err(other),
                })
                .map_err(StoreError::sqlite(DOING))?;
            let writes = row.is_some_and(|(role, content)| {
                let words = words_of(&role, &content);
                names.iter().any(|name| writes_name(&words, name))
            });
            if writes {
                written.push(hit);
            } else {
                rest.push(hit);
            }
        }
        Ok((written, rest))
    }
}
