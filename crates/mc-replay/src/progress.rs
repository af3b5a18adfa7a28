//! The progress bar of long replays: drawn on a terminal, absent when stderr is piped.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar over `total` recording replays, or a hidden one when stderr is not a terminal (or
/// `enabled` is false), so logs and CI output stay clean.
pub fn replay_bar(total: u64, enabled: bool) -> ProgressBar {
    if !enabled || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} replaying [{bar:40}] {pos}/{len} {msg} ({elapsed})")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}
