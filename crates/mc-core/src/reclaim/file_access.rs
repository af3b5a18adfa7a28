//! Recognising tool calls and shell commands that read or write a file.
//!
//! The matcher is deliberately narrow: a call it does not recognise is simply not a file
//! access, and the worst that costs is keeping a read that could have gone. A false match
//! would drop output the agent still needs, so anything ambiguous is refused.
//!
//! Recognised, tool names compared case-insensitively, the path taken from the input's
//! `file_path`, `path` or `filePath` string:
//! - reads: `Read`, `read_file`, `View`, `view_file`; whole unless the input has `offset`,
//!   `limit`, `view_range`, `start_line` or `end_line`;
//! - writes: `Write`, `write_file`, `Edit`, `MultiEdit`, `multi_edit`, `str_replace`,
//!   `edit_file`, `create_file`;
//! - editor tools `str_replace_based_edit_tool` / `str_replace_editor`: `command` `view` reads
//!   (partial with `view_range`), `create`, `str_replace`, `insert`, `undo_edit` write;
//! - shell tools (`Bash`, `bash`, `shell`, `run_shell_command`, `execute_bash`) whose `command`
//!   (string, or `["bash", "-lc", cmd]` array) is one of the commands [`classify_command`]
//!   accepts. Text-protocol agents' fenced ```` ```bash ```` actions go through it too.

use serde_json::Value;

/// What a call does to a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum FileAccess {
    /// Reads `path`. A `whole` read shows the entire file; a partial one is identified by
    /// `key` (the normalised call) so only the same partial read again supersedes it.
    Read {
        path: String,
        whole: bool,
        key: String,
    },
    /// Changes `path`.
    Write { path: String },
}

impl FileAccess {
    /// The file accessed.
    pub fn path(&self) -> &str {
        match self {
            Self::Read { path, .. } | Self::Write { path } => path,
        }
    }
}

/// The file a structured tool call reads, whole or in part (a `Read`, a `read_file`, an
/// editor's `view`, a shell `cat`, `head` or `sed -n` of one path), as the call wrote it;
/// `None` for a call that reads no file or that this matcher cannot be sure of.
pub fn read_path(name: &str, input: &Value) -> Option<String> {
    match classify_call(name, input)? {
        FileAccess::Read { path, .. } => Some(path),
        FileAccess::Write { .. } => None,
    }
}

/// Classifies a structured tool call.
pub(super) fn classify_call(name: &str, input: &Value) -> Option<FileAccess> {
    let name = name.to_ascii_lowercase();
    match name.as_str() {
        "read" | "read_file" | "view" | "view_file" => {
            let path = path_of(input)?;
            let whole = !["offset", "limit", "view_range", "start_line", "end_line"]
                .iter()
                .any(|key| input.get(key).is_some_and(|value| !value.is_null()));
            let key = format!("{name} {path} {}", canonical(input));
            Some(FileAccess::Read { path, whole, key })
        }
        "write" | "write_file" | "edit" | "multiedit" | "multi_edit" | "str_replace"
        | "edit_file" | "create_file" => Some(FileAccess::Write {
            path: path_of(input)?,
        }),
        "str_replace_based_edit_tool" | "str_replace_editor" => {
            let path = path_of(input)?;
            match input.get("command").and_then(Value::as_str)? {
                "view" => {
                    let whole = input.get("view_range").is_none_or(Value::is_null);
                    let key = format!("view {path} {}", canonical(input));
                    Some(FileAccess::Read { path, whole, key })
                }
                "create" | "str_replace" | "insert" | "undo_edit" => {
                    Some(FileAccess::Write { path })
                }
                _ => None,
            }
        }
        "bash" | "shell" | "run_shell_command" | "execute_bash" => {
            classify_command(&shell_command(input)?)
        }
        _ => None,
    }
}

/// Classifies one shell command line.
///
/// Accepted: `cat [-flags] PATH` and `nl [-flags] PATH` (whole reads); `head`/`tail` with
/// `-n N`, `-N` or `-c N` and one PATH, `sed -n 'SCRIPT' PATH` (partial reads); `cat`/`nl`
/// of one PATH piped into one `head`, `tail` or `sed -n` (partial); `sed -i … PATH` (a write).
/// Refused: anything with `;`, `&`, `>`, `<`, backticks, `$(` or a newline, more than one
/// pipe, several paths, or a glob; the shell's cwd is unknown, so paths are compared as
/// written (with a leading `./` removed).
pub(super) fn classify_command(command: &str) -> Option<FileAccess> {
    let command = command.trim();
    if command.is_empty()
        || [";", "&", ">", "<", "`", "$(", "\n"]
            .iter()
            .any(|bad| command.contains(bad))
    {
        return None;
    }
    let segments: Vec<&str> = command.split('|').collect();
    match segments.as_slice() {
        [single] => classify_segment(&words(single)?),
        [source, filter] => {
            let source = words(source)?;
            let filter = words(filter)?;
            let (name, args) = source.split_first()?;
            if !matches!(name.as_str(), "cat" | "nl") || !is_range_filter(&filter) {
                return None;
            }
            let path = single_path(args)?;
            Some(FileAccess::Read {
                path,
                whole: false,
                key: normalised_key(&source, &filter),
            })
        }
        _ => None,
    }
}

