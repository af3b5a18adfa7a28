//! The top-level command line: version, help, and no placeholder subcommands.

use std::ffi::OsStr;

use crate::support::Machine;

#[test]
fn version_prints_the_package_version() {
    let run = Machine::fresh().run(&["--version"], &[]).success();
    assert_eq!(
        run.stdout,
        format!("magic-context {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn help_lists_only_working_subcommands() {
    let run = Machine::fresh().run(&["--help"], &[]).success();
    let commands: Vec<&str> = run
        .stdout
        .lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| !line.is_empty())
        // A description wrapped to the terminal's width continues on deeper-indented lines.
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert_eq!(
        commands,
        [
            "backup",
            "bench",
            "config",
            "dashboard",
            "doctor",
            "dream",
            "flush",
            "mcp",
            "memory",
            "profile",
            "prune",
            "recomp",
            "reduce",
            "replay",
            "restore",
            "run",
            "search",
            "serve",
            "setup",
            "sim",
            "status",
            "wrapup",
            "help"
        ]
    );
    assert!(run.stdout.contains("--log-level <LEVEL>"), "{}", run.stdout);
}

#[test]
fn no_subcommand_prints_usage_and_fails() {
    let run = Machine::fresh().run(&[], &[]);
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr.contains("Usage: magic-context"),
        "{}",
        run.stderr
    );
}

#[test]
fn unknown_log_level_is_rejected() {
    let run = Machine::fresh().run(&["--log-level", "loud", "config", "show"], &[]);
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr
            .contains("possible values: off, error, warn, info, debug, trace"),
        "{}",
        run.stderr
    );
}

/// `--log-level` wins over `RUST_LOG`, which wins over the `warn` default; logs go to stderr
/// and never into the command's stdout.
#[test]
fn log_level_flag_overrides_rust_log() {
    let machine = Machine::fresh();
    let debug = [("RUST_LOG", OsStr::new("debug"))];
    let logged = |run: &crate::support::Run| run.stderr.contains("config files");

    let quiet = machine.run(&["config", "show", "--json"], &[]).success();
    assert!(!logged(&quiet), "{}", quiet.stderr);
    let from_env = machine.run(&["config", "show", "--json"], &debug).success();
    assert!(logged(&from_env), "{}", from_env.stderr);
    assert!(from_env.stdout.starts_with('{'), "stdout stays JSON");
    let overridden = machine
        .run(&["--log-level", "warn", "config", "show", "--json"], &debug)
        .success();
    assert!(!logged(&overridden), "{}", overridden.stderr);
    let flag = machine
        .run(&["config", "show", "--json", "--log-level", "debug"], &[])
        .success();
    assert!(logged(&flag), "{}", flag.stderr);
}
