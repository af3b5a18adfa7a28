use super::*;
use crate::CountTokens;
use crate::strategy::test_support::{Chars, assistant, context, conversation, system, user, view};

/// The ledger estimate prices the summary call's instruction and the turn that replaces
/// the history by fixed token figures: they are the texts' o200k counts.
#[test]
fn the_host_compaction_figures_count_its_texts() {
    use mc_core::host_compaction::{CONTINUATION, CONTINUATION_TOKENS, SUMMARY_INSTRUCTION_TOKENS};

    let counter = crate::O200kCounter::load().unwrap();
    assert_eq!(
        (
            counter.count_tokens(SUMMARY_INSTRUCTION),
            counter.count_tokens(CONTINUATION)
        ),
        (SUMMARY_INSTRUCTION_TOKENS, CONTINUATION_TOKENS)
    );
}

#[test]
fn below_the_threshold_it_sends_the_request_as_is() {
    let messages = conversation(3);
    let mut strategy = Autocompact::new();
    let ctx = context(50_000);
    assert_eq!(
        strategy.prepare(&view(&messages, None), &ctx).calls.len(),
        1
    );
    // The same request again, measured 1 token under the threshold, nothing new.
    let prepared = strategy.prepare(&view(&messages, Some(16_999)), &ctx);
    assert_eq!(prepared.calls.len(), 1);
    assert_eq!(prepared.calls[0].messages.as_ref(), messages.as_slice());
    assert_eq!(prepared.bust_cause, None);
}

#[test]
fn at_the_threshold_it_summarises_then_sends_the_summary() {
    let messages = conversation(3);
    let mut strategy = Autocompact::new();
    let ctx = context(50_000);
    strategy.prepare(&view(&messages[..1], None), &ctx);
    let prepared = strategy.prepare(&view(&messages, Some(17_000)), &ctx);
    assert_eq!(prepared.bust_cause, Some("autocompact"));
    let [summary_call, main] = prepared.calls.as_slice() else {
        panic!("expected a summary call and the main request: {prepared:?}");
    };
    assert_eq!(summary_call.label, Some(SUMMARY_LABEL));
    assert_eq!(summary_call.output_tokens, Some(SUMMARY_OUTPUT_TOKENS));
    let mut expected = messages.clone();
    expected.push(Message::new(
        Role::User,
        vec![Part::text(SUMMARY_INSTRUCTION)],
    ));
    assert_eq!(summary_call.messages.as_ref(), expected.as_slice());
    let summary = summary_message(&Chars, &messages, SUMMARY_OUTPUT_TOKENS, 1);
    assert_eq!(main.messages.as_ref(), [summary.clone()].as_slice());
    assert_eq!(main.label, None);

    // The next turn appends to the summary, not to the old history.
    let mut next = messages.clone();
    next.push(assistant("done"));
    next.push(user("and then?"));
    let prepared = strategy.prepare(&view(&next, Some(2_000)), &ctx);
    assert_eq!(prepared.bust_cause, None);
    assert_eq!(
        prepared.calls[0].messages.as_ref(),
        [summary, assistant("done"), user("and then?")].as_slice()
    );
}

#[test]
fn new_messages_count_toward_the_trigger_and_it_compacts_again() {
    let ctx = context(50_000);
    let mut strategy = Autocompact::new();
    let mut messages = vec![system("rules"), user("start")];
    // 10K under the threshold, then 12K of new text arrives: over it.
    let first = strategy.prepare(&view(&messages, Some(1_000)), &ctx);
    assert_eq!(first.calls.len(), 1);
    messages.push(assistant("ok"));
    messages.push(user(&"x".repeat(12_000)));
    let second = strategy.prepare(&view(&messages, Some(7_000)), &ctx);
    assert_eq!(second.calls.len(), 2, "7K + 12K new crosses 17K");
    let main = second.calls[1].messages.clone().into_owned();
    assert_eq!(main.len(), 2);
    assert_eq!(
        main[0],
        system("rules"),
        "the head system message stays in place"
    );

    messages.push(assistant("again"));
    messages.push(user("more"));
    let third = strategy.prepare(&view(&messages, Some(17_500)), &ctx);
    assert_eq!(third.calls.len(), 2);
    // The second summary covers the first summary and what followed it, and differs from it.
    let summarised = &third.calls[0].messages;
    assert_eq!(summarised[1], main[1]);
    assert_ne!(third.calls[1].messages[1], main[1]);
    assert_eq!(third.calls[1].messages.len(), 2);
}

#[test]
fn with_nothing_new_it_does_not_compact_twice() {
    let ctx = context(20_000);
    let mut strategy = Autocompact::new();
    let messages = conversation(2);
    assert_eq!(
        strategy
            .prepare(&view(&messages, Some(5)), &ctx)
            .calls
            .len(),
        2
    );
    // A retry of the same request right after: nothing to summarise beyond the summary.
    assert_eq!(
        strategy
            .prepare(&view(&messages, Some(5)), &ctx)
            .calls
            .len(),
        1
    );
}
