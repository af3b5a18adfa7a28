//! The user's profile: short lines about the person the agent works for, shown in `m[0]`.
//!
//! A line comes from a user observation the historian recorded and saw at least a threshold
//! number of times, sightings in every project counted together
//! ([`WriteTx::promote_observations`]; the same observation in two projects is one line), and
//! is then the user's own: edited or removed with `magic-context profile`.
//! A removed line stays, marked, so the observation it came from is never promoted again.

use rusqlite::{OptionalExtension, Row};

use crate::error::{Result, StoreError};
use crate::store::{ReadTx, WriteTx};

/// One line of the profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileLine {
    /// Its id; larger is newer.
    pub id: u64,
    /// What it says.
    pub text: String,
    /// Removed by the user: kept, never shown.
    pub removed: bool,
    /// When it was added, unix milliseconds.
    pub created_ms: i64,
    /// When it last changed, unix milliseconds.
    pub updated_ms: i64,
}

const COLUMNS: &str = "id, text, status, created_ms, updated_ms";

fn line_from_row(row: &Row<'_>) -> rusqlite::Result<ProfileLine> {
    let status: String = row.get(2)?;
    Ok(ProfileLine {
        id: row.get(0)?,
        text: row.get(1)?,
        removed: status == "removed",
        created_ms: row.get(3)?,
        updated_ms: row.get(4)?,
    })
}

impl WriteTx<'_> {
    /// Adds to the profile every user observation seen at least `sightings` times in all
    /// (every project and project-less session counted together: they are sightings of one
    /// person) that no line came from yet; returns the lines added, oldest observation first.
    /// Running it again adds nothing, and a removed line is never added back.
    pub fn promote_observations(&self, sightings: u64, now_ms: i64) -> Result<Vec<ProfileLine>> {
        const DOING: &str = "promoting user observations to the profile";
        let mut statement = self
            .conn()
            .prepare_cached(&format!(
                "INSERT INTO user_profile (text, status, observation_key, created_ms, updated_ms)
                 SELECT text, 'active', observation_key, ?2, ?2 FROM (
                     SELECT observation_key, text, MIN(first_ms) AS first_ms,
                            SUM(seen_count) AS seen
                     FROM user_observations GROUP BY observation_key
                 )
                 WHERE seen >= ?1
                 ORDER BY first_ms, observation_key
                 ON CONFLICT (observation_key) DO NOTHING
                 RETURNING {COLUMNS}"
            ))
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map((sightings.max(1), now_ms), line_from_row)
            .map_err(StoreError::sqlite(DOING))?;
        let mut added = rows
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(StoreError::sqlite(DOING))?;
        added.sort_by_key(|line| line.id);
        Ok(added)
    }

    /// Changes line `id`'s text; `false` when there is no such line.
    pub fn edit_profile_line(&self, id: u64, text: &str, now_ms: i64) -> Result<bool> {
        let changed = self
            .conn()
            .prepare_cached(
                "UPDATE user_profile SET text = ?2, status = 'active', updated_ms = ?3 WHERE id = ?1",
            )
            .and_then(|mut statement| statement.execute((id, text.trim(), now_ms)))
            .map_err(StoreError::sqlite("editing a profile line"))?;
        Ok(changed > 0)
    }

    /// Removes line `id` (kept, marked); `false` when there is no such line.
    pub fn remove_profile_line(&self, id: u64, now_ms: i64) -> Result<bool> {
        let changed = self
            .conn()
            .prepare_cached(
                "UPDATE user_profile SET status = 'removed', updated_ms = ?2 WHERE id = ?1",
            )
            .and_then(|mut statement| statement.execute((id, now_ms)))
            .map_err(StoreError::sqlite("removing a profile line"))?;
        Ok(changed > 0)
    }
}

