//! The working directory a prompt text states (each host words it its own way), remembered
//! for the texts seen last.
//!
//! A client sends the same system prompt on every call, and finding the statement in it
//! searched tens of kilobytes once per host's wording on every call (twice with the agent
//! tools on: they resolve the project too), about a tenth of a pass's own CPU. Comparing the
//! text with a remembered copy is one memcmp, several times faster than the searches.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::{Mutex, PoisonError};

/// How each host states its working directory: the text before the path and the text that
/// ends it (`"\n"`: the end of the line). Taken from the hosts' own prompts
/// (`shared/CLIENTS.md`); the matching is case-sensitive, so Pi's "Current working
/// directory" is not mistaken for OpenCode's "Working directory" or the reverse.
pub(crate) const DIRECTORY_STATEMENTS: [(&str, &str); 4] = [
    // Claude Code, in the system prompt's environment section.
    ("Primary working directory: ", "\n"),
    // Pi, the system prompt's last line.
    ("Current working directory: ", "\n"),
    // OpenCode, the `<env>` block near the end of the system prompt.
    ("Working directory: ", "\n"),
    // Codex, `<environment_context>` in the first user message.
    ("<cwd>", "</cwd>"),
];

/// The directory a prompt text states, if any.
pub(crate) fn stated_directory(text: &str) -> Option<&str> {
    DIRECTORY_STATEMENTS.iter().find_map(|(before, end)| {
        let rest = &text[text.find(before)? + before.len()..];
        let stated = rest.find(end).map_or(rest, |stop| &rest[..stop]);
        let line = stated.lines().next()?.trim();
        line.starts_with('/').then_some(line)
    })
}

/// Texts remembered: a proxy serves a handful of clients at a time, each with a system
/// prompt and a first message.
const REMEMBERED: usize = 16;

/// Longer texts are searched every time rather than kept.
const MAX_REMEMBERED_BYTES: usize = 1 << 20;

/// A text and where the directory it states lies in it.
struct Remembered {
    text: Box<str>,
    stated: Option<Range<usize>>,
}

/// The directories recent texts state.
#[derive(Default)]
pub struct StatedDirectories {
    recent: Mutex<VecDeque<Remembered>>,
}

impl StatedDirectories {
    /// The directory `text` states, as [`stated_directory`] finds it.
    pub fn stated<'t>(&self, text: &'t str) -> Option<&'t str> {
        if text.len() > MAX_REMEMBERED_BYTES {
            return stated_directory(text);
        }
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        let stated = match recent.iter().position(|kept| *kept.text == *text) {
            Some(at) => recent.remove(at).and_then(|kept| {
                let stated = kept.stated.clone();
                recent.push_back(kept);
                stated
            }),
            None => {
                let stated = stated_directory(text).map(|found| {
                    let start = found.as_ptr() as usize - text.as_ptr() as usize;
                    start..start + found.len()
                });
                if recent.len() >= REMEMBERED {
                    recent.pop_front();
                }
                recent.push_back(Remembered {
                    text: text.into(),
                    stated: stated.clone(),
                });
                stated
            }
        };
        stated.and_then(|range| text.get(range))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_claude_code_environment_line() {
        let text = "Here is useful information about the environment:\n<env>\nPrimary working directory: /tmp/some where\nIs directory a git repo: Yes\n</env>";
        assert_eq!(stated_directory(text), Some("/tmp/some where"));
        assert_eq!(stated_directory("no directory here"), None);
    }

    /// OpenCode's system prompt ends with an `<env>` block, then a skills list.
    #[test]
    fn reads_opencode_env_block() {
        let text = "You are opencode, an interactive CLI tool.\n\nYou are powered by the model named fake-model. The exact model ID is fake/fake-model\nHere is some useful information about the environment you are running in:\n<env>\n  Working directory: /home/dev/shop\n  Workspace root folder: /home/dev/shop\n  Is directory a git repo: yes\n  Platform: linux\n  Today's date: Mon Nov 30 2026\n</env>\n<skills>\n</skills>";
        assert_eq!(stated_directory(text), Some("/home/dev/shop"));
    }

    /// Codex states it in the first user message's `<environment_context>`.
    #[test]
    fn reads_codex_environment_context() {
        let text = "<environment_context>\n  <cwd>/tmp/codex run</cwd>\n  <shell>bash</shell>\n  <current_date>2026-11-30</current_date>\n  <timezone>Etc/UTC</timezone>\n  <filesystem><workspace_roots><root>/tmp/codex run</root></workspace_roots></filesystem>\n</environment_context>";
        assert_eq!(stated_directory(text), Some("/tmp/codex run"));
    }

    /// Pi's system prompt names its own install folder in docs paths, and ends with the date
    /// and the working directory.
    #[test]
    fn reads_pi_last_line() {
        let text = "You are an expert coding assistant operating inside pi, a coding agent harness.\n- Docs: /usr/lib/node_modules/@mariozechner/pi-coding-agent/README.md\nCurrent date: 2026-11-30\nCurrent working directory: /srv/work/pi-run";
        assert_eq!(stated_directory(text), Some("/srv/work/pi-run"));
    }

    /// A relative or empty statement is not a directory.
    #[test]
    fn a_relative_statement_is_ignored() {
        assert_eq!(stated_directory("Current working directory: src"), None);
        assert_eq!(stated_directory("<cwd></cwd>"), None);
    }

    #[test]
    fn a_remembered_text_states_what_a_search_finds() {
        let directories = StatedDirectories::default();
        let texts = [
            "env\nPrimary working directory: /srv/app\nmore".to_owned(),
            "no statement here".to_owned(),
            "<cwd>/tmp/x</cwd>".to_owned(),
        ];
        for _ in 0..3 {
            for text in &texts {
                // A copy elsewhere in memory: found by its bytes, sliced from itself.
                let copy = text.clone();
                assert_eq!(directories.stated(&copy), stated_directory(&copy));
                if let Some(found) = directories.stated(&copy) {
                    assert!(copy.as_bytes().as_ptr_range().contains(&found.as_ptr()));
                }
            }
        }
        assert_eq!(directories.recent.lock().unwrap().len(), texts.len());
    }

    #[test]
    fn the_memory_is_bounded() {
        let directories = StatedDirectories::default();
        for n in 0..REMEMBERED * 3 {
            let text = format!("Working directory: /p/{n}\n");
            assert_eq!(directories.stated(&text), Some(&text[19..text.len() - 1]));
        }
        assert_eq!(directories.recent.lock().unwrap().len(), REMEMBERED);
        let long = format!(
            "Working directory: /big\n{}",
            "x".repeat(MAX_REMEMBERED_BYTES)
        );
        assert_eq!(directories.stated(&long), Some("/big"));
        assert_eq!(directories.recent.lock().unwrap().len(), REMEMBERED);
    }
}
