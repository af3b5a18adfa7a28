//! Carrying a conversation the client compacted away into the session that continues it.
//!
//! The caller knows which session the client was in before (the proxy: the newest other
//! conversation of the same client; the replay: the branch it left) and says so only when
//! the new conversation opens with the host's own summary ([`mc_core::continues_compacted`]).
//! On the session's first render the engine reads the earlier session's rows, renders them
//! once ([`render_earlier`]) and stores the text: `m[0]` shows it at every fold, unchanged.

use mc_core::config::{Config, Tokens};
use mc_core::head::{EarlierConversation, Quote, render_earlier};
use mc_core::{Message, SessionId, asks_for_summary, user_words};
use mc_store::WriteTx;

use crate::error::Result;
use crate::history_head::task_ordinal;
use crate::pass::CountText;

/// Renders what `earlier` holds and stores it as what `session` carries, unless `session`
/// carries something already or `earlier` is not stored. The text stays within the history
/// budget of the usable window (see [`render_earlier`]).
pub(crate) fn carry_earlier(
    tx: &WriteTx<'_>,
    session: &SessionId,
    earlier: &SessionId,
    config: &Config,
    usable_window: Option<u64>,
    count: CountText<'_>,
    now_ms: i64,
) -> Result<()> {
    if earlier == session
        || tx.earlier_conversation(session)?.is_some()
        || tx.get_session(earlier)?.is_none()
    {
        return Ok(());
    }
    // The raw log holds ordinals 0.. without gaps: a message's ordinal is its index.
    let messages: Vec<Message> = tx
        .messages(earlier, ..)?
        .into_iter()
        .map(|stored| stored.message)
        .collect();
    let task_ordinal = task_ordinal(&messages);
    let task = task_ordinal
        .and_then(|ordinal| messages.get(usize::try_from(ordinal).ok()?))
        .map(user_words)
        .unwrap_or_default();
    let covered = tx.summarised_until(earlier)?;
    // The client's request for its summary, when the earlier session ends with it, is not
    // something the user said.
    let uncovered: Vec<Quote> = (0u64..)
        .zip(&messages)
        .filter(|&(ordinal, _)| ordinal >= covered && Some(ordinal) != task_ordinal)
        .filter(|(_, message)| !asks_for_summary(std::slice::from_ref(*message)))
        .flat_map(|(ordinal, message)| {
            user_words(message)
                .into_iter()
                .map(move |text| Quote { ordinal, text })
        })
        .collect();
    let compartments = tx.compartments(earlier)?;
    let carried = tx.earlier_conversation(earlier)?.map(|row| row.text);
    let budget = config.history.budget_tokens(usable_window.map(Tokens));
    let text = render_earlier(
        &EarlierConversation {
            session: earlier.as_str(),
            task: &task,
            compartments: &compartments,
            uncovered: &uncovered,
            carried: carried.as_deref(),
        },
        budget.get(),
        &|text| count(text),
    );
    tx.carry_earlier_conversation(session, earlier, &text, now_ms)?;
    Ok(())
}
