//! The agent loop's read-only tools over the project folder: list, read a line range,
//! search with a regular expression, `git log` and `git show` of a path.
//!
//! Every path goes through [`ProjectFolder`]'s checks (no `..`, no absolute path, no link
//! out of the folder, the size cap), and a refusal comes back as the tool's text for the
//! model to read, never as an error of the run: the model asked for something it may not
//! have and is told so in words it can act on. Listing and searching read the
//! [`ProjectIndex`] the task already loaded, so a step costs no second pass over the disk.
//! Every result is cut to [`MAX_RESULT_CHARS`]: each later step re-sends it.

use mc_core::dreamer::StepCall;
use regex::RegexBuilder;

use crate::project_folder::ProjectFolder;
use crate::project_index::ProjectIndex;

/// Most characters of one tool result the model is shown.
pub const MAX_RESULT_CHARS: usize = 6_000;

/// Most lines one `read_file` returns.
pub const MAX_READ_LINES: u32 = 200;

/// Most files one `list_files` names.
const MAX_LISTED: usize = 300;

/// Most lines one `search` returns.
const MAX_MATCHES: usize = 60;

/// Most commits one `git_log` shows.
const MAX_LOG_COMMITS: &str = "--max-count=15";

/// Longest regular expression accepted, compiled size included: a search is a look, not a
/// computation.
const MAX_PATTERN_BYTES: usize = 1 << 20;

/// The project as the loop's tools see it.
pub struct AgentTools<'a> {
    /// The folder, for reads and git.
    pub folder: &'a ProjectFolder,
    /// Its files and text, loaded once by the task.
    pub index: &'a ProjectIndex,
}

impl AgentTools<'_> {
    /// What `call` returns, when it is one of the looking tools; `None` for the others
    /// (verdicts, proposals, `finish`), which the loop handles.
    pub fn look(&self, call: &StepCall) -> Option<String> {
        let result = match call {
            StepCall::ListFiles { under } => Ok(self.list_files(under.as_deref())),
            StepCall::ReadFile {
                path,
                start_line,
                end_line,
            } => self.read_file(path, *start_line, *end_line),
            StepCall::Search { pattern, under } => self.search(pattern, under.as_deref()),
            StepCall::GitLog { path } => self.git_log(path),
            StepCall::GitShow { revision, path } => self.git_show(revision, path.as_deref()),
            StepCall::Verdict(_) | StepCall::ProposeDoc { .. } | StepCall::Finish { .. } => {
                return None;
            }
        };
        Some(cut(result.unwrap_or_else(|error| format!("error: {error}"))))
    }

    fn list_files(&self, under: Option<&str>) -> String {
        let under = under.map(|folder| folder.trim_matches('/')).unwrap_or("");
        let prefix = format!("{under}/");
        let files: Vec<&String> = self
            .index
            .files()
            .iter()
            .filter(|file| under.is_empty() || file.starts_with(&prefix))
            .collect();
        let shown = files.len().min(MAX_LISTED);
        let mut out = format!(
            "{} files{}",
            files.len(),
            if under.is_empty() {
                String::new()
            } else {
                format!(" under {under}/")
            }
        );
        for file in &files[..shown] {
            out.push('\n');
            out.push_str(file);
        }
        if shown < files.len() {
            out.push_str(&format!(
                "\n… {} more; list a folder with `path`",
                files.len() - shown
            ));
        }
        out
    }

    fn read_file(&self, path: &str, start: u32, end: u32) -> Result<String, String> {
        if end < start {
            return Err(format!("end_line {end} is before start_line {start}"));
        }
        let end = end.min(start.saturating_add(MAX_READ_LINES - 1));
        let text = self
            .folder
            .read_text(path)
            .map_err(|error| error.to_string())?;
        let total = text.lines().count();
        let first = usize::try_from(start).unwrap_or(usize::MAX);
        if first > total.max(1) {
            return Err(format!("`{path}` has {total} lines"));
        }
        let mut out = format!("{path}, {total} lines");
        for (number, line) in text
            .lines()
            .enumerate()
            .skip(first - 1)
            .take(usize::try_from(end - start + 1).unwrap_or(usize::MAX))
        {
            out.push_str(&format!("\n{}: {line}", number + 1));
        }
        Ok(out)
    }

    fn search(&self, pattern: &str, under: Option<&str>) -> Result<String, String> {
        if let Some(folder) = under {
            self.folder
                .resolve(folder)
                .map_err(|error| error.to_string())?;
        }
        let regex = RegexBuilder::new(pattern)
            .size_limit(MAX_PATTERN_BYTES)
            .build()
            .map_err(|error| format!("`{pattern}` is not a regular expression: {error}"))?;
        let found = self
            .index
            .lines_under(under, |line| regex.is_match(line), MAX_MATCHES + 1);
        if found.is_empty() {
            return Ok(format!("no line matches `{pattern}`"));
        }
        let mut out = String::new();
        for seen in found.iter().take(MAX_MATCHES) {
            let text: String = seen.text.chars().take(200).collect();
            out.push_str(&format!("{}:{}: {text}\n", seen.path, seen.line));
        }
        if found.len() > MAX_MATCHES {
            out.push_str(&format!(
                "… more than {MAX_MATCHES} lines match; narrow the pattern or the path"
            ));
        }
        Ok(out.trim_end().to_owned())
    }

    fn git_log(&self, path: &str) -> Result<String, String> {
        self.folder
            .resolve(path)
            .map_err(|error| error.to_string())?;
        let log = self.folder.git(&[
            "log",
            "--no-color",
            "--no-ext-diff",
            MAX_LOG_COMMITS,
            "-M",
            "--full-diff",
            "--name-status",
            "--date=short",
            "--format=commit %h %ad %s",
            "--",
            path,
        ])?;
        let log = log.trim();
        Ok(if log.is_empty() {
            format!("no commit touched `{path}`")
        } else {
            log.to_owned()
        })
    }

    fn git_show(&self, revision: &str, path: Option<&str>) -> Result<String, String> {
        let plain = revision.len() <= 100
            && !revision.starts_with('-')
            && revision
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_./~^@{}-".contains(c));
        if !plain {
            return Err(format!(
                "`{revision}` is not a revision (a commit hash, a branch, HEAD~2)"
            ));
        }
        let mut args = vec![
            "show",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "-M",
            "--date=short",
            "--format=commit %h %ad %an%n%s%n%b",
            "--end-of-options",
            revision,
        ];
        if let Some(path) = path {
            self.folder
                .resolve(path)
                .map_err(|error| error.to_string())?;
            args.extend(["--", path]);
        }
        Ok(self.folder.git(&args)?.trim().to_owned())
    }
}

/// `text` within [`MAX_RESULT_CHARS`], saying what was cut.
fn cut(text: String) -> String {
    let Some((at, _)) = text.char_indices().nth(MAX_RESULT_CHARS) else {
        return text;
    };
    let left = text[at..].chars().count();
    format!(
        "{}\n… {left} more characters not shown; ask for less",
        &text[..at]
    )
}
