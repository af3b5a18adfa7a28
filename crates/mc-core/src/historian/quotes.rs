//! The user's own messages of a compartment's range, kept verbatim beside the historian's
//! summary (see [`crate::head::Quote`]).
//!
//! Taken from the raw log by the engine, not written by the model: a model paraphrases, and
//! what the user asked for must survive word for word.
//!
//! Quotes take at most a tenth of the characters of the range they come from (at least
//! [`MIN_QUOTE_BUDGET_CHARS`]), shortest messages first. What people type (instructions,
//! corrections, constraints) is short and is kept; long user-role texts are pasted logs or,
//! for agents that send tool output as user text instead of tool results, observations, and
//! keeping those verbatim would undo the summary. The raw log keeps everything, and the
//! summary covers what is not quoted. A kept message longer than [`QUOTE_MAX_CHARS`] keeps its
//! head and tail around a marker.

use crate::head::Quote;
use crate::{Message, thousands, user_words};

/// The longest quote kept whole, in characters.
pub const QUOTE_MAX_CHARS: usize = 2_000;

/// The smallest quote budget of a range, in characters: a short range still keeps a
/// sentence or two of the user's.
pub const MIN_QUOTE_BUDGET_CHARS: usize = 600;

/// The quote budget's share of the range's characters, in percent.
const QUOTE_BUDGET_PERCENT: usize = 10;

/// The user's words of `messages` (with their ordinals) as quotes, one per kept text part, in
/// order, within the range's quote budget (see the module docs). `skip` names an ordinal kept
/// elsewhere verbatim (the task, pinned in `m[0]`).
pub fn quotes_of(messages: &[(u64, &Message)], skip: Option<u64>) -> Vec<Quote> {
    let range_chars: usize = messages
        .iter()
        .map(|(_, message)| serde_json::to_string(&message.parts).map_or(0, |json| json.len()))
        .sum();
    let budget = (range_chars * QUOTE_BUDGET_PERCENT / 100).max(MIN_QUOTE_BUDGET_CHARS);
    let mut candidates: Vec<Quote> = messages
        .iter()
        .filter(|(ordinal, _)| Some(*ordinal) != skip)
        .flat_map(|&(ordinal, message)| {
            user_words(message).into_iter().map(move |text| Quote {
                ordinal,
                text: shortened(&text),
            })
        })
        .collect();
    let mut by_length: Vec<usize> = (0..candidates.len()).collect();
    by_length.sort_by_key(|&index| (candidates[index].text.chars().count(), index));
    let mut used = 0;
    let mut kept = vec![false; candidates.len()];
    for index in by_length {
        let length = candidates[index].text.chars().count();
        if used + length > budget {
            break;
        }
        used += length;
        kept[index] = true;
    }
    let mut index = 0;
    candidates.retain(|_| {
        index += 1;
        kept[index - 1]
    });
    candidates
}

/// `text` whole when short enough, else its first and last characters around a marker that
/// says how much was left out (the raw log keeps it all).
pub fn shortened(text: &str) -> String {
    let total = text.chars().count();
    if total <= QUOTE_MAX_CHARS {
        return text.to_owned();
    }
    let keep = QUOTE_MAX_CHARS / 2;
    let head: String = text.chars().take(keep).collect();
    let tail: String = text.chars().skip(total - keep).collect();
    format!(
        "{head} […{} characters left out…] {tail}",
        thousands(u64::try_from(total - 2 * keep).unwrap_or(u64::MAX))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Part, Role};

    #[test]
    fn quotes_are_the_users_words_verbatim_and_long_ones_keep_both_ends() {
        let long = format!("start {} end", "x".repeat(3_000));
        // A large range (a tool output) gives the long message room in the budget.
        let output = Message::new(
            Role::User,
            vec![Part::ToolResult {
                call_id: "c".into(),
                content: vec![Part::text("y".repeat(40_000))],
                is_error: false,
            }],
        );
        let messages = [
            Message::new(Role::User, vec![Part::text("the task")]),
            Message::new(Role::Assistant, vec![Part::text("on it")]),
            Message::new(
                Role::User,
                vec![
                    Part::text("<system-reminder>ctx</system-reminder>no sleeps, please"),
                    Part::text(long.clone()),
                ],
            ),
            output,
        ];
        let indexed: Vec<(u64, &Message)> = (0..).zip(&messages).collect();
        let quotes = quotes_of(&indexed, Some(0));
        assert_eq!(quotes.len(), 2);
        assert_eq!(
            quotes[0],
            Quote {
                ordinal: 2,
                text: "no sleeps, please".into()
            }
        );
        assert!(quotes[1].text.starts_with("start xx"));
        assert!(quotes[1].text.ends_with("xx end"));
        assert!(
            quotes[1].text.contains(" […1,010 characters left out…] "),
            "{}",
            quotes[1].text
        );
    }

    #[test]
    fn within_the_budget_the_shortest_are_kept_in_order() {
        let texts = [
            "fix it",
            &"observation ".repeat(60),
            "no sleeps",
            &"log ".repeat(100),
        ];
        let messages: Vec<Message> = texts
            .iter()
            .map(|text| Message::new(Role::User, vec![Part::text(*text)]))
            .collect();
        let indexed: Vec<(u64, &Message)> = (0..).zip(&messages).collect();
        let kept: Vec<u64> = quotes_of(&indexed, None)
            .iter()
            .map(|quote| quote.ordinal)
            .collect();
        // About 1,200 characters of range: the 600-character floor keeps the two short
        // messages and the 400-character log, not the 720-character observation.
        assert_eq!(kept, [0, 2, 3]);
    }
}
