//! The project's own docs in `m[0]` (DESIGN §5 "Head").

use serde::Serialize;

use super::units::{Bounds, Percent, Tokens};

/// Which files of the project's root folder `m[0]` carries, and within what budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProjectDocsConfig {
    /// Whether `m[0]` carries the docs at all.
    pub enabled: bool,
    /// File names relative to the project's root folder. ARCHITECTURE.md and STRUCTURE.md
    /// are where a project says what a fresh session should know before it reads any code.
    pub files: Vec<String>,
    /// Share of the usable window the docs may take: 3% (6K tokens of a 200K window) is room
    /// for a page or two of architecture without crowding out live work.
    pub budget_percent: Percent,
}

impl ProjectDocsConfig {
    /// Accepted [`Self::budget_percent`].
    pub const BUDGET_PERCENT: Bounds = Bounds::percent(1, 20);
    /// Most files listed.
    pub const MAX_FILES: usize = 8;
    /// The budget when the model's window is unknown: 3% of a 200K window.
    pub const BUDGET_TOKENS_UNKNOWN_WINDOW: Tokens = Tokens(6_000);

    /// The docs budget for a usable window, or the fixed one when the window is unknown.
    pub fn budget_tokens(&self, usable_window: Option<Tokens>) -> Tokens {
        usable_window.map_or(Self::BUDGET_TOKENS_UNKNOWN_WINDOW, |window| {
            self.budget_percent.of(window)
        })
    }
}

impl Default for ProjectDocsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            files: vec!["ARCHITECTURE.md".to_owned(), "STRUCTURE.md".to_owned()],
            budget_percent: Percent::saturating(3),
        }
    }
}

/// Why a listed doc file name cannot be used, if it cannot: it must name a file inside the
/// project's folder (relative, no `..`, no empty part).
pub fn doc_file_problem(name: &str) -> Option<String> {
    if name.is_empty() || name.len() > 255 {
        return Some("a doc file name must have 1 to 255 characters".to_owned());
    }
    if name.starts_with('/') || name.starts_with('\\') || name.contains(':') {
        return Some(format!(
            "`{name}` is not relative to the project's folder; name a file inside it, like ARCHITECTURE.md"
        ));
    }
    if name
        .split(['/', '\\'])
        .any(|part| part.is_empty() || part == "..")
    {
        return Some(format!(
            "`{name}` leaves the project's folder or has an empty part; name a file inside it, like docs/ARCHITECTURE.md"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doc_files_stay_inside_the_project() {
        for good in ["ARCHITECTURE.md", "docs/STRUCTURE.md"] {
            assert_eq!(doc_file_problem(good), None, "{good}");
        }
        for bad in [
            "",
            "/etc/passwd",
            "../secrets.md",
            "docs//x.md",
            "C:\\x.md",
            "a/../b.md",
        ] {
            assert!(doc_file_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn the_budget_follows_the_window() {
        let config = ProjectDocsConfig::default();
        assert_eq!(config.budget_tokens(Some(Tokens(200_000))), Tokens(6_000));
        assert_eq!(config.budget_tokens(None), Tokens(6_000));
    }
}
