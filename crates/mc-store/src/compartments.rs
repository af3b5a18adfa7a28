//! The historian's compartments: summaries of contiguous ordinal ranges of a session's raw
//! log, appended in order (schema v6), with the user's own messages of each range (v7) and
//! the files, commands and names it used (v17).

use mc_core::SessionId;
use mc_core::head::{Compartment, Quote, RangeIndex};
use serde_json::{Value, json};

use crate::error::RowProblem;

use crate::error::{Result, StoreError};
use crate::store::{ReadTx, WriteTx};

pub(crate) const COLUMNS: &str = "start_ordinal, end_ordinal, start_ms, end_ms, title, importance, episode, \
     tier_full, tier_condensed, tier_paragraph, tier_line, quotes, range_index";

/// Where compartment rows live: the session's history, or a rebuild's staging area (v8),
/// whose rows have the same columns so a swap copies them unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shelf {
    /// `compartments`: what the engine renders the head from.
    History,
    /// `staged_compartments`: a rebuild in progress (`recomp`).
    Staging,
}

impl Shelf {
    fn table(self) -> &'static str {
        match self {
            Self::History => "compartments",
            Self::Staging => "staged_compartments",
        }
    }
}

impl ReadTx<'_> {
    /// The session's compartments, in ordinal order.
    pub fn compartments(&self, session: &SessionId) -> Result<Vec<Compartment>> {
        self.shelved(Shelf::History, session, 0)
    }

    /// The compartments that end at or after `from`, in ordinal order (the delta `m[1]`
    /// shows since `m[0]` was built). A compartment that replaced a provisional one may start
    /// before `from` while covering what follows it.
    pub fn compartments_from(&self, session: &SessionId, from: u64) -> Result<Vec<Compartment>> {
        self.shelved(Shelf::History, session, from)
    }

    /// The first ordinal no compartment covers yet (0 for a session without any).
    pub fn summarised_until(&self, session: &SessionId) -> Result<u64> {
        self.shelved_until(Shelf::History, session)
    }

    /// The compartments on `shelf` ending at or after `from`, in ordinal order.
    pub(crate) fn shelved(
        &self,
        shelf: Shelf,
        session: &SessionId,
        from: u64,
    ) -> Result<Vec<Compartment>> {
        const DOING: &str = "reading compartments";
        let mut statement = self
            .conn()
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM {} WHERE session_id = ?1 AND end_ordinal >= ?2
                 ORDER BY start_ordinal",
                shelf.table()
            ))
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map(rusqlite::params![session.as_str(), from], |row| {
                Ok(Compartment {
                    start_ordinal: row.get(0)?,
                    end_ordinal: row.get(1)?,
                    start_ms: row.get(2)?,
                    end_ms: row.get(3)?,
                    title: row.get(4)?,
                    importance: row.get(5)?,
                    episode: row.get(6)?,
                    tiers: [row.get(7)?, row.get(8)?, row.get(9)?, row.get(10)?],
                    quotes: Vec::new(),
                    index: RangeIndex::default(),
                })
                .map(|compartment| {
                    (
                        compartment,
                        row.get::<_, String>(11),
                        row.get::<_, String>(12),
                    )
                })
            })
            .map_err(StoreError::sqlite(DOING))?;
        rows.map(|row| {
            let (mut compartment, quotes, index) = row.map_err(StoreError::sqlite(DOING))?;
            let corrupt = |problem| StoreError::CorruptRow {
                session: session.clone(),
                ordinal: compartment.start_ordinal,
                problem,
            };
            let quotes = quotes.map_err(StoreError::sqlite(DOING))?;
            let index = index.map_err(StoreError::sqlite(DOING))?;
            let quotes = decode_quotes(&quotes).ok_or_else(|| corrupt(RowProblem::Quotes))?;
            let index =
                serde_json::from_str(&index).map_err(|_| corrupt(RowProblem::RangeIndex))?;
            compartment.quotes = quotes;
            compartment.index = index;
            Ok(compartment)
        })
        .collect()
    }

    /// The first ordinal the compartments on `shelf` do not cover (0 when it holds none).
    pub(crate) fn shelved_until(&self, shelf: Shelf, session: &SessionId) -> Result<u64> {
        self.conn()
            .prepare_cached(&format!(
                "SELECT COALESCE(MAX(end_ordinal) + 1, 0) FROM {} WHERE session_id = ?1",
                shelf.table()
            ))
            .and_then(|mut statement| statement.query_row([session.as_str()], |row| row.get(0)))
            .map_err(StoreError::sqlite("reading the summarised boundary"))
    }
}

