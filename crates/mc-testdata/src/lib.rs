//! Finds the shared data folder (recorded sessions: `swe-trajectories/`,
//! `anthropic-capture/`, `locomo/`) for the corpus, golden and replay tests of every crate.
//!
//! Only tests depend on this crate. A missing folder fails the test that asked for it rather
//! than skipping it: a corpus test that silently checks nothing would pass for the wrong
//! reason.

use std::path::{Path, PathBuf};

/// The shared data folder: `MC_SHARED_DATA`, else the first `shared/data` beside the checkout
/// or one of its ancestors, else `/work/shared/data`.
#[expect(
    clippy::panic,
    reason = "test support: a missing corpus must fail the test, loudly"
)]
pub fn dir() -> PathBuf {
    let found = match std::env::var_os("MC_SHARED_DATA") {
        Some(dir) => Some(PathBuf::from(dir)),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .map(|ancestor| ancestor.join("shared/data"))
            .chain([PathBuf::from("/work/shared/data")])
            .find(|candidate| candidate.join("swe-trajectories").is_dir()),
    };
    match found {
        Some(dir) if dir.is_dir() => dir,
        _ => panic!(
            "shared data not found (looked at $MC_SHARED_DATA, shared/data beside {} and its \
             ancestors, /work/shared/data); set MC_SHARED_DATA to the folder holding \
             swe-trajectories/ and anthropic-capture/",
            env!("CARGO_MANIFEST_DIR")
        ),
    }
}

/// The bytes of `relative` under [`dir`], which must be the published file: its blake3 is
/// `blake3_hex`. A count pinned on the published data is so checked wherever the folder is
/// found (`MC_SHARED_DATA` included), and fails, rather than passing unchecked, on a folder
/// that holds other data.
#[expect(
    clippy::panic,
    reason = "test support: a missing or different corpus must fail the test, loudly"
)]
pub fn read_published(relative: &str, blake3_hex: &str) -> Vec<u8> {
    let path = dir().join(relative);
    let bytes = std::fs::read(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
    let found = blake3::hash(&bytes).to_hex();
    if found.as_str() != blake3_hex {
        panic!(
            "{} is not the published file (blake3 {found}, published {blake3_hex}); point \
             MC_SHARED_DATA at the published data folder",
            path.display()
        );
    }
    bytes
}

/// The blake3 digest of every file in `folders` of [`dir`] (names and bytes, in name order),
/// for a figure pinned over a whole corpus: checked against the published digest first, the
/// pin fails on other data rather than being skipped.
#[expect(
    clippy::panic,
    reason = "test support: a missing corpus must fail the test, loudly"
)]
pub fn corpus_digest(folders: &[&str]) -> String {
    let root = dir();
    let mut hasher = blake3::Hasher::new();
    for folder in folders {
        let path = root.join(folder);
        let entries = std::fs::read_dir(&path)
            .unwrap_or_else(|error| panic!("cannot list {}: {error}", path.display()));
        let mut files: Vec<PathBuf> = entries
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.is_file())
            .collect();
        files.sort();
        for file in files {
            let bytes = std::fs::read(&file)
                .unwrap_or_else(|error| panic!("cannot read {}: {error}", file.display()));
            let name = file
                .file_name()
                .map(|name| name.to_string_lossy().into_owned());
            hasher.update(
                format!("{folder}/{}\0{}\0", name.unwrap_or_default(), bytes.len()).as_bytes(),
            );
            hasher.update(&bytes);
        }
    }
    hasher.finalize().to_hex().to_string()
}