/// One simple command, already split into words.
fn classify_segment(words: &[String]) -> Option<FileAccess> {
    let (name, args) = words.split_first()?;
    match name.as_str() {
        "cat" | "nl" => Some(FileAccess::Read {
            path: single_path(args)?,
            whole: true,
            key: words.join(" "),
        }),
        "head" | "tail" => {
            let mut rest = args;
            let mut operands = Vec::new();
            while let Some((word, tail)) = rest.split_first() {
                rest = tail;
                if matches!(word.as_str(), "-n" | "-c") {
                    let (_, tail) = rest.split_first()?;
                    rest = tail;
                } else if !word.starts_with('-') {
                    operands.push(word.clone());
                }
            }
            Some(FileAccess::Read {
                path: only_path(operands)?,
                whole: false,
                key: words.join(" "),
            })
        }
        "sed" => {
            let in_place = args.iter().any(|word| word.starts_with("-i"));
            let quiet = args.iter().any(|word| word == "-n");
            let operands: Vec<String> = args
                .iter()
                .filter(|word| !word.starts_with('-'))
                .cloned()
                .collect();
            // First operand is the script, the one after it the file.
            let [_script, path] = operands.as_slice() else {
                return None;
            };
            let path = clean_path(path)?;
            if in_place {
                Some(FileAccess::Write { path })
            } else if quiet {
                Some(FileAccess::Read {
                    path,
                    whole: false,
                    key: words.join(" "),
                })
            } else {
                None
            }
        }
        _ => None,
    }
}

/// A pipe filter that selects a range of lines: `head`, `tail` or `sed -n`, with no file.
fn is_range_filter(words: &[String]) -> bool {
    let Some((name, args)) = words.split_first() else {
        return false;
    };
    let operands = args.iter().filter(|word| !word.starts_with('-')).count();
    match name.as_str() {
        // `head -n 20`: the count is the only operand.
        "head" | "tail" => operands <= 1,
        "sed" => args.iter().any(|word| word == "-n") && operands == 1,
        _ => false,
    }
}

/// The one non-flag operand of `args`, as a path.
fn single_path(args: &[String]) -> Option<String> {
    only_path(
        args.iter()
            .filter(|word| !word.starts_with('-'))
            .cloned()
            .collect(),
    )
}

/// The path when exactly one operand is given.
fn only_path(operands: Vec<String>) -> Option<String> {
    match operands.as_slice() {
        [path] => clean_path(path),
        _ => None,
    }
}

/// A path as compared between calls: `./` removed; globs and variables refused.
fn clean_path(path: &str) -> Option<String> {
    if path.is_empty() || path.contains(['*', '?', '$', '[', '{', '~']) {
        return None;
    }
    let path = path.strip_prefix("./").unwrap_or(path);
    Some(path.to_owned())
}

/// Splits a command into words, honouring single and double quotes (no escapes: a
/// backslash makes the command ambiguous enough to refuse).
fn words(segment: &str) -> Option<Vec<String>> {
    if segment.contains('\\') {
        return None;
    }
    let mut words = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in segment.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => current.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            (None, c) => {
                current.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return None;
    }
    if in_word {
        words.push(current);
    }
    Some(words)
}

/// The key of a piped partial read.
fn normalised_key(source: &[String], filter: &[String]) -> String {
    format!("{} | {}", source.join(" "), filter.join(" "))
}

/// The path a structured call names.
fn path_of(input: &Value) -> Option<String> {
    ["file_path", "path", "filePath"]
        .iter()
        .find_map(|key| input.get(key).and_then(Value::as_str))
        .and_then(clean_path)
}

/// The command line of a shell tool call.
fn shell_command(input: &Value) -> Option<String> {
    let command = input.get("command").or_else(|| input.get("cmd"))?;
    if let Some(text) = command.as_str() {
        return Some(text.to_owned());
    }
    let parts: Vec<&str> = command
        .as_array()?
        .iter()
        .map(Value::as_str)
        .collect::<Option<_>>()?;
    match parts.as_slice() {
        [shell, flag, script]
            if matches!(*shell, "bash" | "sh" | "zsh") && flag.starts_with('-') =>
        {
            Some((*script).to_owned())
        }
        _ => Some(parts.join(" ")),
    }
}

/// A canonical form of a structured input, for partial-read keys (serde_json maps keep
/// insertion order here, so keys are sorted explicitly).
fn canonical(input: &Value) -> String {
    match input.as_object() {
        Some(map) => {
            let mut pairs: Vec<(&String, &Value)> = map.iter().collect();
            pairs.sort_by(|a, b| a.0.cmp(b.0));
            pairs
                .iter()
                .map(|(key, value)| format!("{key}={value}"))
                .collect::<Vec<_>>()
                .join(",")
        }
        None => input.to_string(),
    }
}

