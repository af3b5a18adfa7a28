//! Finds the recorded sessions in the shared data folder and loads them.

use std::path::PathBuf;

use mc_sim::Recording;

/// The shared data folder (see `mc_testdata::dir`).
pub fn dir() -> PathBuf {
    mc_testdata::dir()
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
