//! `ctx_expand`: the original transcript of messages the live context no longer shows.
//!
//! Reads the raw log, which keeps every message exactly as the client sent it, whatever the
//! engine later dropped or summarised. A range is one compact line per message (the
//! historian's transcript format, so the model sees one shape of transcript everywhere); one
//! message comes in full. Both are capped at `expand.cap_tokens` (default
//! [`EXPAND_BUDGET_TOKENS`]) so one call cannot flood the window, and a cut range says where
//! to continue. Messages still in the live
//! context (from the head's boundary on) are not repeated: the model already sees them.

use std::collections::BTreeSet;

use mc_core::historian::render_transcript;
use mc_core::tags::TagIndex;
use mc_core::{Message, Part, SessionId, thousands};
use mc_store::{ReadTx, StoreError};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{ToolAnswer, ToolContext, bound_session};

pub(super) const NAME: &str = "ctx_expand";
pub(super) const DESCRIPTION: &str = "Read the original transcript of earlier messages of this \
session that your context now shows only as a summary or placeholder. Pass start and end \
message ordinals (as ctx_search results and history summaries give them) for a compact \
transcript, one line per message; or pass message for one message in full, including tool \
output that was dropped. Long ranges are cut and tell you where to continue. Pass session to \
read another session of this project that ctx_search found.";

/// The most an answer carries by default, in estimated tokens (`expand.cap_tokens`).
pub const EXPAND_BUDGET_TOKENS: usize = 15_000;

/// Characters per estimated token: the same coarse estimate everywhere a budget is checked
/// before the provider has counted anything.
const CHARS_PER_TOKEN: usize = 4;

/// Arguments of `ctx_expand`: a range (`start`, `end`) or one `message`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExpandArgs {
    /// First message ordinal of the range.
    #[serde(default)]
    pub start: Option<u64>,
    /// Last message ordinal of the range, inclusive [default: as far as fits].
    #[serde(default)]
    pub end: Option<u64>,
    /// One message ordinal, shown in full (instead of start and end).
    #[serde(default)]
    pub message: Option<u64>,
    /// Another session of this project, as a ctx_search result names it [default: yours].
    #[serde(default)]
    pub session: Option<String>,
}

/// What the caller asked for, once validated.
enum Wanted {
    Range { start: u64, end: Option<u64> },
    One(u64),
}

pub(super) fn run(ctx: &ToolContext<'_>, args: &ExpandArgs) -> ToolAnswer {
    let wanted = match (args.message, args.start, args.end) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return ToolAnswer::error(
                "pass either message (one message in full) or start and end (a range), not both",
            );
        }
        (Some(message), None, None) => Wanted::One(message),
        (None, Some(start), Some(end)) if end < start => {
            return ToolAnswer::error(format!(
                "end ({end}) is before start ({start}); pass the smaller ordinal as start"
            ));
        }
        (None, Some(start), end) => Wanted::Range { start, end },
        (None, None, _) => {
            return ToolAnswer::error(
                "pass start (and optionally end) for a range of messages, or message for one \
                 message in full, e.g. {\"start\": 10, \"end\": 20}",
            );
        }
    };
    let cap = usize::try_from(ctx.engine.config().expand.cap_tokens.get()).unwrap_or(usize::MAX);
    let answer = ctx.engine.store().read(|tx| {
        let (session, live) = match target(tx, ctx, args.session.as_deref())? {
            Ok(target) => target,
            Err(answer) => return Ok(answer),
        };
        match wanted {
            Wanted::Range { start, end } => expand_range(tx, &session, (start, end), live, cap),
            Wanted::One(ordinal) => expand_one(tx, &session, ordinal, live, cap),
        }
    });
    answer.unwrap_or_else(|error| ToolAnswer::store(&error))
}

/// The session to read and the first ordinal of it the caller's live context shows: the
/// caller's own session (live from its boundary), another session of the same project, or
/// the conversation the caller's session carries in its head because the client compacted
/// it (none of it live). Any other session is refused.
fn target(
    tx: &ReadTx<'_>,
    ctx: &ToolContext<'_>,
    asked: Option<&str>,
) -> Result<Result<(SessionId, u64), ToolAnswer>, StoreError> {
    let other = match asked.map(str::trim) {
        None => None,
        Some(id) => match SessionId::new(id) {
            Ok(session) if ctx.session.as_ref() != Some(&session) => Some(session),
            Ok(_) => None,
            Err(error) => {
                return Ok(Err(ToolAnswer::error(format!(
                    "session: {error}; pass a session id exactly as ctx_search gave it"
                ))));
            }
        },
    };
    let Some(other) = other else {
        return Ok(match bound_session(tx, ctx, NAME)? {
            Ok(session) => {
                let live = live_from(tx, &session)?;
                Ok((session, live))
            }
            Err(answer) => Err(answer),
        });
    };
    let same_project = tx
        .get_session(&other)?
        .is_some_and(|record| record.project.is_some() && record.project == ctx.project);
    let carried = match &ctx.session {
        Some(own) => tx
            .earlier_conversation(own)?
            .is_some_and(|row| row.earlier_session == other.as_str()),
        None => false,
    };
    Ok(if same_project || carried {
        Ok((other, u64::MAX))
    } else {
        Err(ToolAnswer::error(format!(
            "no session `{other}` in this project; pass a session id from a ctx_search \
             result, or leave session out for your own"
        )))
    })
}

/// The first ordinal the live context shows raw: the head's boundary (0 before any pass,
/// when the whole log is live).
fn live_from(tx: &ReadTx<'_>, session: &SessionId) -> Result<u64, StoreError> {
    Ok(crate::EngineState::read(tx, session)?.map_or(0, |state| state.boundary))
}