/// The single fenced shell block of a text-protocol action (```` ```bash ```` or
/// ```` ```sh ````), or `None` when there is not exactly one.
pub(super) fn fenced_command(text: &str) -> Option<&str> {
    let mut found = None;
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after = rest.get(start + 3..)?;
        let end = after.find("```")?;
        let block = after.get(..end)?;
        rest = after.get(end + 3..)?;
        let (lang, body) = block.split_once('\n')?;
        if matches!(lang.trim(), "bash" | "sh" | "shell") {
            if found.is_some() {
                return None;
            }
            found = Some(body.trim());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(path: &str, whole: bool, key: &str) -> Option<FileAccess> {
        Some(FileAccess::Read {
            path: path.into(),
            whole,
            key: key.into(),
        })
    }

    fn write(path: &str) -> Option<FileAccess> {
        Some(FileAccess::Write { path: path.into() })
    }

    #[test]
    fn shell_reads_and_writes() {
        assert_eq!(
            classify_command("cat ./src/a.py"),
            read("src/a.py", true, "cat ./src/a.py")
        );
        assert_eq!(
            classify_command("nl -ba a.py"),
            read("a.py", true, "nl -ba a.py")
        );
        assert_eq!(
            classify_command("head -n 20 a.py"),
            read("a.py", false, "head -n 20 a.py")
        );
        assert_eq!(
            classify_command("tail -5 a.py"),
            read("a.py", false, "tail -5 a.py")
        );
        assert_eq!(
            classify_command("sed -n '10,20p' a.py"),
            read("a.py", false, "sed -n 10,20p a.py")
        );
        assert_eq!(
            classify_command("nl -ba a.py | sed -n '1,40p'"),
            read("a.py", false, "nl -ba a.py | sed -n 1,40p")
        );
        assert_eq!(classify_command("sed -i 's/a/b/' a.py"), write("a.py"));
    }

    #[test]
    fn ambiguous_commands_are_not_file_accesses() {
        for command in [
            "cat a.py b.py",
            "cat *.py",
            "cat a.py > b.py",
            "cd x && cat a.py",
            "cat a.py | grep x",
            "cat $FILE",
            "sed 's/a/b/' a.py",
            "grep -n x a.py",
            "cat 'a.py",
            "",
        ] {
            assert_eq!(classify_command(command), None, "{command}");
        }
    }

    #[test]
    fn the_path_a_call_reads() {
        let reads = [
            ("Read", json!({"file_path": "/src/shop/src/a.rs"})),
            ("read", json!({"filePath": "src/a.rs", "offset": 10})),
            ("Bash", json!({"command": "sed -n '1,40p' ./src/a.rs"})),
            ("shell", json!({"command": ["bash", "-lc", "cat src/a.rs"]})),
        ];
        let paths: Vec<Option<String>> = reads
            .iter()
            .map(|(name, input)| read_path(name, input))
            .collect();
        assert_eq!(
            paths,
            [
                Some("/src/shop/src/a.rs".to_owned()),
                Some("src/a.rs".to_owned()),
                Some("src/a.rs".to_owned()),
                Some("src/a.rs".to_owned()),
            ]
        );
        assert_eq!(read_path("Edit", &json!({"file_path": "src/a.rs"})), None);
        assert_eq!(read_path("Bash", &json!({"command": "cargo test"})), None);
    }

    #[test]
    fn structured_calls() {
        assert_eq!(
            classify_call("Read", &json!({"file_path": "a.py"})).map(|a| a.path().to_owned()),
            Some("a.py".into())
        );
        assert!(matches!(
            classify_call("read_file", &json!({"path": "a.py", "offset": 3})),
            Some(FileAccess::Read { whole: false, .. })
        ));
        assert_eq!(
            classify_call("MultiEdit", &json!({"file_path": "a.py"})),
            write("a.py")
        );
        assert_eq!(
            classify_call(
                "str_replace_editor",
                &json!({"command": "create", "path": "n.py"})
            ),
            write("n.py")
        );
        assert!(matches!(
            classify_call(
                "str_replace_editor",
                &json!({"command": "view", "path": "n.py", "view_range": [1, 9]})
            ),
            Some(FileAccess::Read { whole: false, .. })
        ));
        assert_eq!(
            classify_call("shell", &json!({"command": ["bash", "-lc", "cat a.py"]})),
            read("a.py", true, "cat a.py")
        );
        assert_eq!(classify_call("Grep", &json!({"path": "a.py"})), None);
        assert_eq!(classify_call("Read", &json!({"file_path": 3})), None);
    }

    #[test]
    fn fenced_command_needs_exactly_one_shell_block() {
        assert_eq!(
            fenced_command("THOUGHT: x\n```bash\ncat a.py\n```"),
            Some("cat a.py")
        );
        assert_eq!(
            fenced_command("```python\nprint()\n```\n```sh\nls\n```"),
            Some("ls")
        );
        assert_eq!(fenced_command("```bash\nls\n```\n```bash\npwd\n```"), None);
        assert_eq!(fenced_command("no block"), None);
    }
}
