use serde_json::json;

use super::*;

fn read(id: &str, path: &str) -> Message {
    call(id, "Read", json!({"file_path": path}))
}

/// Task, then (call, result) pairs; result i gets tag i + 2.
fn session(pairs: Vec<(Message, Message)>) -> Session {
    let mut stored = vec![user("task")];
    for (call, result) in pairs {
        stored.push(call);
        stored.push(result);
    }
    Session::new(stored)
}

#[test]
fn a_later_read_supersedes_an_earlier_one() {
    let s = session(vec![
        (read("1", "src/a.rs"), result("1", &words(100, "old"))),
        (read("2", "src/b.rs"), result("2", &words(100, "b"))),
        (read("3", "./src/a.rs"), result("3", &words(100, "new"))),
    ]);
    assert_eq!(s.lanes(), vec![(2, ReclaimLane::SupersededRead)]);
}

#[test]
fn a_later_write_or_edit_supersedes_reads() {
    for writer in [
        call(
            "w",
            "Edit",
            json!({"file_path": "a.py", "old_string": "x", "new_string": "y"}),
        ),
        call("w", "Write", json!({"file_path": "a.py", "content": "y"})),
        call(
            "w",
            "str_replace_based_edit_tool",
            json!({"command": "str_replace", "path": "a.py"}),
        ),
        call("w", "Bash", json!({"command": "sed -i 's/x/y/' a.py"})),
    ] {
        let s = session(vec![
            (read("1", "a.py"), result("1", &words(100, "old"))),
            (writer, result("w", "done")),
        ]);
        assert_eq!(s.lanes(), vec![(2, ReclaimLane::SupersededRead)]);
    }
}

#[test]
fn failed_or_dropped_later_access_supersedes_nothing() {
    let failed = session(vec![
        (read("1", "a.py"), result("1", &words(100, "old"))),
        (
            read("2", "a.py"),
            result_with("2", "file changed on disk", true),
        ),
    ]);
    assert_eq!(failed.lanes(), vec![]);
    let mut dropped = session(vec![
        (read("1", "a.py"), result("1", &words(100, "old"))),
        (read("2", "a.py"), result("2", &words(100, "new"))),
    ]);
    dropped.drops.queued.insert(TagNo(3));
    assert_eq!(dropped.lanes(), vec![]);
}

#[test]
fn partial_reads_only_supersede_the_same_span() {
    let partial = |id: &str, offset: u32| {
        call(
            id,
            "Read",
            json!({"file_path": "a.py", "offset": offset, "limit": 50}),
        )
    };
    let different = session(vec![
        (partial("1", 0), result("1", &words(100, "top"))),
        (partial("2", 50), result("2", &words(100, "bottom"))),
    ]);
    assert_eq!(different.lanes(), vec![]);
    let same = session(vec![
        (partial("1", 0), result("1", &words(100, "top"))),
        (partial("2", 0), result("2", &words(100, "top2"))),
    ]);
    assert_eq!(same.lanes(), vec![(2, ReclaimLane::SupersededRead)]);
    let whole_later = session(vec![
        (partial("1", 0), result("1", &words(100, "top"))),
        (read("2", "a.py"), result("2", &words(100, "all"))),
    ]);
    assert_eq!(whole_later.lanes(), vec![(2, ReclaimLane::SupersededRead)]);
}

#[test]
fn shell_reads_and_text_protocol_actions_count() {
    let s = session(vec![
        (
            call("1", "Bash", json!({"command": "cat src/x.py"})),
            result("1", &words(100, "v1")),
        ),
        (
            call("2", "Bash", json!({"command": "nl -ba src/x.py"})),
            result("2", &words(100, "v2")),
        ),
    ]);
    assert_eq!(s.lanes(), vec![(2, ReclaimLane::SupersededRead)]);

    let mut stored = vec![user("task")];
    for (action, output) in [
        (
            "```bash\nnl -ba x.py | sed -n '1,40p'\n```",
            "<returncode>0</returncode><output>v1 one two</output>",
        ),
        (
            "```bash\ncat x.py\n```",
            "<returncode>1</returncode><output>cat: x.py: denied</output>",
        ),
        (
            "```bash\ncat x.py\n```",
            "<returncode>0</returncode><output>v2 one two three</output>",
        ),
    ] {
        stored.push(assistant(&format!("THOUGHT: read it\n\n{action}")));
        stored.push(user(output));
    }
    // Tags: task 1, then (action, output) pairs 2/3, 4/5, 6/7. The failed cat supersedes
    // nothing; the later successful one supersedes both earlier reads.
    assert_eq!(
        Session::new(stored).lanes(),
        vec![
            (3, ReclaimLane::SupersededRead),
            (5, ReclaimLane::SupersededRead)
        ]
    );
}

#[test]
fn protected_read_stays() {
    let mut s = session(vec![
        (read("1", "a.py"), result("1", &words(100, "old"))),
        (read("2", "a.py"), result("2", &words(100, "new"))),
    ]);
    s.config.protected_count = 2;
    assert_eq!(s.lanes(), vec![]);
}
