//! `<earlier-conversation>`: what a conversation the client compacted away held, carried into
//! the `m[0]` of the session that continues it ([`crate::continues_compacted`]).
//!
//! The host's summary paraphrases; the proxy saw the conversation itself. So when a session
//! starts as a host's continuation, the engine renders the earlier session once (its task, its
//! history's compartments within a budget, the user's words its history does not cover yet,
//! and what it carried itself when that still fits) and stores the bytes with the new
//! session: every fold shows them unchanged, and nothing the user said is gone.
//!
//! Format, lines in this order (a part with nothing to show is omitted):
//! ```text
//! <earlier-conversation session="ID">
//! The client compacted the conversation before this one; this is what it held. ctx_expand with session="ID" reads any of its ordinals.
//! <task>TEXT</task>                       one per text of its first user message
//! <history>…</history>                    its compartments, decayed as in `m[0]`
//! <user ordinal="N">TEXT</user>           one per text the history does not cover
//! <earlier-conversation …>…</earlier-conversation>   what it carried, when it fits
//! </earlier-conversation>
//! ```

use super::history::decay_history;
use super::rows::{Compartment, Quote};
use crate::historian::shortened_quote;

/// One earlier conversation, as its session's stored rows give it.
#[derive(Debug, Clone, Copy)]
pub struct EarlierConversation<'a> {
    /// Its session id, for `ctx_expand`.
    pub session: &'a str,
    /// The texts of its first user message (the task, or the host's previous summary).
    pub task: &'a [String],
    /// Every compartment of its history.
    pub compartments: &'a [Compartment],
    /// The user's texts after the last ordinal its compartments cover, in order.
    pub uncovered: &'a [Quote],
    /// What it carried from the conversation before it, as stored.
    pub carried: Option<&'a str>,
}

/// Renders `earlier` within about `budget_tokens` (see the module doc).
///
/// The user's own words come first: the task and the uncovered texts are kept (each long one
/// shortened to its ends), and the compartments get what is left, decayed as `m[0]`'s
/// history is (their headings always stay). When the words and the headings are over the
/// budget, the oldest uncovered texts go first; the raw log keeps them for `ctx_expand`. What the earlier
/// session carried itself is kept only if the whole still fits. Pure: the same rows, budget
/// and tokenizer give the same bytes.
pub fn render_earlier(
    earlier: &EarlierConversation<'_>,
    budget_tokens: u64,
    count_tokens: &dyn Fn(&str) -> u64,
) -> String {
    let opening = format!(
        "<earlier-conversation session=\"{id}\">\nThe client compacted the conversation before \
         this one; this is what it held. ctx_expand with session=\"{id}\" reads any of its \
         ordinals.\n",
        id = earlier.session
    );
    const CLOSING: &str = "</earlier-conversation>";
    let task: String = earlier
        .task
        .iter()
        .map(|text| format!("<task>{}</task>\n", shortened_quote(text)))
        .collect();
    let quotes: Vec<String> = earlier
        .uncovered
        .iter()
        .map(|quote| {
            format!(
                "<user ordinal=\"{}\">{}</user>\n",
                quote.ordinal,
                shortened_quote(&quote.text)
            )
        })
        .collect();
    // The history at headings alone: what it takes whatever the budget.
    let headings_tokens = if earlier.compartments.is_empty() {
        0
    } else {
        count_tokens(&decay_history(earlier.compartments, 0, count_tokens).render()) + 1
    };
    let fixed = count_tokens(&opening) + count_tokens(&task) + count_tokens(CLOSING);
    let quote_tokens: Vec<u64> = quotes.iter().map(|quote| count_tokens(quote)).collect();
    let mut words_tokens = fixed + quote_tokens.iter().sum::<u64>();
    let mut first_kept = 0;
    while words_tokens + headings_tokens > budget_tokens && first_kept < quotes.len() {
        words_tokens -= quote_tokens[first_kept];
        first_kept += 1;
    }
    let history = if earlier.compartments.is_empty() {
        String::new()
    } else {
        // The element's own lines are not the compartments' to spend.
        let wrapper = count_tokens("<history>\n</history>\n");
        let rendered = decay_history(
            earlier.compartments,
            budget_tokens.saturating_sub(words_tokens + wrapper),
            count_tokens,
        )
        .render();
        rendered + "\n"
    };
    let mut out = opening;
    out.push_str(&task);
    out.push_str(&history);
    out.extend(quotes[first_kept..].iter().map(String::as_str));
    if let Some(carried) = earlier.carried.filter(|carried| !carried.is_empty()) {
        let with_carried = count_tokens(&out) + count_tokens(carried) + count_tokens(CLOSING);
        if with_carried <= budget_tokens {
            out.push_str(carried);
            out.push('\n');
        }
    }
    out.push_str(CLOSING);
    out
}

#[cfg(test)]
mod tests;
