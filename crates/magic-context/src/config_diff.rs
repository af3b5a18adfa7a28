//! The unified diff `setup --dry-run` prints, with secrets masked.
//!
//! Host config files can hold API keys and tokens next to the keys `setup` changes (Claude
//! Code's `~/.claude.json`, OpenCode's provider options), and a diff shows context lines
//! around each change. Any line whose key names a credential has its value replaced, so a
//! dry run pasted into a bug report leaks nothing.

use std::path::Path;

use similar::TextDiff;

/// Key fragments (lowercase) that mark a value as a credential.
const SECRET_KEY_PARTS: [&str; 6] = ["key", "token", "secret", "password", "auth", "credential"];

/// The unified diff from `old` (`None`: the file does not exist) to `new` (`None`: the
/// file is removed), headed with `path`; empty when they are equal.
pub fn unified_diff(path: &Path, old: Option<&str>, new: Option<&str>) -> String {
    let shown = path.display().to_string();
    let old_name = if old.is_some() {
        shown.as_str()
    } else {
        "/dev/null"
    };
    let new_name = if new.is_some() {
        shown.as_str()
    } else {
        "/dev/null"
    };
    let old_text = old.unwrap_or("");
    let new_text = new.unwrap_or("");
    if old_text == new_text && old.is_some() == new.is_some() {
        return String::new();
    }
    let diff = TextDiff::from_lines(old_text, new_text)
        .unified_diff()
        .context_radius(3)
        .header(old_name, new_name)
        .to_string();
    diff.lines()
        .map(mask_secret)
        .fold(String::new(), |mut out, line| {
            out.push_str(&line);
            out.push('\n');
            out
        })
}

/// `line` with every credential's value masked (`"apiKey": "…"`, `api_key = "…"`); hunk
/// headers and file names pass unchanged. A JSON line may hold several pairs (a file
/// written on one line), so each string is looked at.
fn mask_secret(line: &str) -> String {
    if line.starts_with("---") || line.starts_with("+++") || line.starts_with("@@") {
        return line.to_owned();
    }
    if line.contains("\":") {
        return mask_json_values(line);
    }
    match line.split_once('=') {
        Some((key, _)) if names_secret(key) => format!("{key}= \"<redacted>\""),
        _ => line.to_owned(),
    }
}

/// Replaces the string value of each JSON pair whose key names a credential.
fn mask_json_values(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    let mut secret_value_next = false;
    while let Some(start) = rest.find('"') {
        let Some(len) = quoted_len(&rest[start..]) else {
            break;
        };
        let (before, token) = (&rest[..start], &rest[start..start + len]);
        out.push_str(before);
        if secret_value_next && before.trim() == ":" {
            out.push_str("\"<redacted>\"");
        } else {
            out.push_str(token);
        }
        rest = &rest[start + len..];
        secret_value_next = rest.trim_start().starts_with(':') && names_secret(token);
    }
    out.push_str(rest);
    out
}

/// The length in bytes of the JSON string opening `text` (quotes included), if it closes.
fn quoted_len(text: &str) -> Option<usize> {
    let mut escaped = false;
    for (index, ch) in text.char_indices().skip(1) {
        match (escaped, ch) {
            (true, _) => escaped = false,
            (false, '\\') => escaped = true,
            (false, '"') => return Some(index + 1),
            (false, _) => {}
        }
    }
    None
}

fn names_secret(key: &str) -> bool {
    let key = key.to_lowercase();
    SECRET_KEY_PARTS.iter().any(|part| key.contains(part))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diffs_mask_credentials_in_context_lines() {
        let old = "{\n  \"apiKey\": \"sk-ant-secret\",\n  \"theme\": \"dark\"\n}\n";
        let new = "{\n  \"apiKey\": \"sk-ant-secret\",\n  \"theme\": \"dark\",\n  \"mcpServers\": {}\n}\n";
        let diff = unified_diff(Path::new("/h/.claude.json"), Some(old), Some(new));
        assert!(
            diff.starts_with("--- /h/.claude.json\n+++ /h/.claude.json\n"),
            "{diff}"
        );
        assert!(diff.contains("+  \"mcpServers\": {}"), "{diff}");
        assert!(diff.contains(" \"apiKey\": \"<redacted>\","), "{diff}");
        assert!(!diff.contains("sk-ant-secret"), "{diff}");
        assert_eq!(
            mask_secret(" env_key = \"FAKE\""),
            " env_key = \"<redacted>\""
        );
        assert_eq!(
            mask_secret(r#"-{"n": 3, "primaryApiKey": "sk-\"x", "oauth": {"accessToken":"t"}}"#),
            r#"-{"n": 3, "primaryApiKey": "<redacted>", "oauth": {"accessToken":"<redacted>"}}"#
        );
    }

    #[test]
    fn created_and_removed_files_diff_against_dev_null() {
        let created = unified_diff(Path::new("/c.toml"), None, Some("a = 1\n"));
        assert!(
            created.starts_with("--- /dev/null\n+++ /c.toml\n"),
            "{created}"
        );
        let removed = unified_diff(Path::new("/c.toml"), Some("a = 1\n"), None);
        assert!(
            removed.starts_with("--- /c.toml\n+++ /dev/null\n"),
            "{removed}"
        );
        assert_eq!(unified_diff(Path::new("/c"), Some("x\n"), Some("x\n")), "");
    }
}
