//! Finds the shared data folder for the recording tests.

use std::path::PathBuf;

/// The shared data folder (see `mc_testdata::dir`).
pub fn dir() -> PathBuf {
    mc_testdata::dir()
}
