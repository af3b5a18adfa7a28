//! Stand-in definitions of the tools a Claude Code-like agent offers, written for this
//! project (not copied from any client): parameter names follow the `tool_use` inputs such
//! sessions record, so a replayed call validates against its stand-in schema, and the
//! descriptions have the length and tone of a real agent's, so token counts are realistic.

use serde_json::{Value, json};

/// Tool names in the order a Claude Code-like client lists them; stand-ins follow it so
/// the tools block is the same bytes for every session that uses the same tools.
pub(super) const ORDER: &[&str] = &[
    "Task",
    "Bash",
    "BashOutput",
    "KillShell",
    "Glob",
    "Grep",
    "LS",
    "ExitPlanMode",
    "Read",
    "Edit",
    "MultiEdit",
    "Write",
    "NotebookRead",
    "NotebookEdit",
    "WebFetch",
    "TodoRead",
    "TodoWrite",
    "WebSearch",
    "AskUserQuestion",
    "Skill",
    "SlashCommand",
];

const TASK: &str = "Start a sub-agent that works on a self-contained task with its own context and the same tools, and returns one final report. Use it for open-ended searches that may take several rounds (\"where is the retry logic configured?\"), for research that would otherwise fill your context with file contents, and for independent pieces of work that can run in parallel: start several sub-agents in one message when their tasks do not depend on each other. Do not use it to read a file whose path you already know, or to search for a specific class or symbol you can find with the search tools directly.\n\nThe sub-agent cannot talk to the user and does not see this conversation, so the prompt must be complete: state the goal, what you already know, where to look, and exactly what the report should contain. Say whether it should only research or also change code. Its report is returned to you, not shown to the user; summarise what matters for them yourself. Trust its findings only as far as it backs them with file paths and excerpts.";

const BASH: &str = "Run a command in a persistent bash session. The working directory and environment persist between calls, so prefer absolute paths and avoid relying on cd.\n\nBefore running a command that creates files or directories, check with the LS tool that the parent directory exists. Quote paths that contain spaces with double quotes. Commands time out after two minutes by default; pass `timeout` in milliseconds (at most ten minutes) for slower ones, or set `run_in_background` and read the output later with BashOutput. Output longer than about 30,000 characters is truncated.\n\nDo not use this tool for what the dedicated tools do better: search files with Grep and Glob instead of grep and find, read them with Read instead of cat, head or tail, list directories with LS, and change files with Edit and Write instead of sed, awk or echo redirection. Chain dependent commands with `&&`; send independent commands as separate calls in the same message so they run in parallel. Never run interactive programs (editors, pagers, `git rebase -i`), because nobody can answer their prompts.\n\nGive every call a short `description` of what the command does, in active voice (\"Run the unit tests\", \"Show the staged diff\").\n\nVersion control: only commit when the user asks. Before committing, look at the status, the diff and recent messages in parallel, stage only the files that belong to the change, never stage likely secrets, and write a message that says why. Never change git configuration, force-push or skip hooks unless asked; if a hook modifies files, stage them and commit again. Use the hosting provider's command-line client for pull requests and return the link when done.";

const GLOB: &str = "Find files by name with a glob pattern such as `**/*.rs` or `src/**/test_*.py`. Returns matching paths sorted by modification time, newest first. Works on code bases of any size. Use it when you know roughly what a file is called; for open-ended searches that need several rounds, start a sub-agent with Task instead. It is often worth running several searches in parallel.";

const GREP: &str = "Search file contents with a regular expression (ripgrep syntax: `log.*Error`, `fn\\s+\\w+`). Literal braces need escaping (`interface\\{\\}`). Restrict the files searched with `glob` (for example `*.ts`) or `type` (for example `py`). `output_mode` chooses what comes back: matching lines (`content`, with optional context lines and line numbers), only the paths of matching files (`files_with_matches`, the default) or match counts (`count`). Patterns match within single lines unless `multiline` is set. Always use this tool rather than running grep or rg in the shell; it has the right permissions and output limits.";

const LS: &str = "List the files and directories directly inside a directory. The path must be absolute. Optionally pass glob patterns to ignore. Prefer Glob or Grep when you know what you are looking for.";

