use std::collections::HashSet;

use mc_core::{Message, Part, Role};
use proptest::prelude::{Strategy as _, prop, prop_assert, prop_assert_eq, proptest};

use super::*;
use crate::Wire;
use crate::strategy::Strategy;
use crate::strategy::test_support::{
    Chars, assistant, assistant_calls, context, conversation, system, tool_results_sized, user,
    view,
};

fn tokens(messages: &[Message]) -> Vec<u64> {
    messages
        .iter()
        .map(|message| message_tokens(&Chars, Wire::Anthropic, message))
        .collect()
}

fn marker_tokens() -> u64 {
    message_tokens(&Chars, Wire::Anthropic, &omitted_marker())
}

#[test]
fn keeps_everything_that_fits() {
    let messages = conversation(4);
    let prepared = Window::new().prepare(&view(&messages, None), &context(50_000));
    assert_eq!(prepared.calls[0].messages.as_ref(), messages.as_slice());
    assert_eq!(prepared.bust_cause, None);
}

/// `rules`, `go`, then tool pairs `a`..`d` of 4,000-byte results, then `and now?`.
fn tool_loop() -> Vec<Message> {
    let mut messages = vec![system("rules"), user("go")];
    for id in ["a", "b", "c", "d"] {
        messages.push(assistant_calls(&[id]));
        messages.push(tool_results_sized(&[id], 4_000));
    }
    messages.push(user("and now?"));
    messages
}

#[test]
fn cuts_before_a_call_never_between_it_and_its_result() {
    let messages = tool_loop();
    let counts = tokens(&messages);
    // Room for the head, the marker and the last two pairs with the final question...
    let budget = counts[0] + marker_tokens() + counts[6..].iter().sum::<u64>();
    assert_eq!(window_start(&messages, &counts, budget, marker_tokens()), 6);
    // ...but one token less and only the last pair fits: never its result alone.
    assert_eq!(
        window_start(&messages, &counts, budget - 1, marker_tokens()),
        8
    );
    // With the whole conversation in budget nothing is cut.
    assert_eq!(
        window_start(&messages, &counts, u64::MAX, marker_tokens()),
        1
    );
}

#[test]
fn a_cut_opens_with_the_marker_and_names_the_bust_when_it_moves() {
    let messages = tool_loop();
    let mut window = Window::new();
    let ctx = context(20_000 + 5_000);
    let first = window.prepare(&view(&messages[..4], None), &ctx);
    assert_eq!(first.calls[0].messages.as_ref(), &messages[..4]);
    assert_eq!(first.bust_cause, None);

    let second = window.prepare(&view(&messages, None), &ctx);
    let kept = second.calls[0].messages.as_ref();
    let mut expected = vec![system("rules"), omitted_marker()];
    expected.extend_from_slice(&messages[8..]);
    assert_eq!(kept, expected.as_slice());
    assert_eq!(second.bust_cause, Some("window"));

    // The same cut again rewrites nothing.
    let third = window.prepare(&view(&messages, None), &ctx);
    assert_eq!(third.bust_cause, None);
}

#[test]
fn a_user_turn_start_needs_no_marker() {
    let mut messages = vec![user("go")];
    for id in ["a", "b", "c"] {
        messages.push(assistant_calls(&[id]));
        messages.push(tool_results_sized(&[id], 1_000));
        messages.push(assistant("ok"));
        messages.push(user("next"));
    }
    let counts = tokens(&messages);
    // Exactly the last user turn onward: no marker needed, so it fits to the token.
    let budget = counts[8..].iter().sum::<u64>();
    assert_eq!(window_start(&messages, &counts, budget, marker_tokens()), 8);
}

/// A conversation of user turns and tool episodes (one call message answered by one result
/// message), with the sizes drawn.
fn arb_conversation() -> impl proptest::strategy::Strategy<Value = Vec<Message>> {
    let episode = (0usize..4, 1usize..3_000, prop::bool::ANY);
    prop::collection::vec(episode, 1..25).prop_map(|episodes| {
        let mut messages = vec![system("rules"), user("start")];
        for (index, (calls, size, interject)) in episodes.into_iter().enumerate() {
            if calls == 0 || interject {
                messages.push(assistant("thinking"));
                messages.push(user(&"u".repeat(size)));
            }
            if calls > 0 {
                let ids: Vec<String> = (0..calls).map(|call| format!("c{index}_{call}")).collect();
                let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
                messages.push(assistant_calls(&ids));
                messages.push(tool_results_sized(&ids, size));
            }
        }
        messages
    })
}

proptest! {
    #[test]
    fn never_over_budget_and_never_splits_a_pair(
        messages in arb_conversation(),
        window_tokens in 20_500u64..60_000,
    ) {
        let ctx = context(window_tokens);
        let prepared = Window::new().prepare(&view(&messages, None), &ctx);
        let kept = prepared.calls[0].messages.as_ref();
        let budget = window_tokens - 20_000;
        let total: u64 = tokens(kept).iter().sum();

        // Every kept result has its call kept, and no kept call lost a result that exists.
        let calls: HashSet<&str> = kept.iter().flat_map(Message::tool_call_ids).collect();
        let results: HashSet<&str> = kept.iter().flat_map(Message::tool_result_ids).collect();
        let all_results: HashSet<&str> =
            messages.iter().flat_map(Message::tool_result_ids).collect();
        prop_assert!(results.is_subset(&calls), "orphan result kept");
        for call in &calls {
            prop_assert!(
                !all_results.contains(call) || results.contains(call),
                "call {} lost its result", call
            );
        }
        // The head, then a user turn that answers nothing (the marker or a real turn), then
        // a suffix of the conversation.
        prop_assert_eq!(&kept[0], &messages[0]);
        prop_assert_eq!(kept[1].role, Role::User);
        prop_assert!(kept[1].tool_result_ids().next().is_none());
        let suffix = if kept[1] == omitted_marker() { &kept[2..] } else { &kept[1..] };
        prop_assert_eq!(suffix, &messages[messages.len() - suffix.len()..]);
        prop_assert!(!suffix.iter().any(|message| message.parts.iter().any(Part::is_tool_result)
            && message.tool_result_ids().any(|id| !calls.contains(id))));

        // Within budget whenever any valid cut fits; otherwise the least that can be sent.
        let counts = tokens(&messages);
        let valid = valid_starts(&messages);
        let cost = |start: usize| {
            let marker = if messages[start].role == Role::Assistant { marker_tokens() } else { 0 };
            counts[0] + marker + counts[start..].iter().sum::<u64>()
        };
        let fits = (1..messages.len()).any(|start| valid[start] && cost(start) <= budget);
        if fits {
            prop_assert!(total <= budget, "kept {} tokens over the {} budget", total, budget);
        } else {
            let latest = (1..messages.len()).rev().find(|&start| valid[start]).unwrap_or(1);
            prop_assert_eq!(suffix.len(), messages.len() - latest);
        }
    }
}
