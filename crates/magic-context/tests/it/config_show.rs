//! `magic-context config show`: effective values, their sources, per-key fallback.

use crate::support::Machine;

#[test]
fn works_on_a_fresh_machine_with_no_files() {
    let machine = Machine::fresh();
    let run = machine.run(&["config", "show"], &[]).success();
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    let mut lines = run.stdout.lines();
    assert_eq!(
        lines.next(),
        Some("# user file:    [TMP]/xdg/magic-context/magic-context.jsonc (not found)")
    );
    assert_eq!(
        lines.next(),
        Some("# project file: [TMP]/work/.magic-context.jsonc (not found)")
    );
    let settings: Vec<&str> = lines.collect();
    assert!(settings.len() > 30);
    assert!(
        settings.iter().all(|line| line.ends_with("   (default)")),
        "{}",
        run.stdout
    );
    assert!(
        settings
            .iter()
            .any(|line| line.starts_with("pass.execute_threshold_percent = 65 "))
    );
    // Without an endpoint the historian uses the session's own wire: no wire is the default,
    // not one it would not use.
    assert!(
        settings
            .iter()
            .any(|line| line.starts_with("historian.wire = null ")),
        "{}",
        run.stdout
    );

    let json = machine
        .run(&["config", "show", "--json"], &[])
        .success()
        .json();
    assert_eq!(json["diagnostics"], serde_json::json!([]));
    assert_eq!(json["config"]["proxy"]["listen"], "127.0.0.1:4141");
}

fn machine_with_fixtures() -> Machine {
    let machine = Machine::fresh();
    machine.install_fixture("user.jsonc", &machine.user_file());
    machine.install_fixture("project.jsonc", &machine.path("work/.magic-context.jsonc"));
    machine
}

#[test]
fn json_snapshot_with_user_and_project_files() {
    let run = machine_with_fixtures()
        .run(&["config", "show", "--json"], &[])
        .success();
    assert!(
        run.stderr.is_empty(),
        "--json keeps stderr quiet: {}",
        run.stderr
    );
    insta::assert_snapshot!("config_show_json", run.stdout);
}

/// Each bad key falls back on its own; its neighbours in the same file still apply.
#[test]
fn bad_keys_fall_back_one_by_one() {
    let run = machine_with_fixtures()
        .run(&["config", "show"], &[])
        .success();
    let line = |key: &str| -> String {
        let found = run
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("{key} = ")));
        let found = found.unwrap_or_else(|| panic!("{key} missing:\n{}", run.stdout));
        found.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let user = "([TMP]/xdg/magic-context/magic-context.jsonc)";
    let project = "([TMP]/work/.magic-context.jsonc)";
    // project value out of range: the user's value applies
    assert_eq!(
        line("pass.execute_threshold_percent"),
        format!("pass.execute_threshold_percent = 70 {user}")
    );
    // its neighbour in the project file applies
    assert_eq!(
        line("pass.refusal_percent"),
        format!("pass.refusal_percent = 97 {project}")
    );
    // user value of the wrong type: the default applies, its neighbour still applies
    assert_eq!(
        line("reduction.protected_tags"),
        "reduction.protected_tags = 20 (default)"
    );
    assert_eq!(
        line("reduction.drop_skeletons"),
        format!("reduction.drop_skeletons = 10 {user}")
    );
    // unknown key reported; its neighbour applies
    assert_eq!(
        line("historian.fallback_models"),
        "historian.fallback_models = [] (default)"
    );
    assert_eq!(
        line("historian.lookahead_ordinals"),
        format!("historian.lookahead_ordinals = 3 {project}")
    );
    assert_eq!(
        line("pass.execute_threshold_by_model.gpt-5.tokens"),
        format!("pass.execute_threshold_by_model.gpt-5.tokens = 150000 {user}")
    );
    assert_eq!(
        run.stderr,
        "warning: [TMP]/xdg/magic-context/magic-context.jsonc: reduction.protected_tags: invalid type: \
         string \"twenty\", expected a whole number, 0 or more; \
         the key is ignored\n\
         warning: [TMP]/work/.magic-context.jsonc: pass.execute_threshold_percent: must be between 20 \
         and 90 percent, got 95; \
         the key is ignored\n\
         warning: [TMP]/work/.magic-context.jsonc: historian.fallback_model: unknown key \
         `fallback_model` (did you mean `fallback_models`?); the key is ignored\n"
    );
}

#[test]
fn project_defaults_to_the_git_root() {
    let machine = Machine::fresh();
    let nested = machine.path("work/repo/src/deep");
    std::fs::create_dir_all(&nested).unwrap();
    std::fs::create_dir(machine.path("work/repo/.git")).unwrap();
    std::fs::write(
        machine.path("work/repo/.magic-context.jsonc"),
        r#"{"expand": {"cap_tokens": 20000}}"#,
    )
    .unwrap();
    let json = machine
        .run_in(&nested, &["config", "show", "--json"], &[])
        .success()
        .json();
    assert_eq!(json["config"]["expand"]["cap_tokens"], 20000);
    assert_eq!(
        json["sources"]["expand.cap_tokens"],
        "[TMP]/work/repo/.magic-context.jsonc"
    );

    let elsewhere = machine.path("work/repo");
    let json = machine
        .run_in(
            &nested,
            &[
                "config",
                "show",
                "--json",
                "--project",
                elsewhere.to_str().unwrap(),
            ],
            &[],
        )
        .success()
        .json();
    assert_eq!(json["config"]["expand"]["cap_tokens"], 20000);
    let json = machine
        .run(&["config", "show", "--json", "--project", "."], &[])
        .success()
        .json();
    assert_eq!(json["config"]["expand"]["cap_tokens"], 15000);
}

#[test]
fn magic_context_config_names_the_user_file() {
    let machine = Machine::fresh();
    let custom = machine.path("home/custom.jsonc");
    std::fs::write(&custom, r#"{"memory": {"injection_budget_tokens": 0}}"#).unwrap();
    let json = machine
        .run(
            &["config", "show", "--json"],
            &[("MAGIC_CONTEXT_CONFIG", custom.as_os_str())],
        )
        .success()
        .json();
    assert_eq!(json["config"]["memory"]["injection_budget_tokens"], 0);
    assert_eq!(json["files"]["user"], "[TMP]/home/custom.jsonc");

    let missing = machine.path("home/typo.jsonc");
    let run = machine
        .run(
            &["config", "show"],
            &[("MAGIC_CONTEXT_CONFIG", missing.as_os_str())],
        )
        .success();
    assert_eq!(
        run.stderr,
        "warning: [TMP]/home/typo.jsonc: file not found (it is named by MAGIC_CONTEXT_CONFIG); check the path; the file is ignored\n"
    );
}

#[test]
fn a_broken_file_is_reported_with_line_and_column() {
    let machine = Machine::fresh();
    std::fs::write(
        machine.path("work/.magic-context.jsonc"),
        "{\n  \"pass\": {\n    \"refusal_percent\": 97\n    \"x\": 1\n}",
    )
    .unwrap();
    let run = machine.run(&["config", "show"], &[]).success();
    assert_eq!(
        run.stderr,
        "warning: [TMP]/work/.magic-context.jsonc: syntax error at line 3, column 26: Expected comma; \
         the file is ignored\n"
    );
}