impl WriteTx<'_> {
    /// Appends `compartments` to the session's history. They must continue it: the first
    /// starts at [`ReadTx::summarised_until`], each next one right after the previous, none
    /// past the stored raw log. Anything else is refused whole.
    pub fn append_compartments(
        &self,
        session: &SessionId,
        compartments: &[Compartment],
        now_ms: i64,
    ) -> Result<()> {
        self.shelve(Shelf::History, session, compartments, now_ms)
    }

    /// Appends `compartments` to `shelf`, continuing what it holds (see
    /// [`Self::append_compartments`]).
    pub(crate) fn shelve(
        &self,
        shelf: Shelf,
        session: &SessionId,
        compartments: &[Compartment],
        now_ms: i64,
    ) -> Result<()> {
        self.require_session(session)?;
        let log_end = self.message_count(session)?;
        let gap = |reason: String| StoreError::CompartmentGap {
            session: session.clone(),
            reason,
        };
        let mut next = self.shelved_until(shelf, session)?;
        for compartment in compartments {
            if compartment.start_ordinal != next {
                return Err(gap(format!(
                    "a compartment starts at {} where {next} was expected",
                    compartment.start_ordinal
                )));
            }
            if compartment.end_ordinal < compartment.start_ordinal
                || compartment.end_ordinal >= log_end
            {
                return Err(gap(format!(
                    "a compartment covers {}..={} of a log of {log_end} messages",
                    compartment.start_ordinal, compartment.end_ordinal
                )));
            }
            next = compartment.end_ordinal + 1;
        }
        let mut insert = self
            .conn()
            .prepare_cached(&format!(
                "INSERT INTO {} (session_id, {COLUMNS}, created_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                shelf.table()
            ))
            .map_err(StoreError::sqlite("storing compartments"))?;
        for compartment in compartments {
            let [full, condensed, paragraph, line] = &compartment.tiers;
            insert
                .execute(rusqlite::params![
                    session.as_str(),
                    compartment.start_ordinal,
                    compartment.end_ordinal,
                    compartment.start_ms,
                    compartment.end_ms,
                    compartment.title,
                    compartment.importance,
                    compartment.episode,
                    full,
                    condensed,
                    paragraph,
                    line,
                    encode_quotes(&compartment.quotes),
                    serde_json::to_string(&compartment.index).unwrap_or_else(|_| "{}".to_owned()),
                    now_ms,
                ])
                .map_err(StoreError::sqlite("storing compartments"))?;
        }
        Ok(())
    }
}

/// Quotes as stored: a JSON list of `{"ordinal", "text"}`.
fn encode_quotes(quotes: &[Quote]) -> String {
    Value::Array(
        quotes
            .iter()
            .map(|quote| json!({"ordinal": quote.ordinal, "text": quote.text}))
            .collect(),
    )
    .to_string()
}

