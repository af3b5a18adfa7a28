use serde_json::json;

use super::*;

fn errored_then(after: usize, message: Message) -> Vec<Message> {
    let mut stored = vec![
        user("task"),
        call("e", "Bash", json!({"command": "make"})),
        message,
    ];
    stored.extend(turns(after, "f"));
    stored
}

#[test]
fn flagged_error_goes_after_three_turns() {
    let failed = result_with("e", &words(40, "boom"), true);
    assert_eq!(
        Session::new(errored_then(3, failed.clone())).lanes(),
        vec![(2, ReclaimLane::ErroredCall)]
    );
    assert_eq!(Session::new(errored_then(2, failed)).lanes(), vec![]);
}

#[test]
fn error_marker_counts_without_the_flag() {
    let failed = result("e", &format!("  Error: no such file\n{}", words(40, "x")));
    assert_eq!(
        Session::new(errored_then(3, failed)).lanes(),
        vec![(2, ReclaimLane::ErroredCall)]
    );
    let fine = result(
        "e",
        &format!("build ok, 0 Error: lines\n{}", words(40, "x")),
    );
    assert_eq!(Session::new(errored_then(3, fine)).lanes(), vec![]);
}

#[test]
fn protected_error_stays() {
    let mut session = Session::new(errored_then(3, result_with("e", &words(40, "boom"), true)));
    session.config.protected_count = 10;
    assert_eq!(session.lanes(), vec![]);
}

#[test]
fn text_protocol_errors_need_a_failing_code_and_a_marker() {
    let mut stored = vec![user("task")];
    for output in [
        "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n  File x.py</output>",
        "<returncode>0</returncode>\n<output>\nError: printed by a passing script</output>",
        "<returncode>1</returncode>\n<output>\nFAILED tests/test_a.py::test_x</output>",
    ] {
        stored.push(assistant("```bash\npython x.py\n```"));
        stored.push(user(output));
    }
    stored.extend(turns(3, "f"));
    assert_eq!(
        Session::new(stored).lanes(),
        vec![(3, ReclaimLane::ErroredCall)]
    );
}
