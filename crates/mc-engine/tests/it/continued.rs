//! A session that continues a conversation its client compacted away carries what that one
//! held in `m[0]`: rendered once at its first pass, stored, and the same bytes at every fold.

use mc_core::head::{Compartment, Quote, RangeIndex};
use mc_core::{Message, Part, Role, SessionId};
use mc_engine::{EngineError, PassOutcome};
use proptest::prelude::*;

use crate::props::{Drive, cases, drive};
use crate::session::{TTL_MS, arb_script};
use crate::support::{Call, Harness, MODEL, START_MS, rendered_tokens};

fn text(role: Role, text: &str) -> Message {
    Message::new(role, vec![Part::text(text)])
}

fn id(name: &str) -> SessionId {
    SessionId::new(name).unwrap()
}

fn pass(
    harness: &Harness,
    session: &SessionId,
    continues: Option<&SessionId>,
    messages: &[Message],
    at: u64,
) -> PassOutcome {
    *harness.continues.borrow_mut() = continues.cloned();
    let call = Call {
        model: MODEL,
        messages,
        now_ms: START_MS + at,
        usable_window: 150_000,
        last_usage_tokens: None,
        operator_flush: false,
    };
    harness.pass_for(session, &call).unwrap()
}

fn m0(outcome: &PassOutcome) -> String {
    mc_core::joined_texts(&outcome.messages[0].parts)
}

/// The earlier conversation: a task, a compartment over its first exchange, then the user's
/// correction that no compartment covers yet.
fn earlier(harness: &Harness, session: &SessionId) -> Vec<Message> {
    let messages = vec![
        text(Role::User, "build the weather page for Graz"),
        text(
            Role::Assistant,
            "Built weather/index.html on OpenWeatherMap.",
        ),
        text(Role::User, "keep it to one file"),
        text(Role::Assistant, "It is one file."),
        text(Role::User, "use a service that needs no api key"),
        text(Role::Assistant, "Switched to Open-Meteo."),
    ];
    pass(harness, session, None, &messages, 0);
    let compartment = Compartment {
        start_ordinal: 0,
        end_ordinal: 3,
        start_ms: START_MS,
        end_ms: START_MS + 60_000,
        title: "Weather page on OpenWeatherMap".to_owned(),
        importance: 50,
        episode: "feature".to_owned(),
        tiers: [
            "Built the page; the user wants one file.".to_owned(),
            "Built the page.".to_owned(),
            "Page built.".to_owned(),
            "Page.".to_owned(),
        ],
        quotes: vec![Quote {
            ordinal: 2,
            text: "keep it to one file".to_owned(),
        }],
        index: RangeIndex::default(),
    };
    harness
        .engine
        .store()
        .write(|tx| tx.append_compartments(session, &[compartment], 0))
        .unwrap();
    messages
}

fn continuation(summary: &str, more: &[&str]) -> Vec<Message> {
    let mut messages = vec![text(
        Role::User,
        &format!(
            "This session is being continued from a previous conversation that ran out of \
             context. The conversation is summarized below: {summary}"
        ),
    )];
    for (index, said) in more.iter().enumerate() {
        let role = if index % 2 == 0 {
            Role::Assistant
        } else {
            Role::User
        };
        messages.push(text(role, said));
    }
    messages
}

#[test]
fn the_continuing_session_shows_the_earlier_task_history_and_words_at_every_fold() {
    let harness = Harness::new();
    let (first, second) = (id("cc-client-aaaa"), id("cc-client-bbbb"));
    let earlier_messages = earlier(&harness, &first);
    let messages = continuation(
        "a weather page was built.",
        &["On it.", "delete the folder", "Deleted.", "thanks"],
    );
    let opened = pass(&harness, &second, Some(&first), &messages[..1], TTL_MS);
    let head = m0(&opened);
    assert!(
        head.contains(
            "<earlier-conversation session=\"cc-client-aaaa\">\nThe client compacted the \
             conversation before this one"
        ),
        "{head}"
    );
    assert!(
        head.contains("<task>build the weather page for Graz</task>\n<history>\n"),
        "{head}"
    );
    assert!(
        head.contains("<user ordinal=\"2\">keep it to one file</user>"),
        "{head}"
    );
    assert!(
        head.contains(
            "</history>\n<user ordinal=\"4\">use a service that needs no api key</user>\n\
             </earlier-conversation>"
        ),
        "{head}"
    );
    // The next pass hits the cache; a fold after the TTL renders m[0] again, the same way.
    let hit = pass(
        &harness,
        &second,
        Some(&first),
        &messages[..3],
        TTL_MS + 1_000,
    );
    assert_eq!(hit.messages[0], opened.messages[0]);
    let refold = pass(&harness, &second, Some(&first), &messages, 3 * TTL_MS);
    assert!(refold.plan.may_mutate, "{:?}", refold.plan);
    assert_eq!(m0(&refold), head);
    // The earlier session going on afterwards changes nothing the continuation carries.
    let mut grown = earlier_messages;
    grown.push(text(Role::User, "one more thing"));
    pass(&harness, &first, None, &grown, 4 * TTL_MS);
    let mut longer = messages.clone();
    longer.push(text(Role::Assistant, "Anything else?"));
    longer.push(text(Role::User, "no"));
    assert_eq!(
        m0(&pass(&harness, &second, Some(&first), &longer, 6 * TTL_MS)),
        head
    );
    let stored = harness
        .engine
        .store()
        .read(|tx| tx.earlier_conversation(&second))
        .unwrap()
        .unwrap();
    assert_eq!(stored.earlier_session, "cc-client-aaaa");
    assert!(head.contains(&stored.text));
}