impl ReadTx<'_> {
    /// The profile's lines by id, the removed ones too when `with_removed`.
    pub fn profile_lines(&self, with_removed: bool) -> Result<Vec<ProfileLine>> {
        const DOING: &str = "reading the user's profile";
        let mut statement = self
            .conn()
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM user_profile WHERE ?1 OR status = 'active' ORDER BY id"
            ))
            .map_err(StoreError::sqlite(DOING))?;
        let rows = statement
            .query_map([with_removed], line_from_row)
            .map_err(StoreError::sqlite(DOING))?;
        rows.map(|row| row.map_err(StoreError::sqlite(DOING)))
            .collect()
    }

    /// Line `id`, if there is one.
    pub fn profile_line(&self, id: u64) -> Result<Option<ProfileLine>> {
        self.conn()
            .prepare_cached(&format!("SELECT {COLUMNS} FROM user_profile WHERE id = ?1"))
            .and_then(|mut statement| statement.query_row([id], line_from_row).optional())
            .map_err(StoreError::sqlite("reading a profile line"))
    }
}

#[cfg(test)]
mod tests {
    use crate::Store;

    #[test]
    fn observations_seen_often_enough_become_lines_once_and_stay_the_users() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("store.db")).unwrap();
        let short = "Prefers short answers.".to_owned();
        let tests = "Wants tests before code.".to_owned();
        store
            .write(|tx| {
                for at in 1..=3 {
                    tx.store_observations("project:a", std::slice::from_ref(&short), at)?;
                }
                tx.store_observations("project:b", std::slice::from_ref(&short), 4)?;
                tx.store_observations("project:a", std::slice::from_ref(&tests), 5)?;
                Ok(())
            })
            .unwrap();
        let added = store.write(|tx| tx.promote_observations(3, 10)).unwrap();
        let texts: Vec<&str> = added.iter().map(|line| line.text.as_str()).collect();
        assert_eq!(texts, ["Prefers short answers."]);
        let again = store.write(|tx| tx.promote_observations(3, 11)).unwrap();
        assert!(again.is_empty(), "a line is promoted once");
        let lines = store.read(|tx| tx.profile_lines(false)).unwrap();
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].text, "Prefers short answers.");
        let id = lines[0].id;
        store
            .write(|tx| tx.edit_profile_line(id, " Prefers short, direct answers. ", 12))
            .unwrap();
        assert_eq!(
            store.read(|tx| tx.profile_line(id)).unwrap().unwrap().text,
            "Prefers short, direct answers."
        );
        assert!(store.write(|tx| tx.remove_profile_line(id, 13)).unwrap());
        assert!(store.read(|tx| tx.profile_lines(false)).unwrap().is_empty());
        assert_eq!(store.read(|tx| tx.profile_lines(true)).unwrap().len(), 1);
        store
            .write(|tx| {
                tx.store_observations("project:a", std::slice::from_ref(&short), 14)?;
                tx.promote_observations(3, 15)
            })
            .unwrap();
        assert!(
            store.read(|tx| tx.profile_lines(false)).unwrap().is_empty(),
            "a removed line is not promoted again"
        );
        assert!(!store.write(|tx| tx.remove_profile_line(999, 16)).unwrap());
    }

    #[test]
    fn sightings_in_every_project_count_together() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("store.db")).unwrap();
        let terse = "Wants terse commit messages.".to_owned();
        let added = store
            .write(|tx| {
                tx.store_observations("project:a", std::slice::from_ref(&terse), 1)?;
                tx.store_observations("project:b", std::slice::from_ref(&terse), 2)?;
                let early = tx.promote_observations(3, 3)?;
                tx.store_observations("session:s", &["wants terse commit messages".to_owned()], 4)?;
                let third = tx.promote_observations(3, 5)?;
                Ok((early.len(), third))
            })
            .unwrap();
        assert_eq!(added.0, 0, "two sightings are not three");
        let texts: Vec<&str> = added.1.iter().map(|line| line.text.as_str()).collect();
        assert_eq!(
            texts,
            ["Wants terse commit messages."],
            "the first wording is kept"
        );
        assert_eq!(added.1[0].created_ms, 5);
    }
}
