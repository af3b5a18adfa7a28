//! `profile` lists, edits and removes the lines of the user's profile in the store the
//! proxy uses.

use std::ffi::OsStr;
use std::path::Path;

use mc_store::Store;

use crate::support::Machine;

fn env(data: &Path) -> [(&'static str, &OsStr); 1] {
    [("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())]
}

#[test]
fn profile_lines_are_listed_edited_and_removed() {
    let machine = Machine::fresh();
    let data = machine.path("data");
    let store = Store::open(data.join("context.db")).unwrap();
    store
        .write(|tx| {
            for at in 0..3 {
                tx.store_observations("project:p", &["Prefers short answers.".to_owned()], at)?;
            }
            tx.promote_observations(3, 10)
        })
        .unwrap();
    drop(store);
    let listed = machine
        .run(&["profile", "list", "--json"], &env(&data))
        .success()
        .json();
    assert_eq!(listed["lines"][0]["text"], "Prefers short answers.");
    let id = listed["lines"][0]["id"].as_u64().unwrap().to_string();
    let edited = machine
        .run(
            &["profile", "edit", &id, "Prefers short, direct answers."],
            &env(&data),
        )
        .success();
    assert!(edited.stdout.contains("edited"), "{}", edited.stdout);
    machine
        .run(&["profile", "remove", &id], &env(&data))
        .success();
    let text = machine.run(&["profile", "list"], &env(&data)).success();
    assert!(
        text.stdout.contains("the profile is empty"),
        "{}",
        text.stdout
    );
    let all = machine
        .run(&["profile", "list", "--all"], &env(&data))
        .success();
    assert!(
        all.stdout
            .contains("Prefers short, direct answers. (removed)"),
        "{}",
        all.stdout
    );
    let missing = machine.run(&["profile", "remove", "99"], &env(&data));
    assert_ne!(missing.code, Some(0));
    assert!(
        missing.stderr.contains("no profile line 99"),
        "{}",
        missing.stderr
    );
}