const EXIT_PLAN_MODE: &str = "Call this when you are in planning mode and have finished designing an implementation: it shows the user your plan and asks whether to proceed. The plan is Markdown and should be concise and concrete. Use it only for tasks that involve writing code; for research tasks, just answer.";

const READ: &str = "Read a file from the local file system by absolute path. By default it returns up to 2,000 lines from the start of the file; for long files pass `offset` (the first line to read) and `limit` (how many lines). Lines longer than 2,000 characters are cut. Output is numbered like `cat -n`, starting at 1; the numbers and the tab after them are not part of the file, so leave them out when you quote text for an edit. It can also read images, PDFs and Jupyter notebooks, which come back as their rendered contents. Reading a file that does not exist returns an error, and an empty file returns a reminder that it is empty. When several files may be relevant, read them in parallel in one message.";

const EDIT: &str = "Replace an exact string in a file. You must have read the file in this conversation first, or the edit is refused. `old_string` must match the file byte for byte, including indentation, and must be unique in the file unless `replace_all` is set; include enough surrounding lines to make it unique. `new_string` must differ from it. Preserve the file's indentation style and never include the line-number prefix from Read output. Use `replace_all` to rename a symbol throughout a file. Prefer editing existing files to creating new ones.";

const MULTI_EDIT: &str = "Apply several exact-string replacements to one file in a single atomic operation: either all edits apply or none does. Edits run in order, each on the result of the previous one, so later edits must match the text as earlier ones left it. Every edit follows the rules of Edit: read the file first, match byte for byte, make `old_string` unique or set `replace_all`. Prefer this over a sequence of Edit calls when you change several places in one file.";

const WRITE: &str = "Write a file, replacing it if it exists. When the file exists you must have read it first. Prefer editing existing files; only create new files when the task needs them, and never create documentation or README files unless the user asks for them. Use absolute paths.";

const NOTEBOOK_READ: &str = "Read a Jupyter notebook (.ipynb) and return its cells with their outputs. Pass `cell_id` to read a single cell.";

const NOTEBOOK_EDIT: &str = "Replace, insert or delete one cell of a Jupyter notebook. `cell_id` names the cell (a new cell is inserted after it, or at the start when omitted); `edit_mode` is `replace` (default), `insert` or `delete`; `cell_type` is required when inserting.";

const WEB_FETCH: &str = "Fetch a URL, convert the page to Markdown and answer `prompt` about it with a small fast model; returns that answer, not the raw page. HTTP is upgraded to HTTPS. Results are cached for fifteen minutes. If the server redirects to another host, the tool says so and you must fetch the new URL with another call. Read-only; prefer a dedicated tool when one exists for the site.";

const TODO_READ: &str = "Return the current task list of this session. Takes no input. Check it at the start of a conversation, before starting new work and when unsure what to do next.";

const TODO_WRITE: &str = "Create and update the structured task list of this session, which helps you keep track of multi-step work and shows the user your progress. Use it for tasks with three or more distinct steps, when the user gives several tasks at once, and when new work turns up along the way; skip it for a single trivial change or a purely informational answer.\n\nEach item has `content` (the imperative form: \"Run the tests\"), `activeForm` (the form shown while it runs: \"Running the tests\") and `status`: `pending`, `in_progress` or `completed`. Send the whole list on every call. Keep exactly one item in progress, mark items completed as soon as they are done rather than in batches, and mark an item completed only when it is fully done: if tests fail or the work is partial, keep it in progress and add an item for what blocks it. Remove items that are no longer relevant.";

const WEB_SEARCH: &str = "Search the web and return result titles, links and snippets, for information newer than your training data. Restrict results with `allowed_domains` or exclude sites with `blocked_domains`. Cite the pages you rely on with their links.";

const ASK_USER_QUESTION: &str = "Ask the user one to four multiple-choice questions when a decision is genuinely theirs (a preference, a trade-off, an ambiguous requirement). Each question has a short header, two to four options with a label and a description, and may allow several answers. The user can always answer in their own words instead.";

