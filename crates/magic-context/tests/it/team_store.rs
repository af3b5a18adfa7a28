//! The team store through the built binary: `config show`, `status` and `doctor` report it
//! with its password redacted; a server that answers is reported reachable (its schema
//! brought up) with who holds the team's dreamer leases, one that does not is a warning that
//! leaves `doctor` healthy, since requests keep flowing from the local cache. The reachable
//! half needs `MC_TEST_PG_URL`.

use std::ffi::OsStr;
use std::net::TcpListener;

use serde_json::json;

use crate::support::Machine;

const PASSWORD: &str = "hunter2-team";

/// A machine whose user file sets `team_store.url`, and its data directory.
fn machine_with(url: &str) -> (Machine, std::path::PathBuf) {
    let machine = Machine::fresh();
    let user = machine.user_file();
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, json!({"team_store": {"url": url}}).to_string()).unwrap();
    let data = machine.path("data");
    (machine, data)
}

#[test]
fn an_unreachable_team_store_is_a_warning_and_its_password_never_shows() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://team:{PASSWORD}@127.0.0.1:{port}/mc");
    let (machine, data) = machine_with(&url);
    let env: [(&str, &OsStr); 1] = [("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())];

    let shown = machine.run(&["config", "show", "--json"], &env).success();
    assert_eq!(
        shown.json()["config"]["team_store"]["url"],
        format!("postgres://team:<redacted>@127.0.0.1:{port}/mc")
    );
    let doctor = machine.run(&["doctor"], &env).success();
    assert!(
        doctor
            .stdout
            .contains("team    WARN  team store: postgres://team:<redacted>@"),
        "{}",
        doctor.stdout
    );
    assert!(doctor.stdout.contains("UNREACHABLE"), "{}", doctor.stdout);
    assert!(
        doctor.stdout.contains("served from the local cache"),
        "{}",
        doctor.stdout
    );
    let report = machine.run(&["doctor", "--json"], &env).success().json();
    assert_eq!(
        report["ok"], true,
        "an unreachable team store leaves the proxy healthy"
    );
    assert_eq!(report["team_store"]["reachable"], false);
    let status = machine.run(&["status"], &env).success();
    assert!(status.stdout.contains("UNREACHABLE"), "{}", status.stdout);
    for run in [&shown, &doctor, &status] {
        assert!(!run.stdout.contains(PASSWORD) && !run.stderr.contains(PASSWORD));
    }
}

#[test]
fn a_reachable_team_store_is_reported_with_its_schema_and_queue() {
    let Ok(server) = std::env::var("MC_TEST_PG_URL") else {
        eprintln!(
            "skipped: MC_TEST_PG_URL is not set (eval \"$(.ci/postgres-scratch start)\" sets it)"
        );
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let scratch = runtime
        .block_on(mc_team_store::create_scratch_database(&server))
        .unwrap_or_else(|error| panic!("MC_TEST_PG_URL is set but unusable: {error}"));
    // The same server and database, with a password the server ignores (trust) but that
    // must never be printed.
    let (_, rest) = scratch.split_once('@').unwrap();
    let url = format!("postgres://mc:{PASSWORD}@{rest}");
    let (machine, data) = machine_with(&url);
    let env: [(&str, &OsStr); 1] = [("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())];

    let report = machine.run(&["doctor", "--json"], &env).success();
    let team = &report.json()["team_store"];
    assert_eq!(team["reachable"], true, "{team}");
    assert_eq!(team["schema_version"], team["supported_schema_version"]);
    assert_eq!(team["queued_writes"], 0);
    assert_eq!(team["queued_memory_uses"], 0);
    assert_eq!(team["queued_note_changes"], 0);
    let status = machine.run(&["status", "--json"], &env).success();
    assert_eq!(status.json()["team_store"]["reachable"], true);
    let text = machine.run(&["status"], &env).success();
    assert!(
        text.stdout.contains(
            "reachable (schema v5); cache never synced; no writes queued\n  dreamer leases: \
             none held (no dreamer is changing the team's memories)\n"
        ),
        "{}",
        text.stdout
    );

    // A dreamer on another machine holds a project's memories: both commands name it.
    let team = mc_team_store::TeamStore::new(mc_team_store::TeamStoreUrl::parse(&scratch).unwrap())
        .unwrap();
    assert!(
        runtime
            .block_on(team.take_dreamer_lease(
                "memories:git:feedface",
                "serve-7-0a1b2c3d4e5f",
                600_000
            ))
            .unwrap()
    );
    let leases =
        machine.run(&["status", "--json"], &env).success().json()["team_store"]["dreamer_leases"]
            .clone();
    assert_eq!(leases.as_array().map(Vec::len), Some(1), "{leases}");
    assert_eq!(leases[0]["project"], "git:feedface");
    assert_eq!(leases[0]["holder"], "serve-7-0a1b2c3d4e5f");
    let left = leases[0]["expires_in_ms"].as_i64().unwrap();
    assert!((590_000..=600_000).contains(&left), "{leases}");
    let held = "  dreamer lease on the memories of git:feedface: held by serve-7-0a1b2c3d4e5f \
                (expires in 9m unless renewed)\n";
    let doctor = machine.run(&["doctor"], &env).success();
    assert!(doctor.stdout.contains(held), "{}", doctor.stdout);
    let text = machine.run(&["status"], &env).success();
    assert!(text.stdout.contains(held), "{}", text.stdout);
    for run in [&report, &status, &text, &doctor] {
        assert!(!run.stdout.contains(PASSWORD) && !run.stderr.contains(PASSWORD));
    }
}
