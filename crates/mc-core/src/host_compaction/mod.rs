//! The host's own compaction, as Claude Code does it: the rule that decides when it
//! summarises, what its summary call sends and gets back, and what that would have cost on a
//! session's recorded calls.
//!
//! Two places model it and must agree: the replay's `autocompact` baseline, which runs the
//! rule over recorded conversations message by message, and the dashboard, which prices it
//! over a session's ledger ([`estimate_host_compaction`]) to set beside what the session
//! cost. Both take the trigger, the summary's size and the instruction's text from here.
//!
//! Claude Code compacts when its estimate of the next prompt (the last response's prompt
//! tokens plus the messages added since) reaches `window − min(max output, 20K) − 13K`. It
//! then makes one summary call over the whole context, and from then on sends the summary as
//! a user turn followed by whatever arrives after the compaction point; it compacts again
//! when that grows back to the threshold.

mod estimate;

use crate::pass_plan::output_reserve_tokens;

pub use estimate::{HostCall, HostCompactionEstimate, estimate_host_compaction};

/// Output tokens of a compaction summary: the recorded compaction call of
/// `shared/data/anthropic-capture/claude-code-traffic.jsonl` (line 35, Claude Code 1.0.6 on
/// claude-sonnet-4) reported `output_tokens: 1206` for a 4,878-character summary of a
/// 12K-token session.
pub const SUMMARY_OUTPUT_TOKENS: u64 = 1_206;

/// The margin Claude Code keeps below the usable window before it compacts.
const AUTOCOMPACT_BUFFER_TOKENS: u64 = 13_000;

/// The prompt size at which Claude Code compacts: `window − min(max output, 20K) − 13K`.
pub fn autocompact_threshold_tokens(window_tokens: u64, max_output_tokens: u64) -> u64 {
    window_tokens
        .saturating_sub(output_reserve_tokens(max_output_tokens))
        .saturating_sub(AUTOCOMPACT_BUFFER_TOKENS)
}

/// Whether the trigger at this window is degenerate: under half the window.
///
/// Claude Code's trigger keeps a fixed 33K (20K output reserve plus 13K) under the window: 83%
/// of a 200K window, but half of a 66K one and nothing at all below 33K. Under half the
/// window, the host compacts with most of the window still free, so it summarises far more
/// often than Claude Code does at the windows it was made for, and a ratio against it
/// flatters whatever it is compared with. Replay reports flag it (`degenerate_baseline`).
pub fn is_degenerate_trigger(window_tokens: u64, max_output_tokens: u64) -> bool {
    autocompact_threshold_tokens(window_tokens, max_output_tokens).saturating_mul(2) < window_tokens
}

/// The user turn appended to the history for the summary call. Written for this project
/// (Claude Code's own instruction, about 4,200 characters, asks for the same sections).
pub const SUMMARY_INSTRUCTION: &str = "\
Write a detailed summary of the conversation so far, so that the work can continue without \
it. Be precise about technical details, code patterns and architectural decisions.

First think in <analysis> tags: go through the conversation in order and note, for each part, \
what the user asked for and meant, how you approached it, the decisions you took, the \
technical concepts involved, and the specifics (file names, full code snippets, function \
signatures, edits). Check the analysis for accuracy and completeness.

Then write the summary in <summary> tags, with these sections:
1. Primary request and intent: every explicit request of the user, in detail.
2. Key technical concepts: the technologies, frameworks and ideas discussed.
3. Files and code sections: each file read, changed or created, why it matters, what changed, \
and the important snippets in full, most recent first.
4. Errors and fixes: what went wrong and how it was fixed, including the user's feedback.
5. Problem solving: problems solved and troubleshooting still in progress.
6. All user messages that are not tool results, in order.
7. Pending tasks: what you were asked to do and have not done yet.
8. Current work: exactly what was being worked on just before this request, with file names \
and snippets.
9. Next step: the next step, only if it follows directly from the most recent request; quote \
the latest messages so the task is not misread.

If the context includes additional summarisation instructions, follow them too.";

/// [`SUMMARY_INSTRUCTION`] in o200k tokens. The estimate has no tokenizer (this crate does
/// no I/O and loads no tables); the simulator's tests count the text and pin this figure.
pub const SUMMARY_INSTRUCTION_TOKENS: u64 = 308;

/// The opening of the user turn that replaces the history after a compaction.
pub const CONTINUATION: &str = "This session continues an earlier conversation that ran out of \
context. The summary below covers the earlier part of the conversation.\n\n";

/// [`CONTINUATION`] in o200k tokens, pinned like [`SUMMARY_INSTRUCTION_TOKENS`].
pub const CONTINUATION_TOKENS: u64 = 23;

/// The user turn that stands in for the history after a compaction, in tokens: the
/// [`CONTINUATION`] and a summary of [`SUMMARY_OUTPUT_TOKENS`].
pub const SUMMARY_TURN_TOKENS: u64 = CONTINUATION_TOKENS + SUMMARY_OUTPUT_TOKENS;

#[cfg(test)]
mod tests;
