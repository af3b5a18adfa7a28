use serde_json::json;

use super::*;

/// Task, then one call/result per output, in order; result i gets tag i + 2.
fn outputs(texts: &[String]) -> Vec<Message> {
    let mut stored = vec![user("task")];
    for (index, text) in texts.iter().enumerate() {
        let id = format!("c{index}");
        stored.push(call(&id, "Bash", json!({"command": "git status"})));
        stored.push(result(&id, text));
    }
    stored
}

#[test]
fn exact_duplicate_keeps_the_newest_copy() {
    let status = words(60, "s");
    let session = Session::new(outputs(&[
        status.clone(),
        words(60, "other"),
        status.replace(' ', "\n  "),
    ]));
    assert_eq!(session.lanes(), vec![(2, ReclaimLane::DuplicateOutput)]);
}

#[test]
fn three_copies_leave_only_the_newest() {
    let status = words(60, "s");
    let session = Session::new(outputs(&[status.clone(), status.clone(), status]));
    assert_eq!(
        session.lanes(),
        vec![
            (2, ReclaimLane::DuplicateOutput),
            (3, ReclaimLane::DuplicateOutput)
        ]
    );
}

#[test]
fn near_duplicate_of_large_output_goes() {
    let before = words(400, "t");
    let after = before.replacen("t7 ", "changed ", 1);
    assert_eq!(
        Session::new(outputs(&[before, after])).lanes(),
        vec![(2, ReclaimLane::DuplicateOutput)]
    );
}

#[test]
fn near_duplicate_needs_size_and_similarity() {
    // Too small for shingles to count.
    let small = words(150, "t");
    let small_changed = small.replacen("t7 ", "changed ", 1);
    assert_eq!(
        Session::new(outputs(&[small, small_changed])).lanes(),
        vec![]
    );
    // Large but only half shared.
    let first = format!("{}{}", words(200, "a"), words(200, "b"));
    let second = format!("{}{}", words(200, "a"), words(200, "c"));
    assert_eq!(Session::new(outputs(&[first, second])).lanes(), vec![]);
}

#[test]
fn a_dropped_newer_copy_does_not_stand_in() {
    let status = words(60, "s");
    let mut session = Session::new(outputs(&[status.clone(), status]));
    session.drops.landed.insert(TagNo(3));
    assert_eq!(session.lanes(), vec![]);
}

#[test]
fn protected_newer_copy_still_counts_but_protected_older_stays() {
    let status = words(60, "s");
    let mut session = Session::new(outputs(&[status.clone(), status]));
    session.config.protected_count = 1;
    assert_eq!(session.lanes(), vec![(2, ReclaimLane::DuplicateOutput)]);
    session.config.protected_count = 2;
    assert_eq!(session.lanes(), vec![]);
}

#[test]
fn the_task_is_never_a_duplicate() {
    let task = words(60, "s");
    let mut stored = vec![user(&task)];
    stored.push(call("c", "Bash", json!({"command": "cat task.md"})));
    stored.push(result("c", &task));
    assert_eq!(Session::new(stored).lanes(), vec![]);
}
