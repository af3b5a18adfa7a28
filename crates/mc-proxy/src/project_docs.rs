//! Reading a project's docs (ARCHITECTURE.md, STRUCTURE.md, as `project_docs.files` names
//! them) from its root folder, for `m[0]` (DESIGN §5 "Head").
//!
//! The folder comes from the prompt, so only regular files are read (never a FIFO or a
//! device), at most [`MAX_DOC_BYTES`] of each: `m[0]` holds a few thousand tokens of docs at
//! most. Every call looks at the files' metadata and reads one again only when its size or
//! modification time changed, from a memo of at most [`MEMO_ENTRIES`] files. The engine
//! takes what is read into `m[0]` only at its next hard fold, so an edit never busts alone.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use mc_core::head::ProjectDoc;

/// The most of one doc read: far past any docs budget (20% of a 1M window is 200K tokens,
/// about 800 KB; the default budget is 6K tokens).
const MAX_DOC_BYTES: u64 = 256 * 1024;

/// Doc files remembered; past that, one is forgotten for each new one.
const MEMO_ENTRIES: usize = 256;

/// A doc as last read.
struct Kept {
    modified: Option<SystemTime>,
    len: u64,
    text: Arc<str>,
}

/// Reads and remembers docs.
#[derive(Default)]
pub struct DocsReader {
    memo: Mutex<HashMap<PathBuf, Kept>>,
}

impl DocsReader {
    /// The docs `files` names, as found in the root of the project holding `folder`: the
    /// nearest folder up with a `.git`, else `folder` itself. Missing, unreadable and
    /// non-regular files are left out.
    pub fn read(&self, folder: &Path, files: &[String]) -> Vec<ProjectDoc> {
        let root = folder
            .ancestors()
            .find(|dir| dir.join(".git").exists())
            .unwrap_or(folder);
        files
            .iter()
            .filter_map(|name| {
                let text = self.read_one(&root.join(name))?;
                Some(ProjectDoc {
                    name: name.clone(),
                    text: text.to_string(),
                })
            })
            .collect()
    }

    fn read_one(&self, path: &Path) -> Option<Arc<str>> {
        let metadata = std::fs::metadata(path).ok()?;
        if !metadata.is_file() {
            return None;
        }
        let (modified, len) = (metadata.modified().ok(), metadata.len());
        if let Ok(memo) = self.memo.lock()
            && let Some(read) = memo.get(path)
            && read.modified == modified
            && read.len == len
        {
            return Some(Arc::clone(&read.text));
        }
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .ok()?
            .take(MAX_DOC_BYTES)
            .read_to_end(&mut bytes)
            .ok()?;
        let text: Arc<str> = Arc::from(String::from_utf8_lossy(&bytes).as_ref());
        if let Ok(mut memo) = self.memo.lock() {
            if memo.len() >= MEMO_ENTRIES
                && !memo.contains_key(path)
                && let Some(evicted) = memo.keys().next().cloned()
            {
                memo.remove(&evicted);
            }
            memo.insert(
                path.to_path_buf(),
                Kept {
                    modified,
                    len,
                    text: Arc::clone(&text),
                },
            );
        }
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(files: &[&str]) -> Vec<String> {
        files.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn docs_are_read_from_the_repository_root_and_again_only_when_changed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(
            dir.path().join("ARCHITECTURE.md"),
            "# Architecture\nOne store.",
        )
        .unwrap();
        let reader = DocsReader::default();
        let files = names(&["ARCHITECTURE.md", "STRUCTURE.md"]);
        let docs = reader.read(&dir.path().join("src"), &files);
        assert_eq!(docs.len(), 1, "a missing doc is left out");
        assert_eq!(docs[0].name, "ARCHITECTURE.md");
        assert_eq!(docs[0].text, "# Architecture\nOne store.");
        std::fs::write(
            dir.path().join("ARCHITECTURE.md"),
            "# Architecture\nTwo stores now.",
        )
        .unwrap();
        let docs = reader.read(dir.path(), &files);
        assert_eq!(docs[0].text, "# Architecture\nTwo stores now.");
    }

    #[test]
    fn fifos_folders_and_long_files_are_not_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("ARCHITECTURE.md");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        std::fs::create_dir(dir.path().join("STRUCTURE.md")).unwrap();
        std::fs::write(dir.path().join("LONG.md"), "x".repeat(1 << 20)).unwrap();
        let reader = DocsReader::default();
        let docs = reader.read(
            dir.path(),
            &names(&["ARCHITECTURE.md", "STRUCTURE.md", "LONG.md"]),
        );
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].text.len() as u64, MAX_DOC_BYTES);
    }
}
