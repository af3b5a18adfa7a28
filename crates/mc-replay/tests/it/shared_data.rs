//! Finds the recorded sessions in the shared data folder and loads them.

use std::path::{Path, PathBuf};

use mc_sim::Recording;

/// The shared data folder: `MC_SHARED_DATA`, else the first `shared/data` found beside the
/// checkout or one of its ancestors, else `/work/shared/data`.
///
/// A missing folder fails the test rather than skipping it: a corpus test that silently
/// checks nothing would pass for the wrong reason.
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
            "shared data not found (looked at $MC_SHARED_DATA, shared/data beside {} and its ancestors, /work/shared/data); \
             set MC_SHARED_DATA to the folder holding anthropic-capture/ and swe-trajectories/",
            env!("CARGO_MANIFEST_DIR")
        ),
    }
}

/// The recordings of `relative` (a file or a folder under the shared data).
pub fn load(relative: &str) -> Vec<Recording> {
    let path = dir().join(relative);
    mc_sim::recording::load(&path, None)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// One swe trajectory by instance id.
pub fn trajectory(instance: &str) -> Recording {
    let [recording] = load(&format!("swe-trajectories/{instance}.traj.json"))
        .try_into()
        .unwrap();
    recording
}