const SKILL: &str = "Run a skill: a packaged set of instructions and resources for a specialised task, named by `command`. Use it only for skills listed as available in this session.";

const SLASH_COMMAND: &str = "Run one of the user's custom slash commands, named with its arguments in `command` (for example `/review-pr 123`). Use it only for commands listed as available.";

const BASH_OUTPUT: &str = "Read the output a background shell has produced since the last read, and whether it is still running. `filter` keeps only lines matching a regular expression.";

const KILL_SHELL: &str = "Stop a background shell by its id.";

/// A stand-in description and input schema for a known tool name.
pub(super) fn known_tool(name: &str) -> Option<(&'static str, Value)> {
    let string = |description: &str| json!({"type": "string", "description": description});
    let number = |description: &str| json!({"type": "number", "description": description});
    let boolean = |description: &str| json!({"type": "boolean", "description": description});
    let found = match name {
        "Task" => (
            TASK,
            object(
                json!({
                    "description": string("A short (three to five word) title of the task"),
                    "prompt": string("The complete instructions for the sub-agent"),
                    "subagent_type": string("Which kind of sub-agent to start")
                }),
                &["description", "prompt"],
            ),
        ),
        "Bash" => (
            BASH,
            object(
                json!({
                    "command": string("The command to run"),
                    "timeout": number("Timeout in milliseconds, at most 600000"),
                    "description": string("What the command does, in five to ten words"),
                    "run_in_background": boolean("Run the command in the background and read its output later with BashOutput")
                }),
                &["command"],
            ),
        ),
        "BashOutput" => (
            BASH_OUTPUT,
            object(
                json!({
                    "bash_id": string("The id of the background shell"),
                    "filter": string("A regular expression; only matching lines are returned")
                }),
                &["bash_id"],
            ),
        ),
        "KillShell" => (
            KILL_SHELL,
            object(
                json!({"shell_id": string("The id of the background shell to stop")}),
                &["shell_id"],
            ),
        ),
        "Glob" => (
            GLOB,
            object(
                json!({
                    "pattern": string("The glob pattern to match file paths against"),
                    "path": string("The directory to search in; the working directory when omitted")
                }),
                &["pattern"],
            ),
        ),
        "Grep" => (
            GREP,
            object(
                json!({
                    "pattern": string("The regular expression to search for"),
                    "path": string("File or directory to search in; the working directory when omitted"),
                    "glob": string("Only search files whose path matches this glob"),
                    "type": string("Only search files of this type (rg --type)"),
                    "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"], "description": "What to return"},
                    "-i": boolean("Case-insensitive search"),
                    "-n": boolean("Show line numbers (content mode)"),
                    "-A": number("Lines of context after each match (content mode)"),
                    "-B": number("Lines of context before each match (content mode)"),
                    "-C": number("Lines of context around each match (content mode)"),
                    "head_limit": number("Return at most this many results"),
                    "multiline": boolean("Let patterns span lines")
                }),
                &["pattern"],
            ),
        ),
        "LS" => (
            LS,
            object(
                json!({
                    "path": string("The absolute path of the directory to list"),
                    "ignore": {"type": "array", "items": {"type": "string"}, "description": "Glob patterns to leave out"}
                }),
                &["path"],
            ),
        ),
        "ExitPlanMode" => (
            EXIT_PLAN_MODE,
            object(
                json!({"plan": string("The plan to show the user, in Markdown")}),
                &["plan"],
            ),
        ),
        "Read" => (
            READ,
            object(
                json!({
                    "file_path": string("The absolute path of the file to read"),
                    "offset": number("The line to start reading from"),
                    "limit": number("How many lines to read")
                }),
                &["file_path"],
            ),
        ),
        "Edit" => (
            EDIT,
            object(
                json!({
                    "file_path": string("The absolute path of the file to change"),
                    "old_string": string("The exact text to replace"),
                    "new_string": string("The text to put in its place"),
                    "replace_all": boolean("Replace every occurrence, not just one")
                }),
                &["file_path", "old_string", "new_string"],
            ),
        ),
        "MultiEdit" => (
            MULTI_EDIT,
            object(
                json!({
                    "file_path": string("The absolute path of the file to change"),
                    "edits": {
                        "type": "array",
                        "minItems": 1,
                        "description": "Replacements applied in order",
                        "items": object(
                            json!({
                                "old_string": string("The exact text to replace"),
                                "new_string": string("The text to put in its place"),
                                "replace_all": boolean("Replace every occurrence")
                            }),
                            &["old_string", "new_string"],
                        )
                    }
                }),
                &["file_path", "edits"],
            ),
        ),
        "Write" => (
            WRITE,
            object(
                json!({
                    "file_path": string("The absolute path of the file to write"),
                    "content": string("The whole new content of the file")
                }),
                &["file_path", "content"],
            ),
        ),
        "NotebookRead" => (
            NOTEBOOK_READ,
            object(
                json!({
                    "notebook_path": string("The absolute path of the notebook"),
                    "cell_id": string("The id of a single cell to read")
                }),
                &["notebook_path"],
            ),
        ),
        "NotebookEdit" => (
            NOTEBOOK_EDIT,
            object(
                json!({
                    "notebook_path": string("The absolute path of the notebook"),
                    "cell_id": string("The cell to change, or to insert after"),
                    "new_source": string("The new source of the cell"),
                    "cell_type": {"type": "string", "enum": ["code", "markdown"]},
                    "edit_mode": {"type": "string", "enum": ["replace", "insert", "delete"]}
                }),
                &["notebook_path", "new_source"],
            ),
        ),
        "WebFetch" => (
            WEB_FETCH,
            object(
                json!({
                    "url": {"type": "string", "format": "uri", "description": "The URL to fetch"},
                    "prompt": string("What to find out from the page")
                }),
                &["url", "prompt"],
            ),
        ),
        "TodoRead" => (TODO_READ, object(json!({}), &[])),
        "TodoWrite" => (
            TODO_WRITE,
            object(
                json!({
                    "todos": {
                        "type": "array",
                        "description": "The whole updated task list",
                        "items": object(
                            json!({
                                "content": {"type": "string", "minLength": 1},
                                "activeForm": {"type": "string", "minLength": 1},
                                "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                                "priority": {"type": "string", "enum": ["high", "medium", "low"]},
                                "id": {"type": "string"}
                            }),
                            &["content", "status"],
                        )
                    }
                }),
                &["todos"],
            ),
        ),
        "WebSearch" => (
            WEB_SEARCH,
            object(
                json!({
                    "query": {"type": "string", "minLength": 2, "description": "The search query"},
                    "allowed_domains": {"type": "array", "items": {"type": "string"}, "description": "Only return results from these domains"},
                    "blocked_domains": {"type": "array", "items": {"type": "string"}, "description": "Never return results from these domains"}
                }),
                &["query"],
            ),
        ),
        "AskUserQuestion" => (
            ASK_USER_QUESTION,
            object(
                json!({
                    "questions": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": 4,
                        "items": object(
                            json!({
                                "question": {"type": "string"},
                                "header": {"type": "string"},
                                "multiSelect": {"type": "boolean"},
                                "options": {
                                    "type": "array",
                                    "items": object(
                                        json!({"label": {"type": "string"}, "description": {"type": "string"}}),
                                        &["label", "description"],
                                    )
                                }
                            }),
                            &["question", "header", "options", "multiSelect"],
                        )
                    }
                }),
                &["questions"],
            ),
        ),
        "Skill" => (
            SKILL,
            object(json!({"command": string("The skill's name")}), &["command"]),
        ),
        "SlashCommand" => (
            SLASH_COMMAND,
            object(
                json!({"command": string("The slash command and its arguments")}),
                &["command"],
            ),
        ),
        _ => return None,
    };
    Some(found)
}

/// A closed object schema; the top level gets its `$schema` in `stand_in::tools`.
pub(super) fn object(properties: Value, required: &[&str]) -> Value {
    let mut schema = json!({"type": "object", "properties": properties});
    if let Value::Object(map) = &mut schema {
        if !required.is_empty() {
            map.insert("required".to_owned(), json!(required));
        }
        map.insert("additionalProperties".to_owned(), Value::Bool(false));
    }
    schema
}
