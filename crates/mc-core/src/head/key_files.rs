//! `<key-files>` in `m[0]`: the files the dreamer pinned because the agent keeps re-reading
//! them, within their token budget.
//!
//! The dreamer already fits what it stores to the budget with a cautious estimate; the head
//! counts again with the session's tokenizer, so a smaller budget configured since, or a
//! tokenizer that counts more, still never overruns it: files are taken in the order the
//! dreamer ranked them, and one that does not fit in what is left is skipped.

use super::rows::KeyFile;

/// The line that opens the section: the model must know these are snapshots, not the
/// files as they are now.
pub const KEY_FILES_OPENING: &str = "Files this project's agent reads most, as they were when pinned; the file on disk is the truth.";

/// The element of one file.
fn render_file(file: &KeyFile) -> String {
    let mut out = format!("<file path=\"{}\">\n{}\n", file.path, file.text.trim_end());
    if file.cut_lines > 0 {
        out.push_str(&format!(
            "[… {} more lines not shown: read the file for the rest]\n",
            file.cut_lines
        ));
    }
    out.push_str("</file>\n");
    out
}

/// The section for `files` (in rank order) within `budget` tokens, and the files shown;
/// `None` when none fits.
pub(super) fn render_key_files<'f>(
    files: &'f [KeyFile],
    budget: u64,
    count_tokens: &dyn Fn(&str) -> u64,
) -> Option<(String, Vec<&'f KeyFile>)> {
    let opening = format!("<key-files>\n{KEY_FILES_OPENING}\n");
    let closing = "</key-files>";
    let mut used = count_tokens(&opening) + count_tokens(closing);
    let mut body = String::new();
    let mut shown = Vec::new();
    for file in files {
        let element = render_file(file);
        let tokens = count_tokens(&element);
        if used + tokens > budget {
            continue;
        }
        used += tokens;
        body.push_str(&element);
        shown.push(file);
    }
    if shown.is_empty() {
        return None;
    }
    Some((format!("{opening}{body}{closing}"), shown))
}
