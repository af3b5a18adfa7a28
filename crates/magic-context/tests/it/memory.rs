//! `memory`: the operator curates a project's memories through the built binary, and an
//! export imports into a fresh store exactly.

use std::ffi::OsStr;
use std::path::Path;

use serde_json::{Value, json};

use crate::support::{Machine, Run};

fn env(data: &Path) -> [(&'static str, &OsStr); 1] {
    [("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())]
}

/// Runs `memory ARGS` in `work/` (the project directory) against `data/`.
fn memory(machine: &Machine, data: &str, args: &[&str]) -> Run {
    let data = machine.path(data);
    let mut all = vec!["memory"];
    all.extend_from_slice(args);
    machine.run(&all, &env(&data))
}

/// The listed memories without their times, which the clock decides.
fn listed(run: &Run) -> Vec<Value> {
    let mut memories = run.json()["memories"].as_array().unwrap().clone();
    for memory in &mut memories {
        let object = memory.as_object_mut().unwrap();
        object.remove("created_ms");
        object.remove("updated_ms");
    }
    memories
}

#[test]
fn add_list_edit_and_archive() {
    let machine = Machine::fresh();
    let added = memory(
        &machine,
        "data",
        &["add", "--category", "naming", "Tests end in _test."],
    );
    assert_eq!(added.success().stdout, "added memory 1 (NAMING)\n");
    let merged = memory(
        &machine,
        "data",
        &[
            "add",
            "--category",
            "NAMING",
            "tests end in  _TEST",
            "--json",
        ],
    )
    .success();
    assert_eq!(merged.json()["outcome"], "merged");
    assert_eq!(merged.json()["memory"]["seen_count"], 2);
    memory(
        &machine,
        "data",
        &[
            "add",
            "--category",
            "config-values",
            "--permanent",
            "Port 8080",
        ],
    )
    .success();

    let text = memory(&machine, "data", &["list"]).success().stdout;
    assert_eq!(
        text,
        "   ID  CATEGORY       STATUS     SOURCE     SEEN  CONTENT\n\
         \x20   1  NAMING         active     operator      2  Tests end in _test.\n\
         \x20   2  CONFIG_VALUES  permanent  operator      1  Port 8080\n"
    );

    memory(
        &machine,
        "data",
        &[
            "edit",
            "2",
            "--content",
            "Port 9090",
            "--category",
            "constraints",
        ],
    )
    .success();
    let archived = memory(&machine, "data", &["archive", "1"]).success();
    assert_eq!(
        archived.stdout,
        "archived memory 1 (NAMING, archived): Tests end in _test.\n"
    );

    let live = memory(&machine, "data", &["list", "--json"]).success();
    assert_eq!(
        listed(&live),
        [
            json!({"id": 2, "category": "CONSTRAINTS", "content": "Port 9090",
            "status": "permanent", "source": "operator", "seen_count": 1,
            "superseded_by": null})
        ]
    );
    let all = memory(&machine, "data", &["list", "--status", "all", "--json"]).success();
    assert_eq!(listed(&all).len(), 2);
    assert_eq!(listed(&all)[0]["status"], "archived");
}

#[test]
fn another_projects_memories_are_not_found() {
    let machine = Machine::fresh();
    let other = machine.path("other");
    std::fs::create_dir(&other).unwrap();
    let other = other.to_str().unwrap();
    memory(&machine, "data", &["add", "--category", "NAMING", "Mine"]).success();
    memory(
        &machine,
        "data",
        &["add", "--project", other, "--category", "NAMING", "Theirs"],
    )
    .success();

    let theirs = memory(&machine, "data", &["list", "--project", other, "--json"]).success();
    assert_eq!(listed(&theirs).len(), 1);
    assert_eq!(listed(&theirs)[0]["content"], "Theirs");
    let refused = memory(&machine, "data", &["archive", "1", "--project", other]);
    assert_eq!(refused.code, Some(1));
    assert!(
        refused.stderr.contains("memory 1 not found in project"),
        "{}",
        refused.stderr
    );
    let mine = memory(&machine, "data", &["list", "--json"]).success();
    assert_eq!(listed(&mine)[0]["status"], "active");
}

#[test]
fn an_export_imports_into_a_fresh_store_exactly_and_twice_changes_nothing() {
    let machine = Machine::fresh();
    memory(
        &machine,
        "data",
        &["add", "--category", "NAMING", "Crates are mc-*"],
    )
    .success();
    memory(
        &machine,
        "data",
        &["add", "--category", "NAMING", "crates are MC-*"],
    )
    .success();
    memory(
        &machine,
        "data",
        &[
            "add",
            "--category",
            "ARCHITECTURE",
            "--permanent",
            "The store is SQLite",
        ],
    )
    .success();
    memory(
        &machine,
        "data",
        &["add", "--category", "CONSTRAINTS", "Gone"],
    )
    .success();
    memory(&machine, "data", &["archive", "3"]).success();
    let exported = memory(&machine, "data", &["export"]).success().stdout;
    let lines: Vec<Value> = exported
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["seen_count"], 2);
    assert_eq!(lines[1]["status"], "permanent");

    let file = machine.path("memories.jsonl");
    memory(
        &machine,
        "data",
        &["export", "--out", file.to_str().unwrap()],
    )
    .success();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), exported);

    let first = memory(
        &machine,
        "fresh",
        &["import", file.to_str().unwrap(), "--json"],
    )
    .success();
    assert_eq!(first.json()["added"], 2);
    let again = memory(&machine, "fresh", &["import", file.to_str().unwrap()]).success();
    assert_eq!(again.stdout, "imported 0 new memories, 2 already present\n");
    let round_trip = memory(&machine, "fresh", &["export"]).success().stdout;
    assert_eq!(round_trip, exported);
}

