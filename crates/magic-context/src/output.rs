//! Writing command output to stdout (logs and warnings go to stderr).

use std::io::{self, Write};

use anyhow::Context;
use serde_json::Value;

/// Pretty JSON with a trailing newline, the form every `--json` flag prints.
pub fn pretty(value: &Value) -> anyhow::Result<String> {
    let mut text = serde_json::to_string_pretty(value).context("cannot format JSON")?;
    text.push('\n');
    Ok(text)
}

/// Writes `text` to stdout and flushes; a closed pipe surfaces as an error `main` recognises.
pub fn write_stdout(text: &str) -> anyhow::Result<()> {
    let mut stdout = io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .context("cannot write to stdout")?;
    stdout.flush().context("cannot write to stdout")
}
