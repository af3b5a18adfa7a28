//! Workspaces through the built binary: a member's `search` finds what another member shares
//! (marked with its root), nothing of the categories it keeps, and `doctor` names a root that
//! is no project.

use std::ffi::OsStr;

use serde_json::{Value, json};

use crate::support::Machine;

#[test]
fn a_member_searches_what_the_other_shares_and_doctor_names_a_missing_root() {
    let machine = Machine::fresh();
    let other = machine.path("other");
    std::fs::create_dir(&other).unwrap();
    let user = machine.user_file();
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    let config = json!({"workspaces": {"shop": {
        "projects": [machine.path("work"), other, "~/missing"],
        "categories": ["ARCHITECTURE"],
    }}});
    std::fs::write(&user, config.to_string()).unwrap();
    let data = machine.path("data");
    let env: [(&str, &OsStr); 1] = [("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())];
    let add = |project: &str, category: &str, content: &str| {
        let project = machine.path(project);
        let args = [
            "memory",
            "add",
            "--project",
            project.to_str().unwrap(),
            "--category",
            category,
            content,
        ];
        machine.run(&args, &env).success();
    };
    add(
        "work",
        "ARCHITECTURE",
        "Checkout retries the payment call twice",
    );
    add(
        "other",
        "ARCHITECTURE",
        "The checkout page polls the payment status",
    );
    add(
        "other",
        "CONFIG_VALUES",
        "The checkout payment timeout is 30 seconds",
    );

    let found = machine
        .run(&["search", "checkout payment", "--json"], &env)
        .success();
    let places: Vec<Value> = found.json()["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["place"].clone())
        .collect();
    assert_eq!(places.len(), 2, "{}", found.stdout);
    assert!(places.contains(&json!({"kind": "memory", "id": 1, "category": "ARCHITECTURE"})));
    assert!(places.contains(&json!({
        "kind": "memory", "id": 2, "category": "ARCHITECTURE", "shared_by": "[TMP]/other"
    })));

    let text = machine.run(&["search", "polls"], &env).success();
    assert!(
        text.stdout
            .contains("memory 2 (ARCHITECTURE, shared by [TMP]/other, read-only)"),
        "{}",
        text.stdout
    );

    let doctor = machine.run(&["doctor", "--json"], &env).success();
    let problems = doctor.json()["config"]["problems"].clone();
    assert_eq!(
        problems,
        json!([
            "workspace `shop`: `~/missing` is not a folder this machine can identify as a \
             project; it shares nothing until it exists (restart the proxy after creating it)"
        ])
    );
}
