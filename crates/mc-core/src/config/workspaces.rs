//! Workspaces: named groups of projects that read each other's memories.
//!
//! A service and its client library, or the repositories of one product, learn facts that
//! hold for all of them. A workspace lists their roots and the memory categories they share:
//! each member's `m[0]` shows the other members' memories of those categories, marked with
//! the project they come from, and `ctx_search` finds them; only the owning project edits
//! them. Membership is the user's decision, so the loader takes this section from the user
//! file only: a project's own file could otherwise join someone else's memories.
//!
//! The roots are kept as the user wrote them, tidied (`~/src//api/` is `~/src/api`), because
//! they double as the name the prompt shows for each member. Which project a root is, is
//! decided later the way the proxy identifies any working directory (the repository's root
//! commit, else the canonical path), so any folder inside a repository names that repository.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::head::MemoryCategory;

/// Every workspace, by name.
pub type WorkspacesConfig = BTreeMap<String, WorkspaceConfig>;

/// One workspace: who is in it and what they share.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkspaceConfig {
    /// The member projects' roots, absolute or from the home folder (`~/src/api`), tidied,
    /// in the order written, each once.
    pub projects: Vec<String>,
    /// The categories a member shows of the others' memories, in rendering order. All five
    /// unless the user narrows them: grouping projects is already the decision to share
    /// what they learnt, and a fact of any category may hold across them (a service's port
    /// is its client's config value).
    pub categories: Vec<MemoryCategory>,
}

impl WorkspaceConfig {
    /// Longest workspace name: it is shown in every member's prompt.
    pub const MAX_NAME_CHARS: usize = 64;
    /// Longest root accepted, in bytes: no path on Linux or macOS is longer.
    pub const MAX_ROOT_BYTES: usize = 4096;
    /// The categories shared when the user does not list them.
    pub const DEFAULT_CATEGORIES: [MemoryCategory; 5] = MemoryCategory::ALL;
}

/// Why `name` cannot name a workspace, if it cannot: it appears in the prompt's markup, so
/// it is a plain word.
pub fn workspace_name_problem(name: &str) -> Option<String> {
    let plain = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if name.is_empty() || name.chars().count() > WorkspaceConfig::MAX_NAME_CHARS || !plain {
        return Some(format!(
            "`{name}` cannot name a workspace: use 1 to {} letters, digits, `-`, `_` or `.`",
            WorkspaceConfig::MAX_NAME_CHARS
        ));
    }
    None
}

/// `root` tidied (repeated and trailing slashes, `.` parts removed), or why it cannot name
/// a project: it must be absolute or start at the home folder (`~/`), since a relative path
/// would mean a different folder for every process that reads the file, and it appears in
/// the prompt's markup, so quotes, angle brackets and control characters are refused.
pub fn normalise_root(root: &str) -> Result<String, String> {
    let trimmed = root.trim();
    if trimmed.is_empty() {
        return Err("a project root cannot be empty".to_owned());
    }
    if trimmed.len() > WorkspaceConfig::MAX_ROOT_BYTES {
        return Err(format!(
            "a project root has at most {} bytes",
            WorkspaceConfig::MAX_ROOT_BYTES
        ));
    }
    if trimmed
        .chars()
        .any(|c| c.is_control() || "\"<>".contains(c))
    {
        return Err(format!(
            "`{}` holds a quote, `<`, `>` or a control character, which the prompt cannot show",
            trimmed.escape_debug()
        ));
    }
    let (prefix, rest) = if let Some(rest) = trimmed.strip_prefix('/') {
        ("/", rest)
    } else if trimmed == "~" {
        ("~", "")
    } else if let Some(rest) = trimmed.strip_prefix("~/") {
        ("~/", rest)
    } else {
        return Err(format!(
            "`{trimmed}` is relative; write the project's root as an absolute path \
             (`/home/me/src/api`) or from the home folder (`~/src/api`)"
        ));
    };
    let parts: Vec<&str> = rest
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    let tidied = match (prefix, parts.is_empty()) {
        ("~/", true) => "~".to_owned(),
        (_, true) => prefix.to_owned(),
        (_, false) => format!("{prefix}{}", parts.join("/")),
    };
    Ok(tidied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_are_tidied_and_must_be_absolute_or_from_home() {
        for (written, tidied) in [
            ("/home/dev/api", "/home/dev/api"),
            (" /home//dev/./api/ ", "/home/dev/api"),
            ("~/src/web/", "~/src/web"),
            ("~", "~"),
            ("~/", "~"),
            ("/", "/"),
            ("/a/../b", "/a/../b"),
        ] {
            assert_eq!(normalise_root(written).as_deref(), Ok(tidied), "{written}");
        }
        for bad in [
            "",
            "  ",
            "src/api",
            "./api",
            "~other/api",
            "/a\"b",
            "/a<b",
            "/a\nb",
        ] {
            assert!(normalise_root(bad).is_err(), "{bad:?}");
        }
        let too_long = format!("/{}", "a".repeat(WorkspaceConfig::MAX_ROOT_BYTES));
        assert!(normalise_root(&too_long).is_err());
    }

    #[test]
    fn names_are_plain_words() {
        for good in ["shop", "shop-v2", "a_b.c", "X9"] {
            assert_eq!(workspace_name_problem(good), None, "{good}");
        }
        for bad in ["", "two words", "q\"uote", "<x>", &"n".repeat(65)] {
            assert!(workspace_name_problem(bad).is_some(), "{bad}");
        }
    }
}
