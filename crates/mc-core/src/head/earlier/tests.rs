use proptest::prelude::*;

use super::*;
use crate::head::RangeIndex;

/// A stand-in tokenizer: one token per 4 bytes, rounded up.
fn count(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// 2026-11-07 09:00 UTC.
const T0: u64 = 1_794_042_000_000;

fn compartment(start: u64, end: u64, title: &str, quotes: Vec<Quote>) -> Compartment {
    Compartment {
        start_ordinal: start,
        end_ordinal: end,
        start_ms: T0 + start * 60_000,
        end_ms: T0 + end * 60_000,
        title: title.to_owned(),
        importance: 50,
        episode: "feature".to_owned(),
        tiers: [
            format!("{title}: the full account of what was read, changed and run."),
            format!("{title}: condensed."),
            format!("{title}: paragraph."),
            format!("{title}: line."),
        ],
        quotes,
        index: RangeIndex {
            files: vec!["weather/index.html".to_owned()],
            ran: Vec::new(),
            names: vec!["GRAZ_LAT".to_owned()],
        },
    }
}

fn quote(ordinal: u64, text: &str) -> Quote {
    Quote {
        ordinal,
        text: text.to_owned(),
    }
}

#[test]
fn an_earlier_conversation_shows_its_task_history_and_the_words_after_it() {
    let task = ["create a folder weather with a one-page app for Graz".to_owned()];
    let compartments = [compartment(
        1,
        12,
        "Weather app with OpenWeatherMap",
        vec![quote(8, "use metric units")],
    )];
    let uncovered = [quote(14, "please use a service that needs no api key")];
    let earlier = EarlierConversation {
        session: "cc-abc-1f2e3d4c5b6a",
        task: &task,
        compartments: &compartments,
        uncovered: &uncovered,
        carried: None,
    };
    insta::assert_snapshot!(render_earlier(&earlier, 10_000, &count), @r#"
    <earlier-conversation session="cc-abc-1f2e3d4c5b6a">
    The client compacted the conversation before this one; this is what it held. ctx_expand with session="cc-abc-1f2e3d4c5b6a" reads any of its ordinals.
    <task>create a folder weather with a one-page app for Graz</task>
    <history>
    ### 1-12 | 2026-11-07 09:01 to 2026-11-07 09:12 UTC | Weather app with OpenWeatherMap
    files: weather/index.html · names: GRAZ_LAT
    <user ordinal="8">use metric units</user>
    Weather app with OpenWeatherMap: condensed.
    </history>
    <user ordinal="14">please use a service that needs no api key</user>
    </earlier-conversation>
    "#);
}

#[test]
fn what_the_earlier_one_carried_nests_only_while_it_fits() {
    let task = ["the second task".to_owned()];
    let nested = "<earlier-conversation session=\"first\">\nold words\n</earlier-conversation>";
    let earlier = EarlierConversation {
        session: "second",
        task: &task,
        compartments: &[],
        uncovered: &[],
        carried: Some(nested),
    };
    assert!(render_earlier(&earlier, 10_000, &count).contains("old words"));
    let without = render_earlier(
        &EarlierConversation {
            carried: None,
            ..earlier
        },
        10_000,
        &count,
    );
    assert!(!render_earlier(&earlier, count(&without), &count).contains("old words"));
}

#[test]
fn m0_shows_the_earlier_conversation_after_the_profile_and_before_the_history() {
    use crate::config::Tokens;
    use crate::head::{HeadBudgets, HeadInputs, render_m0};
    let profile = ["Prefers short answers.".to_owned()];
    let carried = "<earlier-conversation session=\"s\">\n</earlier-conversation>";
    let inputs = HeadInputs {
        profile: &profile,
        earlier: Some(carried),
        ..HeadInputs::default()
    };
    let budgets = HeadBudgets {
        history_tokens: Tokens(1_000),
        memory_tokens: Tokens(1_000),
        key_files_tokens: Tokens(1_000),
    };
    let m0 = render_m0(&inputs, budgets, &count);
    assert_eq!(
        m0.text,
        format!(
            "<user-profile>\n- Prefers short answers.\n</user-profile>\n\n{carried}\n\n<history>\n</history>"
        )
    );
}

fn quotes_strategy() -> impl Strategy<Value = Vec<Quote>> {
    prop::collection::vec("[a-z ]{1,400}", 0..30).prop_map(|texts| {
        texts
            .into_iter()
            .enumerate()
            .map(|(index, text)| quote(100 + index as u64, &text))
            .collect()
    })
}

fn compartments_strategy() -> impl Strategy<Value = Vec<Compartment>> {
    (0usize..40).prop_map(|n| {
        (0..n as u64)
            .map(|i| compartment(i * 2, i * 2 + 1, &format!("episode {i}"), Vec::new()))
            .collect()
    })
}

proptest! {
    /// The carry is a pure function of its rows, keeps every uncovered text it shows whole and
    /// in order (newest kept first when the budget is short), and stays within the budget
    /// whenever the task and the compartments' headings alone fit in it.
    #[test]
    fn the_carry_is_pure_ordered_and_within_budget(
        uncovered in quotes_strategy(),
        compartments in compartments_strategy(),
        budget in 200u64..6_000,
    ) {
        let task = ["the task".to_owned()];
        let earlier = EarlierConversation {
            session: "s",
            task: &task,
            compartments: &compartments,
            uncovered: &uncovered,
            carried: None,
        };
        let text = render_earlier(&earlier, budget, &count);
        prop_assert_eq!(&text, &render_earlier(&earlier, budget, &count));
        let shown: Vec<&Quote> = uncovered
            .iter()
            .filter(|quote| text.contains(&format!("<user ordinal=\"{}\">", quote.ordinal)))
            .collect();
        if let Some(first) = shown.first() {
            let from = uncovered.iter().position(|quote| quote == *first).unwrap_or(0);
            prop_assert_eq!(shown.len(), uncovered.len() - from, "only the oldest texts go");
        }
        let headings: u64 = compartments
            .iter()
            .map(|compartment| count(&super::super::history::heading(compartment)) + 1)
            .sum();
        let floor = count(&render_earlier(
            &EarlierConversation { uncovered: &[], compartments: &[], ..earlier },
            0,
            &count,
        )) + headings + count("<history>\n</history>\n");
        // Token counts of the parts are rounded up one by one; the whole may differ by a few.
        if floor <= budget {
            prop_assert!(
                count(&text) <= budget + 4,
                "{} tokens over a budget of {budget}",
                count(&text)
            );
        }
    }
}