#[test]
fn a_continuation_of_a_continuation_carries_both_and_a_plain_session_carries_none() {
    let harness = Harness::new();
    let (first, second, third) = (id("cc-c-1"), id("cc-c-2"), id("cc-c-3"));
    earlier(&harness, &first);
    let second_messages = continuation("page built.", &["Deleting.", "now make a clock page"]);
    pass(&harness, &second, Some(&first), &second_messages, TTL_MS);
    let third_messages = continuation("clock page next.", &[]);
    let head = m0(&pass(
        &harness,
        &third,
        Some(&second),
        &third_messages,
        2 * TTL_MS,
    ));
    assert!(
        head.contains("<earlier-conversation session=\"cc-c-2\">"),
        "{head}"
    );
    assert!(head.contains("now make a clock page"), "{head}");
    assert!(
        head.contains("<earlier-conversation session=\"cc-c-1\">"),
        "{head}"
    );
    assert!(
        head.contains("use a service that needs no api key"),
        "{head}"
    );
    // Told nothing, a session carries nothing; an unknown earlier session carries nothing.
    let plain = m0(&pass(
        &harness,
        &id("cc-c-4"),
        None,
        &third_messages,
        3 * TTL_MS,
    ));
    assert!(!plain.contains("earlier-conversation"), "{plain}");
    let unknown = m0(&pass(
        &harness,
        &id("cc-c-5"),
        Some(&id("cc-never-stored")),
        &third_messages,
        4 * TTL_MS,
    ));
    assert!(!unknown.contains("earlier-conversation"), "{unknown}");
}

proptest! {
    #![proptest_config(cases())]

    /// Over generated sessions: a conversation that continues another shows what it carries
    /// in `m[0]` at every pass, and the stored text never changes after its first pass.
    #[test]
    fn a_continued_session_shows_the_same_carry_at_every_pass(script in arb_script()) {
        let harness = Harness::new();
        drive(&harness, &script, Drive { check: false, retry: false })?;
        let earlier_stored = harness
            .engine
            .store()
            .read(|tx| tx.get_session(&harness.session))
            .unwrap()
            .is_some();
        let (mut messages, steps) = script.materialise();
        messages[0] = text(
            Role::User,
            "This session is being continued from a previous conversation that ran out of \
             context. The conversation is summarized below: the tests were fixed.",
        );
        let later = id("continued-session");
        *harness.continues.borrow_mut() = Some(harness.session.clone());
        let offset = steps.last().map_or(0, |step| step.now_ms) + TTL_MS;
        let mut first: Option<String> = None;
        let mut previous: Option<PassOutcome> = None;
        for step in &steps {
            let call = Call {
                model: step.model,
                messages: &messages[..step.messages_len],
                now_ms: step.now_ms + offset,
                usable_window: script.usable_window,
                last_usage_tokens: previous
                    .as_ref()
                    .map(|outcome| rendered_tokens(&outcome.messages)),
                operator_flush: step.operator_flush,
            };
            let outcome = match harness.pass_for(&later, &call) {
                Ok(outcome) => outcome,
                Err(EngineError::Refused { .. }) => break,
                Err(error) => return Err(TestCaseError::fail(format!("pass failed: {error}"))),
            };
            let carried = harness
                .engine
                .store()
                .read(|tx| tx.earlier_conversation(&later))
                .unwrap()
                .map(|row| row.text);
            prop_assert_eq!(carried.is_some(), earlier_stored);
            if let Some(carried) = carried {
                let first = first.get_or_insert_with(|| carried.clone());
                prop_assert_eq!(&*first, &carried, "the carried text changed");
                let head = m0(&outcome);
                prop_assert!(head.contains(&carried), "m[0] lost the carry: {}", head);
            }
            previous = Some(outcome);
        }
    }
}