/// Quotes read back; `None` when the column is not what [`encode_quotes`] writes.
fn decode_quotes(text: &str) -> Option<Vec<Quote>> {
    let Value::Array(items) = serde_json::from_str(text).ok()? else {
        return None;
    };
    items
        .iter()
        .map(|item| {
            Some(Quote {
                ordinal: item.get("ordinal")?.as_u64()?,
                text: item.get("text")?.as_str()?.to_owned(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use mc_core::head::{Compartment, Quote, RangeIndex};
    use mc_core::{Host, Message, Part, Role, SessionId};

    use crate::{NewSession, Store, StoreError};

    fn compartment(start: u64, end: u64) -> Compartment {
        Compartment {
            start_ordinal: start,
            end_ordinal: end,
            start_ms: start * 1_000,
            end_ms: end * 1_000,
            title: format!("episode {start}"),
            importance: 60,
            episode: "feature".into(),
            tiers: [
                "full".into(),
                "condensed".into(),
                "paragraph".into(),
                "line".into(),
            ],
            quotes: vec![Quote {
                ordinal: start,
                text: format!("do \"{start}\"\nnow"),
            }],
            index: RangeIndex {
                files: vec![format!("src/part_{start}.rs")],
                ran: vec!["cargo test -p \"x\"".into()],
                names: vec![format!("name_{start}"), "MAX_RETRIES".into()],
            },
        }
    }

    fn store_with_log(messages: u64) -> (tempfile::TempDir, Store, SessionId) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        let session = SessionId::new("s").unwrap();
        let log: Vec<Message> = (0..messages)
            .map(|n| Message::new(Role::User, vec![Part::text(format!("m{n}"))]))
            .collect();
        store
            .write(|tx| {
                tx.upsert_session(
                    &NewSession {
                        id: session.clone(),
                        host: Host::Other,
                        project: None,
                    },
                    0,
                )?;
                tx.append_messages(&session, 0, &log, 0)?;
                Ok(())
            })
            .unwrap();
        (dir, store, session)
    }

    /// A name only the index lists finds its compartment (ctx_search, then ctx_expand).
    #[test]
    fn a_name_of_the_index_is_searchable() {
        let (_dir, store, session) = store_with_log(30);
        store
            .write(|tx| tx.append_compartments(&session, &[compartment(0, 9)], 1))
            .unwrap();
        let hits = |query: &str| {
            let query = mc_core::search::fts_query(query).unwrap();
            store
                .read(|tx| tx.search_compartments(&query, &crate::SearchScope::default(), 5))
                .unwrap()
        };
        assert_eq!(hits("name_0").len(), 1);
        assert_eq!(hits("part_0.rs").len(), 1);
        assert!(hits("zebra_quokka").is_empty());
    }

    #[test]
    fn compartments_continue_the_history_in_order_and_read_back() {
        let (_dir, store, session) = store_with_log(30);
        store
            .write(|tx| {
                tx.append_compartments(&session, &[compartment(0, 9), compartment(10, 14)], 1)
            })
            .unwrap();
        store
            .write(|tx| tx.append_compartments(&session, &[compartment(15, 20)], 2))
            .unwrap();
        let (read, until) = store
            .read(|tx| Ok((tx.compartments(&session)?, tx.summarised_until(&session)?)))
            .unwrap();
        assert_eq!(
            read,
            [compartment(0, 9), compartment(10, 14), compartment(15, 20)]
        );
        assert_eq!(until, 21);
    }

    #[test]
    fn gaps_overlaps_and_ranges_past_the_log_are_refused_whole() {
        let (_dir, store, session) = store_with_log(30);
        for bad in [
            vec![compartment(1, 9)],
            vec![compartment(0, 9), compartment(9, 12)],
            vec![compartment(0, 9), compartment(11, 12)],
            vec![compartment(0, 30)],
        ] {
            let error = store
                .write(|tx| tx.append_compartments(&session, &bad, 1))
                .unwrap_err();
            assert!(
                matches!(error, StoreError::CompartmentGap { .. }),
                "{error}"
            );
        }
        let until = store.read(|tx| tx.summarised_until(&session)).unwrap();
        assert_eq!(until, 0, "nothing of a refused batch is stored");
    }
}
