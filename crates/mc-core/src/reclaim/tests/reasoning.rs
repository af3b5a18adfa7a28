use serde_json::json;

use super::super::{ReasoningDrop, plan_reasoning_drops};
use super::*;

fn thinking_call(id: &str, signed: bool) -> Message {
    Message::new(
        Role::Assistant,
        vec![
            Part::Thinking {
                text: format!("let me think about {id}"),
                signature: signed.then(|| format!("sig-{id}")),
            },
            Part::ToolCall {
                id: id.into(),
                name: "Bash".into(),
                input: json!({"command": "ls"}),
            },
        ],
    )
}

fn drops(session: &Session) -> Vec<(u64, u32)> {
    session
        .with_inputs(|inputs| plan_reasoning_drops(inputs, &session.config))
        .iter()
        .map(|drop: &ReasoningDrop| (drop.ordinal, drop.part))
        .collect()
}

/// Ordinals: 0 task; 1..=10 five thinking turns; 11 a new instruction; 12..=15 two more.
fn two_instructions() -> Vec<Message> {
    let mut stored = vec![user("task")];
    for turn in 0..5 {
        let id = format!("a{turn}");
        stored.push(thinking_call(&id, true));
        stored.push(result(&id, "ok"));
    }
    stored.push(user("now also update the docs"));
    for turn in 0..2 {
        let id = format!("b{turn}");
        stored.push(thinking_call(&id, true));
        stored.push(result(&id, "ok"));
    }
    stored
}

#[test]
fn old_reasoning_goes_and_the_current_turn_stays() {
    let session = Session::new(two_instructions());
    // Assistant messages at 1,3,5,7,9 (previous turn) and 12,14 (current turn). Ages: 1→6,
    // 3→5, 5→4, 7→3, 9→2. Only age ≥ 4 goes; 12 and 14 are the current tool-use turn.
    assert_eq!(drops(&session), vec![(1, 0), (3, 0), (5, 0)]);
}

#[test]
fn emergency_drops_all_reasoning_outside_the_current_turn() {
    let mut session = Session::new(two_instructions());
    session.emergency = true;
    assert_eq!(
        drops(&session),
        vec![(1, 0), (3, 0), (5, 0), (7, 0), (9, 0)]
    );
}

#[test]
fn one_long_tool_use_turn_keeps_all_its_thinking() {
    let mut stored = vec![user("task")];
    for turn in 0..10 {
        let id = format!("a{turn}");
        stored.push(thinking_call(&id, true));
        stored.push(result(&id, "ok"));
    }
    let mut session = Session::new(stored);
    session.emergency = true;
    assert_eq!(drops(&session), vec![]);
}

#[test]
fn reasoning_only_message_keeps_its_reasoning() {
    let mut stored = vec![user("task")];
    stored.push(Message::new(
        Role::Assistant,
        vec![Part::RedactedThinking { data: "xyz".into() }],
    ));
    stored.push(assistant("done"));
    for turn in 0..6 {
        stored.push(user(&format!("next {turn}")));
        stored.push(Message::new(
            Role::Assistant,
            vec![
                Part::RedactedThinking { data: "abc".into() },
                Part::text("answer"),
            ],
        ));
    }
    let session = Session::new(stored);
    // Ordinal 1 has nothing else; 4, 6 are old enough (ages 5, 4); 8, 10, 12 are not.
    assert_eq!(drops(&session), vec![(4, 0), (6, 0)]);
}

#[test]
fn results_with_client_text_continue_the_turn() {
    let mut stored = vec![user("task")];
    for turn in 0..8 {
        let id = format!("a{turn}");
        stored.push(thinking_call(&id, true));
        let mut answer = result(&id, "ok");
        answer
            .parts
            .push(Part::text("<system-reminder>todo list</system-reminder>"));
        stored.push(answer);
    }
    let mut session = Session::new(stored);
    session.emergency = true;
    assert_eq!(drops(&session), vec![]);
}
