//! The guidance block that introduces the tools to a model that has never seen them.
//!
//! It sits in the stable prefix of every managed conversation (and in the MCP server's
//! instructions), so its bytes must never change within a session: it is a constant, with no
//! counts, dates or settings interpolated.

/// How to read `§N§` tags and when to reach for each tool.
pub const TOOL_GUIDANCE: &str = "\
## Context tools

Your conversation is managed so it always fits the context window. Older parts of it are \
summarised, and pieces of it carry tags written §N§ (a number between section signs). A tag \
names one piece you can drop; it is not part of what the user or a tool wrote.

- ctx_reduce: when tagged pieces are no longer useful (a long tool output you have acted on, \
a file read that is out of date), drop them by tag, e.g. drop=\"3-5,12\". Drops take effect on \
a later turn; the newest pieces are protected for a while. Nothing is lost: the original stays \
in the log.
- ctx_expand: when a summary or a placeholder is not enough, read the original messages by \
ordinal (start and end), or one message in full (message). A summary's files/ran/names line \
lists what its range used: expand that range (the ordinals in its heading) or ctx_search the \
name when you need one of them again.
- ctx_search: before asking the user about something that may have come up earlier, search \
the project's memories, past messages, summaries and commits. Message results give ordinals \
for ctx_expand.
- ctx_memory: when you learn a durable fact about the project (a rule, a constraint, a config \
value, a naming convention), write it as a memory; update or archive memories that turn out \
wrong.
- ctx_note: keep a reminder for later in this session; add a surface_condition to have it \
come back to the project when that condition holds.
";
