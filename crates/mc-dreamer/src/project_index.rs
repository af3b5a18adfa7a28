//! The project's text, read once per run, and the searches the evidence needs over it.
//!
//! A verify run asks about every name of every memory; reading the files once and searching
//! them in memory keeps a run over hundreds of memories to one pass over the disk. The
//! searches are pure functions of the loaded text.

use mc_core::dreamer::Sighting;

use crate::error::Result;
use crate::project_folder::ProjectFolder;

/// Most text a run loads, in bytes: past it, later files are listed but not searched.
pub const MAX_INDEX_BYTES: usize = 64 * 1024 * 1024;

/// The project's file list and the text of its readable files.
#[derive(Debug, Clone, Default)]
pub struct ProjectIndex {
    /// Every listed file, relative, sorted.
    files: Vec<String>,
    /// The readable text files and their contents.
    texts: Vec<(String, String)>,
}

impl ProjectIndex {
    /// Reads `folder`: its listing, then each file within the size cap that is text. Files
    /// the folder refuses (too large, binary, outside it through a link) are listed but not
    /// searched.
    pub fn load(folder: &ProjectFolder) -> Result<Self> {
        let files = folder.list_files()?;
        let mut texts = Vec::new();
        let mut loaded = 0_usize;
        for file in &files {
            if loaded >= MAX_INDEX_BYTES {
                break;
            }
            if let Ok(text) = folder.read_text(file) {
                loaded += text.len();
                texts.push((file.clone(), text));
            }
        }
        Ok(Self { files, texts })
    }

    /// An index over files given directly (tests, benches).
    pub fn from_texts(texts: Vec<(String, String)>) -> Self {
        let mut files: Vec<String> = texts.iter().map(|(path, _)| path.clone()).collect();
        files.sort();
        Self { files, texts }
    }

    /// How many files are listed.
    pub fn file_count(&self) -> usize {
        self.files.len()
    }

    /// Every listed file, relative, sorted.
    pub fn files(&self) -> &[String] {
        &self.files
    }

    /// Whether a listed file is `path` or ends with `/path` (a memory may name a file from
    /// inside a sub-project).
    pub fn has_file(&self, path: &str) -> bool {
        let path = path.trim_start_matches("./");
        let suffix = format!("/{path}");
        self.files
            .iter()
            .any(|file| file == path || file.ends_with(&suffix))
    }

    /// The lines where `name` appears as a whole word, at most `limit`.
    pub fn lines_naming(&self, name: &str, limit: usize) -> Vec<Sighting> {
        self.lines_where(|line| contains_word(line, name), limit)
    }

    /// The lines holding both `name` and `value` as whole words, at most `limit`.
    pub fn lines_stating(&self, name: &str, value: &str, limit: usize) -> Vec<Sighting> {
        let value = value.trim_matches('"');
        self.lines_where(
            |line| contains_word(line, name) && contains_word(line, value),
            limit,
        )
    }

    /// The lines of files under `under` (a folder, relative; every file when `None`) that
    /// `matches`, at most `limit`.
    pub fn lines_under(
        &self,
        under: Option<&str>,
        matches: impl Fn(&str) -> bool,
        limit: usize,
    ) -> Vec<Sighting> {
        let under = under.map(|folder| folder.trim_matches('/')).unwrap_or("");
        let prefix = format!("{under}/");
        let inside = |path: &str| under.is_empty() || path == under || path.starts_with(&prefix);
        self.lines_in(inside, matches, limit)
    }

    fn lines_where(&self, matches: impl Fn(&str) -> bool, limit: usize) -> Vec<Sighting> {
        self.lines_in(|_| true, matches, limit)
    }

    fn lines_in(
        &self,
        inside: impl Fn(&str) -> bool,
        matches: impl Fn(&str) -> bool,
        limit: usize,
    ) -> Vec<Sighting> {
        let mut found = Vec::new();
        for (path, text) in self.texts.iter().filter(|(path, _)| inside(path)) {
            for (number, line) in text.lines().enumerate() {
                if found.len() >= limit {
                    return found;
                }
                if matches(line) {
                    found.push(Sighting {
                        path: path.clone(),
                        line: u32::try_from(number + 1).unwrap_or(u32::MAX),
                        text: line.trim().to_owned(),
                    });
                }
            }
        }
        found
    }
}

/// Whether `word` appears in `line` with no identifier character on either side.
fn contains_word(line: &str, word: &str) -> bool {
    if word.is_empty() {
        return false;
    }
    let is_word_char = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let word_edges = (
        word.chars().next().is_some_and(is_word_char),
        word.chars().last().is_some_and(is_word_char),
    );
    line.match_indices(word).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + word.len()..].chars().next();
        (!word_edges.0 || !before.is_some_and(is_word_char))
            && (!word_edges.1 || !after.is_some_and(is_word_char))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index() -> ProjectIndex {
        ProjectIndex::from_texts(vec![
            (
                "crates/net/src/net.rs".into(),
                "const MAX_RETRIES: u32 = 7;\nfn retry_all() {}\n".into(),
            ),
            ("README.md".into(), "MAX_RETRIES_EXTRA = 5\n".into()),
        ])
    }

    #[test]
    fn files_match_whole_paths_or_path_suffixes() {
        let index = index();
        assert!(index.has_file("src/net.rs"));
        assert!(index.has_file("./README.md"));
        assert!(!index.has_file("et.rs"));
        assert!(!index.has_file("src/old.rs"));
    }

    #[test]
    fn names_and_values_match_whole_words_only() {
        let index = index();
        let seen = index.lines_naming("MAX_RETRIES", 5);
        assert_eq!(
            seen,
            [Sighting {
                path: "crates/net/src/net.rs".into(),
                line: 1,
                text: "const MAX_RETRIES: u32 = 7;".into()
            }]
        );
        assert_eq!(index.lines_stating("MAX_RETRIES", "7", 5).len(), 1);
        assert!(index.lines_stating("MAX_RETRIES", "5", 5).is_empty());
        assert!(index.lines_naming("retry", 5).is_empty());
        assert!(contains_word("x = \"a b\"", "\"a b\""));
    }
}