fn out_of_range(ordinal: u64, count: u64) -> ToolAnswer {
    match count {
        0 => ToolAnswer::error("this session has no stored messages yet"),
        _ => ToolAnswer::error(format!(
            "message {ordinal} does not exist: this session has messages 0 to {}",
            count - 1
        )),
    }
}

/// Messages `start..=end` (to the last when `end` is `None`) as transcript lines, within
/// `cap` estimated tokens.
fn expand_range(
    tx: &ReadTx<'_>,
    session: &SessionId,
    (start, end): (u64, Option<u64>),
    live: u64,
    cap: usize,
) -> Result<ToolAnswer, StoreError> {
    let count = tx.message_count(session)?;
    if start >= count {
        return Ok(out_of_range(start, count));
    }
    let last = end.map_or(count - 1, |end| end.min(count - 1));
    if start >= live {
        return Ok(ToolAnswer::ok(format!(
            "messages {start} to {last} are still in your live context (it shows messages \
             {live} onward as they are); nothing to expand"
        )));
    }
    let shown_end = last.min(live.saturating_sub(1));
    let budget = cap.saturating_mul(CHARS_PER_TOKEN);
    let tags = TagIndex::new(Vec::new());
    let dropped = BTreeSet::new();
    let mut body = String::new();
    let mut cut_at = None;
    for stored in tx.messages(session, start..=shown_end)? {
        let line = render_transcript(&[(stored.ordinal, &stored.message)], &tags, &dropped);
        if !body.is_empty() && body.len() + line.len() > budget {
            cut_at = Some(stored.ordinal);
            break;
        }
        body.push_str(&line);
    }
    let mut out = format!(
        "Transcript of messages {start} to {shown_end} (one line per message: #ordinal role; \
         long parts are shortened, ctx_expand with message=N shows one in full):\n{body}"
    );
    if let Some(next) = cut_at {
        out.push_str(&format!(
            "[cut at about {} tokens: continue with start={next}, end={last}]\n",
            thousands(cap as u64)
        ));
    }
    if last >= live {
        out.push_str(&format!(
            "[messages {live} to {last} are still in your live context; not repeated]\n"
        ));
    }
    Ok(ToolAnswer::ok(out))
}

/// Message `ordinal` in full, within `cap` estimated tokens.
fn expand_one(
    tx: &ReadTx<'_>,
    session: &SessionId,
    ordinal: u64,
    live: u64,
    cap: usize,
) -> Result<ToolAnswer, StoreError> {
    let count = tx.message_count(session)?;
    if ordinal >= count {
        return Ok(out_of_range(ordinal, count));
    }
    if ordinal >= live && !has_dropped_part(tx, session, ordinal)? {
        return Ok(ToolAnswer::ok(format!(
            "message {ordinal} is still in your live context, in full; nothing to expand"
        )));
    }
    let Some(stored) = tx.messages(session, ordinal..=ordinal)?.into_iter().next() else {
        return Ok(out_of_range(ordinal, count));
    };
    let full = render_full(ordinal, &stored.message);
    let budget = cap.saturating_mul(CHARS_PER_TOKEN);
    match full.char_indices().nth(budget) {
        Some((at, _)) => {
            let rest = full[at..].chars().count() as u64;
            Ok(ToolAnswer::ok(format!(
                "{}\n[cut at about {} tokens; {} more characters not shown]\n",
                &full[..at],
                thousands(cap as u64),
                thousands(rest)
            )))
        }
        None => Ok(ToolAnswer::ok(full)),
    }
}

/// Whether a landed drop removed any part of message `ordinal` from the live context.
fn has_dropped_part(
    tx: &ReadTx<'_>,
    session: &SessionId,
    ordinal: u64,
) -> Result<bool, StoreError> {
    let landed: BTreeSet<_> = tx
        .drops(session)?
        .into_iter()
        .filter(|row| row.landed_pass.is_some())
        .map(|row| row.tag)
        .collect();
    Ok(tx
        .tags(session)?
        .iter()
        .any(|assignment| assignment.unit.ordinal == ordinal && landed.contains(&assignment.tag)))
}

/// Message `ordinal` with every part whole: text as written, tool calls with their JSON
/// input, tool results with all their text.
fn render_full(ordinal: u64, message: &Message) -> String {
    let mut out = format!("#{ordinal} {}\n", message.role.as_str());
    for part in &message.parts {
        match part {
            Part::Text { text, .. } => out.push_str(text),
            Part::ToolCall { id, name, input } => {
                out.push_str(&format!("→ tool call {name} (id {id}): {input}"));
            }
            Part::ToolResult {
                call_id,
                content,
                is_error,
            } => {
                let mark = if *is_error { " (error)" } else { "" };
                out.push_str(&format!("← tool result for {call_id}{mark}:\n"));
                for inner in content {
                    match inner {
                        Part::Text { text, .. } => out.push_str(text),
                        Part::Media { media, source } => {
                            out.push_str(&mc_core::media::media_label(*media, source))
                        }
                        _ => out.push_str("[non-text content]"),
                    }
                    out.push('\n');
                }
            }
            Part::Thinking { text, .. } => out.push_str(&format!("[thinking] {text}")),
            Part::RedactedThinking { .. } => out.push_str("[redacted thinking]"),
            Part::Media { media, source } => {
                out.push_str(&mc_core::media::media_label(*media, source))
            }
            Part::Unknown { type_name, .. } => out.push_str(&format!("[{type_name} block]")),
        }
        out.push('\n');
    }
    out
}
