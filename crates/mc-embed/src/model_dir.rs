//! Finding the local model's files, checked before anything is loaded.
//!
//! This part needs no inference library, so a build without the `local` feature still tells
//! a user precisely which file their configured directory lacks.

use std::path::{Path, PathBuf};

use crate::error::{EmbedError, Result};

/// The weights file name in a model directory.
pub const WEIGHTS_FILE: &str = "model.safetensors";
/// The tokenizer file name in a model directory.
pub const TOKENIZER_FILE: &str = "tokenizer.json";
/// The optional BERT configuration file name.
pub const CONFIG_FILE: &str = "config.json";

/// The files of a local model directory, each known to exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFiles {
    /// The directory itself.
    pub dir: PathBuf,
    /// `model.safetensors`.
    pub weights: PathBuf,
    /// `tokenizer.json`.
    pub tokenizer: PathBuf,
    /// `config.json`, when present; absent means the standard all-MiniLM-L6-v2 values.
    pub config: Option<PathBuf>,
}

impl ModelFiles {
    /// Checks that `dir` holds the required files, naming the first one missing.
    pub fn locate(dir: &Path) -> Result<Self> {
        let required = |file: &'static str| {
            let path = dir.join(file);
            if path.is_file() {
                Ok(path)
            } else {
                Err(EmbedError::MissingModelFile {
                    dir: dir.to_path_buf(),
                    file,
                })
            }
        };
        let weights = required(WEIGHTS_FILE)?;
        let tokenizer = required(TOKENIZER_FILE)?;
        let config = Some(dir.join(CONFIG_FILE)).filter(|p| p.is_file());
        Ok(Self {
            dir: dir.to_path_buf(),
            weights,
            tokenizer,
            config,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_missing_file_then_accepts_a_dir_without_config() {
        let dir = tempfile::tempdir().unwrap();
        let missing = |e| match e {
            Err(EmbedError::MissingModelFile { file, .. }) => file,
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(missing(ModelFiles::locate(dir.path())), WEIGHTS_FILE);
        std::fs::write(dir.path().join(WEIGHTS_FILE), b"").unwrap();
        assert_eq!(missing(ModelFiles::locate(dir.path())), TOKENIZER_FILE);
        std::fs::write(dir.path().join(TOKENIZER_FILE), b"{}").unwrap();
        let files = ModelFiles::locate(dir.path()).unwrap();
        assert_eq!(files.config, None);
        std::fs::write(dir.path().join(CONFIG_FILE), b"{}").unwrap();
        assert_eq!(
            ModelFiles::locate(dir.path()).unwrap().config,
            Some(dir.path().join(CONFIG_FILE))
        );
    }
}
