//! Loading a file or a directory of files, with the format given or detected.

use std::fs;
use std::path::{Path, PathBuf};

use super::detect::{Family, detect};
use super::error::FileErrors;
use super::{Recording, RecordingError, RecordingFormat};
use super::{anthropic_capture, claude_code, swe_traj};

/// Loads the recordings at `path`: one file, or every recognised file of a directory.
///
/// `format: None` detects each file's format from its content (see `detect.rs`); a given
/// format is trusted, and a file that does not match it is an error naming the line.
///
/// A directory is read one level deep, its files in name order. Files no loader recognises
/// (`LICENSE.md`, an index file) and files holding no model call (a Claude Code session
/// with only `summary` lines) are skipped; with a format given, only files of that format's
/// extension (`.json` for swe-traj, `.jsonl` for the others) are tried. A directory left
/// with nothing to load is an error ([`RecordingError::EmptyDirectory`]) rather than an
/// empty list, because a replay over no session would print a table of zeros that looks
/// like a result. A recognised file that fails to load fails the whole call: a partial
/// corpus would silently change every sum.
pub fn load(
    path: &Path,
    format: Option<RecordingFormat>,
) -> Result<Vec<Recording>, RecordingError> {
    let metadata = fs::metadata(path).map_err(|source| RecordingError::Io {
        path: path.to_owned(),
        source,
    })?;
    if metadata.is_dir() {
        load_dir(path, format)
    } else {
        let bytes = read(path)?;
        let format = match format {
            Some(format) => format,
            None => detect(path, &bytes).map_err(|reason| RecordingError::Unrecognised {
                path: path.to_owned(),
                reason,
            })?,
        };
        load_bytes(path, &bytes, format).map(|recording| vec![recording])
    }
}

fn load_dir(dir: &Path, format: Option<RecordingFormat>) -> Result<Vec<Recording>, RecordingError> {
    let io_error = |source| RecordingError::Io {
        path: dir.to_owned(),
        source,
    };
    let mut files: Vec<PathBuf> = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_error)? {
        let entry = entry.map_err(io_error)?;
        let path = entry.path();
        if path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    let mut recordings = Vec::new();
    for path in files {
        let Some(family) = Family::of(&path) else {
            continue;
        };
        if format.is_some_and(|format| Family::of_format(format) != family) {
            continue;
        }
        let bytes = read(&path)?;
        let found = match format {
            Some(format) => format,
            None => match detect(&path, &bytes) {
                Ok(found) => found,
                Err(_) => continue,
            },
        };
        match load_bytes(&path, &bytes, found) {
            Ok(recording) => recordings.push(recording),
            Err(RecordingError::NoSteps { .. }) => {}
            Err(error) => return Err(error),
        }
    }
    if recordings.is_empty() {
        return Err(RecordingError::EmptyDirectory {
            dir: dir.to_owned(),
        });
    }
    Ok(recordings)
}

fn read(path: &Path) -> Result<Vec<u8>, RecordingError> {
    fs::read(path).map_err(|source| RecordingError::Io {
        path: path.to_owned(),
        source,
    })
}

fn load_bytes(
    path: &Path,
    bytes: &[u8],
    format: RecordingFormat,
) -> Result<Recording, RecordingError> {
    let errors = FileErrors { path };
    let name = recording_name(path);
    match format {
        RecordingFormat::SweTraj => swe_traj::load(name, bytes, errors),
        RecordingFormat::AnthropicCapture => anthropic_capture::load(name, bytes, errors),
        RecordingFormat::ClaudeCode => claude_code::load(name, bytes, errors),
    }
}

/// The file name without its format suffix: `django__django-11138` for
/// `django__django-11138.traj.json`, the session id for a Claude Code file.
fn recording_name(path: &Path) -> String {
    let file = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    [".traj.json", ".jsonl", ".json"]
        .iter()
        .find_map(|suffix| file.strip_suffix(suffix))
        .map(str::to_owned)
        .unwrap_or(file)
}
