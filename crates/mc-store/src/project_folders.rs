//! The folder each project was last seen in, for naming projects the way people know them.
//!
//! A project's id (`git:<root commit>`, `path:<hash>`) is what the store keys on; the folder
//! the proxy identified it from is kept beside it only so that `status`, run anywhere, can
//! say `~/code/shop` instead of `git:f48c…`. The newest sighting wins: a repository cloned
//! twice is named by the clone used last.

use std::collections::HashMap;

use mc_core::ProjectId;

use crate::error::{Result, StoreError};
use crate::store::{ReadTx, WriteTx};

impl WriteTx<'_> {
    /// Records that `project` was identified from `folder` at `now_ms`.
    pub fn note_project_folder(
        &self,
        project: &ProjectId,
        folder: &str,
        now_ms: i64,
    ) -> Result<()> {
        self.conn()
            .prepare_cached(
                "INSERT INTO project_folders (project, folder, seen_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT (project) DO UPDATE SET folder = excluded.folder,
                     seen_ms = excluded.seen_ms
                 WHERE excluded.seen_ms >= project_folders.seen_ms",
            )
            .and_then(|mut statement| statement.execute((project.as_str(), folder, now_ms)))
            .map_err(StoreError::sqlite("recording a project's folder"))?;
        Ok(())
    }
}

impl ReadTx<'_> {
    /// Every project's last folder.
    pub fn project_folders(&self) -> Result<HashMap<ProjectId, String>> {
        let rows: Vec<(String, String)> = self
            .conn()
            .prepare_cached("SELECT project, folder FROM project_folders")
            .and_then(|mut statement| {
                statement
                    .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
                    .collect()
            })
            .map_err(StoreError::sqlite("reading the projects' folders"))?;
        Ok(rows
            .into_iter()
            .filter_map(|(project, folder)| Some((ProjectId::new(project).ok()?, folder)))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use crate::Store;

    use super::*;

    #[test]
    fn the_newest_sighting_names_the_project() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("store.db")).unwrap();
        let shop = ProjectId::new("git:f48c").unwrap();
        let tools = ProjectId::new("path:7d9b").unwrap();
        store
            .write(|tx| {
                tx.note_project_folder(&shop, "/home/a/shop", 10)?;
                tx.note_project_folder(&shop, "/home/a/shop-clone", 20)?;
                tx.note_project_folder(&shop, "/home/a/old", 15)?;
                tx.note_project_folder(&tools, "/home/a/tools", 5)
            })
            .unwrap();
        let folders = store.read(|tx| tx.project_folders()).unwrap();
        assert_eq!(folders.len(), 2);
        assert_eq!(folders[&shop], "/home/a/shop-clone");
        assert_eq!(folders[&tools], "/home/a/tools");
    }
}
