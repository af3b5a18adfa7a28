//! Errored tool calls: failures the agent has already reacted to.

use super::ReclaimConfig;
use super::index::FingerprintIndex;
use super::units::Unit;
use crate::tags::TagNo;

/// Text openings that mark a tool's output as an error when the tool did not set `is_error`.
///
/// Matched case-sensitively at the start of the trimmed text, so an output that merely
/// mentions an error somewhere (a log, a test run) is not taken for a failed call.
const ERROR_MARKERS: &[&str] = &[
    "Error:",
    "error:",
    "ERROR:",
    "Error ",
    "<tool_use_error>",
    "<error>",
    "Traceback (most recent call last)",
    "fatal:",
    "Exception:",
    "Command failed",
    "Failed to ",
];

/// Tags of errored tool output at least `errored_age_turns` old.
pub(super) fn errored_calls(
    units: &[Unit<'_>],
    index: &FingerprintIndex,
    config: &ReclaimConfig,
) -> Vec<TagNo> {
    units
        .iter()
        .filter(|unit| unit.is_reclaimable_output())
        .filter(|unit| unit.age_turns >= config.errored_age_turns)
        .filter(|unit| {
            unit.is_error_result()
                || index
                    .print(unit.tag)
                    .is_some_and(|print| print.reports_error)
        })
        .map(|unit| unit.tag)
        .collect()
}

/// Whether a tool's text output opens with one of the [`ERROR_MARKERS`].
fn starts_with_error(text: &str) -> bool {
    let text = text.trim_start();
    ERROR_MARKERS.iter().any(|marker| text.starts_with(marker))
}

/// Whether tool output text reports a failure: it opens with an error marker or, in the
/// text protocol (`<returncode>N</returncode><output>…`), a non-zero return code comes with
/// output that opens with one. A failing test run (non-zero, ordinary output) is not an error
/// here: its output is information the agent acts on, left to the stale lane.
pub(super) fn is_error_text(text: &str) -> bool {
    match returncode_envelope(text) {
        Some((code, output)) => code != "0" && starts_with_error(output),
        None => starts_with_error(text),
    }
}

/// The return code and output of a text-protocol command result, if `text` is one.
pub(super) fn returncode_envelope(text: &str) -> Option<(&str, &str)> {
    let rest = text.trim_start().strip_prefix("<returncode>")?;
    let (code, rest) = rest.split_once("</returncode>")?;
    let rest = rest.trim_start();
    let output = rest.strip_prefix("<output>").unwrap_or(rest);
    Some((code.trim(), output))
}
