//! The log of the proxy `magic-context run` hosts: a file under the data directory, never the
//! terminal.
//!
//! `run` shares the terminal with the agent, and an interactive agent draws its screen there:
//! a log line written over it would garble the agent's display, and a one-shot agent's stderr
//! would carry our lines mixed with its own. So the proxy's log goes to `run.log` beside the
//! store, its path is said once before the agent starts, and `status` shows it. The file is
//! appended to by every `run` (a header line marks each start) and set aside as `run.log.old`
//! once it passes [`ROTATE_AT_BYTES`], so it never grows without bound.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use mc_store::{DataLocation, LocationEnv, Platform, resolve_data_dir};

use crate::cli::LogLevel;
use crate::logging;

/// The log file's name inside the data directory.
const FILE_NAME: &str = "run.log";
/// The previous log's name, once the current one grew past [`ROTATE_AT_BYTES`].
const OLD_FILE_NAME: &str = "run.log.old";
/// Size past which a new `run` starts a fresh file: at one info line per call (~200 bytes),
/// tens of thousands of calls.
const ROTATE_AT_BYTES: u64 = 10 * 1024 * 1024;

/// Where `run`'s proxy log is for a data directory.
pub fn path_in(location: &DataLocation) -> PathBuf {
    location.dir.join(FILE_NAME)
}

/// The log file, when a `run` has written one.
pub fn existing(location: &DataLocation) -> Option<PathBuf> {
    Some(path_in(location)).filter(|path| path.is_file())
}

/// Sends this process's logs to the run log (at `info` unless `level` or `RUST_LOG` says
/// otherwise) and returns its path; when it cannot be opened the logs are dropped rather than
/// written over the agent's terminal, and the reason comes back for the user.
pub fn install(level: Option<LogLevel>) -> Result<PathBuf, String> {
    let location = resolve_data_dir(&LocationEnv::from_process(), Platform::current())
        .map_err(|error| format!("no data directory for the log ({error})"))?;
    let path = path_in(&location);
    match open(&path) {
        Ok(file) => {
            logging::init_file(level, file);
            Ok(path)
        }
        Err(error) => {
            logging::init_off();
            Err(format!(
                "cannot write the log {} ({error}); the proxy's log is off",
                path.display()
            ))
        }
    }
}

/// Opens `path` for appending (setting a full one aside first) and writes the header line of
/// this start.
fn open(path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    if std::fs::metadata(path).is_ok_and(|meta| meta.len() > ROTATE_AT_BYTES) {
        std::fs::rename(path, path.with_file_name(OLD_FILE_NAME))?;
    }
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    writeln!(
        file,
        "--- magic-context {} run, process {}, started {} ---",
        env!("CARGO_PKG_VERSION"),
        std::process::id(),
        chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    )?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_a_header_per_start_and_sets_a_full_log_aside() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data").join(FILE_NAME);
        drop(open(&path).unwrap());
        drop(open(&path).unwrap());
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches(" run, process ").count(), 2, "{text}");

        let full = vec![b'x'; usize::try_from(ROTATE_AT_BYTES).unwrap() + 1];
        std::fs::write(&path, &full).unwrap();
        drop(open(&path).unwrap());
        assert_eq!(
            std::fs::read(dir.path().join("data").join(OLD_FILE_NAME)).unwrap(),
            full
        );
        let fresh = std::fs::read_to_string(&path).unwrap();
        assert!(fresh.starts_with("--- magic-context "), "{fresh}");
        assert_eq!(fresh.lines().count(), 1, "{fresh}");
    }
}
