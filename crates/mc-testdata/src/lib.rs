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

/// Whether `MC_SHARED_DATA` points elsewhere than the published folder (whose exact counts
/// some tests pin).
pub fn is_published() -> bool {
    std::env::var_os("MC_SHARED_DATA").is_none()
}
