//! Telling a recording's format from its name and first bytes.
//!
//! The extension picks the family (`.json` is a whole document, `.jsonl` one object per
//! line); the content decides within it, so a directory of mixed files loads each with its
//! own loader and skips the rest (`PROVENANCE.tsv`, `LICENSE.md`, `sessions-index.json`).

use std::path::Path;

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::RecordingFormat;

/// How many leading objects of a `.jsonl` file are looked at. Claude Code may open a session
/// file with `summary` lines, which carry `leafUuid` rather than `parentUuid`.
const PROBE_LINES: usize = 8;

/// Whether the file is a trajectory document or a JSON Lines file, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Family {
    /// `.json`: one document.
    Document,
    /// `.jsonl`: one object per line.
    Lines,
}

impl Family {
    pub(super) fn of(path: &Path) -> Option<Self> {
        match path.extension()?.to_str()? {
            "json" => Some(Self::Document),
            "jsonl" => Some(Self::Lines),
            _ => None,
        }
    }

    /// The family a format's files belong to.
    pub(super) fn of_format(format: RecordingFormat) -> Self {
        match format {
            RecordingFormat::SweTraj => Self::Document,
            RecordingFormat::AnthropicCapture | RecordingFormat::ClaudeCode => Self::Lines,
        }
    }
}

/// The keys of a line that tell the line formats apart; everything else is skipped unparsed.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LineProbe {
    request: Option<IgnoredAny>,
    response: Option<IgnoredAny>,
    parent_uuid: Option<IgnoredAny>,
    session_id: Option<IgnoredAny>,
    leaf_uuid: Option<IgnoredAny>,
}

/// The keys of a mini-swe-agent trajectory.
#[derive(Deserialize)]
struct DocumentProbe {
    messages: Option<IgnoredAny>,
    trajectory_format: Option<IgnoredAny>,
    info: Option<IgnoredAny>,
}

/// The format of a file, or why it is none of them.
pub(super) fn detect(path: &Path, bytes: &[u8]) -> Result<RecordingFormat, &'static str> {
    match Family::of(path) {
        Some(Family::Document) => detect_document(bytes),
        Some(Family::Lines) => detect_lines(bytes),
        None => Err("the name ends in neither .json nor .jsonl"),
    }
}

fn detect_document(bytes: &[u8]) -> Result<RecordingFormat, &'static str> {
    let probe: DocumentProbe =
        serde_json::from_slice(bytes).map_err(|_| "the .json file is not a JSON object")?;
    let is_trajectory =
        probe.messages.is_some() && (probe.trajectory_format.is_some() || probe.info.is_some());
    if is_trajectory {
        Ok(RecordingFormat::SweTraj)
    } else {
        Err("the .json file has no `messages` beside `trajectory_format` or `info`")
    }
}

fn detect_lines(bytes: &[u8]) -> Result<RecordingFormat, &'static str> {
    let objects = bytes
        .split(|&b| b == b'\n')
        .filter(|line| !line.trim_ascii().is_empty())
        .take(PROBE_LINES)
        .filter_map(|line| serde_json::from_slice::<LineProbe>(line).ok());
    for probe in objects {
        if probe.request.is_some() && probe.response.is_some() {
            return Ok(RecordingFormat::AnthropicCapture);
        }
        if probe.parent_uuid.is_some() || probe.session_id.is_some() || probe.leaf_uuid.is_some() {
            return Ok(RecordingFormat::ClaudeCode);
        }
    }
    Err(
        "the first lines of the .jsonl file are neither {request, response} pairs nor Claude Code entries",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_each_format_by_content() {
        let json = Path::new("a.traj.json");
        let jsonl = Path::new("a.jsonl");
        assert_eq!(
            detect(
                json,
                br#"{"info":{},"messages":[],"trajectory_format":"x"}"#
            ),
            Ok(RecordingFormat::SweTraj)
        );
        assert_eq!(
            detect(jsonl, b"\n{\"request\":{},\"response\":{}}\n"),
            Ok(RecordingFormat::AnthropicCapture)
        );
        assert_eq!(
            detect(
                jsonl,
                b"{\"type\":\"summary\",\"summary\":\"s\",\"leafUuid\":\"u\"}\n"
            ),
            Ok(RecordingFormat::ClaudeCode)
        );
        assert_eq!(
            detect(jsonl, b"{\"parentUuid\":null,\"sessionId\":\"s\"}"),
            Ok(RecordingFormat::ClaudeCode)
        );
        assert!(detect(json, br#"{"messages":[]}"#).is_err());
        assert!(detect(json, b"[1, 2]").is_err());
        assert!(detect(jsonl, b"{\"other\":1}\n").is_err());
        assert!(detect(Path::new("PROVENANCE.tsv"), b"a\tb").is_err());
    }
}