#[test]
fn bad_input_is_refused_with_what_to_do() {
    let machine = Machine::fresh();
    let category = memory(&machine, "data", &["add", "--category", "rules", "x"]);
    assert_eq!(category.code, Some(1));
    assert_eq!(
        category.stderr,
        "error: unknown category `rules`; use one of PROJECT_RULES, ARCHITECTURE, CONSTRAINTS, \
         CONFIG_VALUES, NAMING\n"
    );
    let unknown = memory(&machine, "data", &["edit", "7", "--content", "y"]);
    assert_eq!(unknown.code, Some(1));
    assert!(
        unknown.stderr.contains("memory 7 not found in project"),
        "{}",
        unknown.stderr
    );
    // The project is named by its folder, as the user knows it.
    assert!(
        unknown
            .stderr
            .starts_with("error: cannot edit memory 7 of the project at [TMP]/work: "),
        "{}",
        unknown.stderr
    );
    let missing = memory(&machine, "data", &["list", "--project", "/no/such/dir"]);
    assert_eq!(missing.code, Some(1));
    assert!(
        missing
            .stderr
            .contains("cannot identify the project of /no/such/dir"),
        "{}",
        missing.stderr
    );

    // A bad line refuses the whole import and names the line.
    let file = machine.path("bad.jsonl");
    std::fs::write(
        &file,
        "{\"category\":\"NAMING\",\"content\":\"Fine\"}\n\n{\"category\":\"NAMING\",\"text\":\"x\"}\n",
    )
    .unwrap();
    let bad = memory(&machine, "data", &["import", file.to_str().unwrap()]);
    assert_eq!(bad.code, Some(1));
    assert_eq!(
        bad.stderr,
        "error: line 3 of [TMP]/bad.jsonl is not a memory: unknown key `text`; a memory has \
         category, content, status, source, seen_count, created_ms, updated_ms\n"
    );
    let after = memory(&machine, "data", &["list", "--status", "all", "--json"]).success();
    assert_eq!(listed(&after), Vec::<Value>::new());
}

#[test]
fn import_reads_stdin_without_a_file() {
    use std::io::Write;
    use std::process::{Command, Stdio};

    use crate::support::deadline::{Bounded, QUICK};

    let machine = Machine::fresh();
    let mut command = Command::new(env!("CARGO_BIN_EXE_magic-context"));
    command
        .args(["memory", "import", "--json"])
        .current_dir(machine.path("work"))
        .env_clear()
        .env("HOME", machine.path("home"))
        .env("XDG_CONFIG_HOME", machine.path("xdg"))
        .env("MAGIC_CONTEXT_DATA_DIR", machine.path("data"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = Bounded::spawn(&mut command, "magic-context memory import", QUICK);
    child
        .child()
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"category\":\"project-rules\",\"content\":\"Run cargo fmt\"}\n")
        .unwrap();
    let output = child.wait_with_output();
    assert!(output.status.success());
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        (answer["added"].clone(), answer["merged"].clone()),
        (json!(1), json!(0))
    );
    let listed = listed(&memory(&machine, "data", &["list", "--json"]).success());
    assert_eq!(
        listed,
        [
            json!({"id": 1, "category": "PROJECT_RULES", "content": "Run cargo fmt",
            "status": "active", "source": "operator", "seen_count": 1, "superseded_by": null})
        ]
    );
}

/// `list` filters by the statuses its rows show: `--help` says what `live`, the default, is
/// made of, and an empty list names what it looked for and the project's folder.
#[test]
fn list_statuses_are_the_ones_rows_show() {
    let machine = Machine::fresh();
    let help = memory(&machine, "data", &["list", "--help"]).success();
    for line in [
        "live:      Active and permanent: the memories the sessions' heads show",
        "active:    Active only",
        "permanent: Permanent only",
        "archived:  Archived only",
        "all:       Every memory",
    ] {
        assert!(help.stdout.contains(line), "{line}\n{}", help.stdout);
    }
    let empty = memory(&machine, "data", &["list"]).success();
    assert_eq!(
        empty.stdout,
        "no live memories (active or permanent) for the project at [TMP]/work; add one with \
         `magic-context memory add --category C \"text\"`\n"
    );
    let archived = memory(&machine, "data", &["list", "--status", "archived"]).success();
    assert!(
        archived
            .stdout
            .starts_with("no archived memories for the project at [TMP]/work;"),
        "{}",
        archived.stdout
    );
    let wrong = memory(&machine, "data", &["list", "--status", "gone"]);
    assert_eq!(wrong.code, Some(2));
    assert!(
        wrong
            .stderr
            .contains("possible values: live, active, permanent, archived, all"),
        "{}",
        wrong.stderr
    );
}
