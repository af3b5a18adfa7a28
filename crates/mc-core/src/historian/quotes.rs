//! The user's own messages of a compartment's range, kept verbatim beside the historian's
//! summary (see [`crate::head::Quote`]).
//!
//! Taken from the raw log by the engine, not written by the model: a model paraphrases, and
//! what the user asked for must survive word for word. A message longer than
//! [`QUOTE_MAX_CHARS`] (a pasted log, a whole file) keeps its head and tail around a marker,
//! since the history budget is shared with every other compartment.

use crate::head::Quote;
use crate::{Message, thousands, user_words};

/// The longest quote kept whole, in characters.
pub const QUOTE_MAX_CHARS: usize = 2_000;

/// The user's words of `messages` (with their ordinals) as quotes, one per text part, in
/// order. `skip` names an ordinal kept elsewhere verbatim (the task, pinned in `m[0]`).
pub fn quotes_of(messages: &[(u64, &Message)], skip: Option<u64>) -> Vec<Quote> {
    messages
        .iter()
        .filter(|(ordinal, _)| Some(*ordinal) != skip)
        .flat_map(|&(ordinal, message)| {
            user_words(message).into_iter().map(move |text| Quote {
                ordinal,
                text: shortened(&text),
            })
        })
        .collect()
}

/// `text` whole when short enough, else its first and last characters around a marker that
/// says how much was left out (the raw log keeps it all).
fn shortened(text: &str) -> String {
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
}
