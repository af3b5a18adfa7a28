use serde_json::json;

use super::*;

/// Task, a big output, then `after` filler turns.
fn big_output_then(after: usize, tokens: usize) -> Vec<Message> {
    let mut stored = vec![
        user("fix the bug"),
        call("big", "Bash", json!({"command": "pytest"})),
        result("big", &words(tokens, "w")),
    ];
    stored.extend(turns(after, "f"));
    stored
}

#[test]
fn old_large_output_is_stale() {
    let session = Session::new(big_output_then(8, 1_000));
    assert_eq!(session.lanes(), vec![(2, ReclaimLane::StaleOutput)]);
    let decision = session.plan()[0];
    // 1,000 tokens of output minus the placeholder's 3.
    assert_eq!(decision.tokens, 1_000 - 3);
}

#[test]
fn young_or_small_output_stays() {
    assert_eq!(Session::new(big_output_then(7, 1_000)).lanes(), vec![]);
    assert_eq!(Session::new(big_output_then(8, 700)).lanes(), vec![]);
}

#[test]
fn protected_output_stays() {
    let mut session = Session::new(big_output_then(8, 1_000));
    // Tags: task 1, big 2, fillers 3..=10: protecting 9 covers the big output.
    session.config.protected_count = 9;
    assert_eq!(session.lanes(), vec![]);
    session.config.protected_count = 8;
    assert_eq!(session.lanes(), vec![(2, ReclaimLane::StaleOutput)]);
}

#[test]
fn landed_or_queued_output_is_not_decided_again() {
    let mut session = Session::new(big_output_then(8, 1_000));
    session.drops.queued.insert(TagNo(2));
    assert_eq!(session.lanes(), vec![]);
    session.drops.queued.clear();
    session.drops.landed.insert(TagNo(2));
    assert_eq!(session.lanes(), vec![]);
}

#[test]
fn task_and_system_messages_are_never_reclaimed() {
    let mut stored = vec![
        Message::new(Role::System, vec![Part::text(words(2_000, "s"))]),
        user(&words(2_000, "t")),
    ];
    stored.extend(turns(10, "f"));
    let mut session = Session::new(stored);
    assert_eq!(session.lanes(), vec![]);
    session.emergency = true;
    assert_eq!(session.lanes(), vec![]);
}

#[test]
fn text_protocol_output_counts_as_tool_output() {
    let mut stored = vec![user(&words(2_000, "task"))];
    stored.push(assistant("THOUGHT: look\n```bash\npytest\n```"));
    stored.push(user(&format!(
        "<returncode>1</returncode>\n<output>\n{}</output>",
        words(1_000, "o")
    )));
    for turn in 0..8 {
        stored.push(assistant(&format!("```bash\necho {turn}\n```")));
        stored.push(user(&format!(
            "<returncode>0</returncode><output>{turn}</output>"
        )));
    }
    let mut session = Session::new(stored);
    assert_eq!(session.lanes(), vec![(3, ReclaimLane::StaleOutput)]);
    session.config.user_text_as_output = false;
    assert_eq!(session.lanes(), vec![]);
}

#[test]
fn emergency_ignores_age_and_size_largest_first() {
    let mut stored = vec![user("task")];
    for (id, tokens) in [("a", 50), ("b", 300), ("c", 120)] {
        stored.push(call(id, "Bash", json!({"command": "ls"})));
        stored.push(result(id, &words(tokens, id)));
    }
    let mut session = Session::new(stored);
    assert_eq!(session.lanes(), vec![]);
    session.emergency = true;
    let order: Vec<(u32, ReclaimLane)> = session.plan().iter().map(|d| (d.tag.0, d.lane)).collect();
    assert_eq!(
        order,
        vec![
            (3, ReclaimLane::Emergency),
            (4, ReclaimLane::Emergency),
            (2, ReclaimLane::Emergency)
        ]
    );
    // Protection still holds in the force band.
    session.config.protected_count = 1;
    assert_eq!(
        session.lanes(),
        vec![(2, ReclaimLane::Emergency), (3, ReclaimLane::Emergency)]
    );
}

#[test]
fn emergency_drops_the_models_old_narration_but_never_the_users_words() {
    let mut stored = vec![
        user("task"),
        Message::new(Role::Assistant, vec![Part::text(words(400, "narration"))]),
        user(&words(300, "instruction")),
        Message::new(Role::Assistant, vec![Part::text(words(200, "later"))]),
    ];
    stored.extend(turns(2, "f"));
    let mut session = Session::new(stored);
    session.config.user_text_as_output = false;
    assert_eq!(session.lanes(), vec![], "narration is not a normal lane");
    session.emergency = true;
    // Tags: task 1, narration 2, instruction 3, later 4: the model's text goes, largest
    // first; the user's instruction stays.
    let tags: Vec<u32> = session.plan().iter().map(|d| d.tag.0).collect();
    assert!(tags.starts_with(&[2, 4]), "{tags:?}");
    assert!(!tags.contains(&3) && !tags.contains(&1), "{tags:?}");
}
