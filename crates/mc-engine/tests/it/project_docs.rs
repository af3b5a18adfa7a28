//! The project's docs in `m[0]`: rendered at a hard fold within the docs budget, recorded by
//! their hash, and never a bust of their own: an edited doc reaches `m[0]` at the next
//! natural hard fold, and until then every pass sends the bytes it would have sent anyway.

use mc_core::config::Config;
use mc_core::head::ProjectDoc;
use mc_core::pass_plan::PassKind;
use mc_core::{Message, Part, Role};
use proptest::prelude::*;

use crate::props::{Drive, cases, drive};
use crate::session::arb_script;
use crate::support::{Call, Harness, MODEL, START_MS};

fn doc(name: &str, text: &str) -> ProjectDoc {
    ProjectDoc {
        name: name.to_owned(),
        text: text.to_owned(),
    }
}

fn architecture(version: u32) -> Vec<ProjectDoc> {
    vec![doc(
        "ARCHITECTURE.md",
        &format!(
            "# Architecture (v{version})\nThe proxy sits between the agent and the provider.\n\n\
             ## Store\nOne SQLite file in WAL mode holds everything."
        ),
    )]
}

fn text_of(message: &Message) -> String {
    mc_core::joined_texts(&message.parts)
}

/// A session's first request, on a 200K window.
fn first_call(messages: &[Message]) -> Call<'_> {
    Call {
        model: MODEL,
        messages,
        now_ms: START_MS,
        usable_window: 200_000,
        last_usage_tokens: None,
        operator_flush: false,
    }
}

#[test]
fn m0_carries_the_docs_in_their_budget() {
    let harness = Harness::new();
    *harness.project_docs.borrow_mut() = architecture(1);
    let messages = [Message::new(Role::User, vec![Part::text("Add a cache.")])];
    let outcome = harness.pass(&first_call(&messages)).unwrap();
    let m0 = text_of(&outcome.messages[0]);
    insta::assert_snapshot!(m0);
    let state: mc_engine::EngineState =
        serde_json::from_str(&harness.snapshot().engine_state.unwrap_or_default()).unwrap();
    assert_eq!(
        state.m0_docs_hash.len(),
        16,
        "the docs' hash is kept with m[0]"
    );

    let mut config = Config::default();
    config.project_docs.enabled = false;
    let off = Harness::with_config(config);
    *off.project_docs.borrow_mut() = architecture(1);
    let outcome = off.pass(&first_call(&messages)).unwrap();
    assert!(!text_of(&outcome.messages[0]).contains("project-docs"));
}

proptest! {
    #![proptest_config(cases())]

    /// A doc edited at any pass changes no pass's kind and no byte of any pass until the
    /// next hard fold, which then shows the edit.
    #[test]
    fn a_docs_edit_never_busts_by_itself(script in arb_script(), edit_at in 0usize..12) {
        let quiet = || Drive { check: false, retry: false };
        let steady = Harness::new();
        *steady.project_docs.borrow_mut() = architecture(1);
        let before = drive(&steady, &script, quiet())?;
        let edited = Harness::new();
        *edited.project_docs.borrow_mut() = architecture(1);
        *edited.docs_edit.borrow_mut() = Some((edit_at, architecture(2)));
        let after = drive(&edited, &script, quiet())?;
        prop_assert_eq!(before.outcomes.len(), after.outcomes.len());
        let mut folded_since_edit = false;
        for (index, (was, now)) in before.outcomes.iter().zip(&after.outcomes).enumerate() {
            prop_assert_eq!(was.plan.kind, now.plan.kind, "pass {}", index);
            folded_since_edit |= index >= edit_at && now.plan.kind == PassKind::HardFold;
            if folded_since_edit {
                prop_assert_eq!(&was.messages[1..], &now.messages[1..], "pass {}", index);
                let m0 = text_of(&now.messages[0]);
                prop_assert!(!m0.contains("(v1)"), "the fold shows the edit: {}", m0);
            } else {
                prop_assert_eq!(&was.messages, &now.messages, "pass {}", index);
            }
        }
    }
}
