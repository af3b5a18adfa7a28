//! The guidance block that introduces the tools to a model that has never seen them.
//!
//! It sits in the stable prefix of every managed conversation (and in the MCP server's
//! instructions), so its bytes must never change within a session: it is a constant, with no
//! counts, dates or settings interpolated. There are two: with the engine's compaction off
//! the host manages the window, nothing is tagged and nothing can be dropped, so that one
//! names neither tags nor `ctx_reduce`.

/// The lines of the tools that work whoever manages the window, shared by both blocks.
macro_rules! lasting_tools {
    () => {
        "\
- ctx_search: before asking the user about something that may have come up earlier, search \
the project's memories, past messages, summaries and commits. Message results give ordinals \
for ctx_expand.
- ctx_memory: when you learn a durable fact about the project (a rule, a constraint, a config \
value, a naming convention), write it as a memory; update or archive memories that turn out \
wrong.
- ctx_note: keep a reminder for later in this session; add a surface_condition to have it \
come back to the project when that condition holds.
"
    };
}

/// How to read `§N§` tags and when to reach for each tool.
pub const TOOL_GUIDANCE: &str = concat!(
    "\
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
",
    lasting_tools!()
);

/// The guidance when the host manages the window itself (`compaction.enabled: false`): the
/// tools that still work, and no tags or drops.
pub const HOST_COMPACTS_GUIDANCE: &str = concat!(
    "\
## Context tools

These tools reach what this project and session have recorded, including parts of the \
conversation no longer in view.

- ctx_expand: read earlier messages of this session by ordinal (start and end), or one \
message in full (message).
",
    lasting_tools!()
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_the_host_compacting_no_tag_or_drop_is_mentioned() {
        assert!(!HOST_COMPACTS_GUIDANCE.contains("ctx_reduce"));
        assert!(!HOST_COMPACTS_GUIDANCE.contains('§'));
        for tool in ["ctx_expand", "ctx_search", "ctx_memory", "ctx_note"] {
            assert!(HOST_COMPACTS_GUIDANCE.contains(tool), "{tool}");
            assert!(TOOL_GUIDANCE.contains(tool), "{tool}");
        }
    }
}
