//! The dashboard in a real browser: headless Chromium, driven by Playwright
//! (`dashboard_browser.mjs`), logs in by the URL `dashboard` prints, edits a memory through
//! the page's form (the page's script posts it with the token header, then reloads) and
//! watches the sessions page reload itself when a new session calls the model.
//!
//! Needs Chromium (Debian's `chromium`, or `MC_CHROMIUM` naming a binary) and Node.js with
//! npm (`playwright-core` is installed once into the target directory from the registry).
//! `.ci/run` installs Chromium. Without it the test fails and says what to install, unless
//! `MC_SKIP_BROWSER=1` says this machine runs no browser tests: a browser test that skipped
//! silently would prove nothing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::dashboard::{PROJECT, change, seeded, token};
use crate::support::{anthropic_request, user};

/// The pinned Playwright driver.
const PLAYWRIGHT: &str = "playwright-core@1.64.1";

/// Where Debian installs Chromium.
const DEBIAN_CHROMIUM: &str = "/usr/bin/chromium";

/// The whole browser run, installs excluded: a hung browser fails the test instead of
/// holding the suite.
const RUN_LIMIT: Duration = Duration::from_secs(90);

/// The Chromium binary, or `None` when this machine is told to run no browser tests.
fn chromium() -> Option<PathBuf> {
    if std::env::var_os("MC_SKIP_BROWSER").is_some_and(|value| value == "1") {
        return None;
    }
    let path =
        std::env::var_os("MC_CHROMIUM").map_or_else(|| DEBIAN_CHROMIUM.into(), PathBuf::from);
    assert!(
        path.is_file(),
        "no Chromium at {}: install Debian's `chromium` package, set MC_CHROMIUM to a Chromium \
         binary, or set MC_SKIP_BROWSER=1 on a machine without a browser",
        path.display()
    );
    Some(path)
}

/// `node_modules` holding the pinned Playwright, installed there first when missing.
fn playwright() -> PathBuf {
    let prefix = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(PLAYWRIGHT.replace('@', "-"));
    let modules = prefix.join("node_modules");
    if !modules.join("playwright-core/package.json").is_file() {
        std::fs::create_dir_all(&prefix).unwrap();
        let status = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&prefix)
            .arg(PLAYWRIGHT)
            .status()
            .unwrap_or_else(|error| {
                panic!("npm could not start ({error}): install Node.js and npm")
            });
        assert!(status.success(), "npm install {PLAYWRIGHT} failed");
    }
    modules
}

/// Runs the driver script with `args` (Node finds Playwright in `modules`), bounded by
/// [`RUN_LIMIT`]; what it printed, parsed.
fn drive(modules: &Path, args: &[String]) -> Value {
    let script_dir = tempfile::tempdir().unwrap();
    let script = script_dir.path().join("dashboard_browser.mjs");
    std::fs::write(&script, include_str!("dashboard_browser.mjs")).unwrap();
    // An ES module resolves packages from its own folder upwards, not from NODE_PATH.
    std::os::unix::fs::symlink(modules, script_dir.path().join("node_modules")).unwrap();
    let mut child = Command::new("node")
        .arg(&script)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("node could not start ({error}): install Node.js"));
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > RUN_LIMIT {
            child.kill().unwrap();
            panic!("the browser run took over {RUN_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the browser run failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|error| panic!("{error}: {stdout}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn an_operator_edits_a_memory_and_watches_a_session_arrive_in_chromium() {
    let Some(chromium) = chromium() else {
        return;
    };
    let modules = tokio::task::spawn_blocking(playwright).await.unwrap();
    let (_upstream, proxy) = seeded().await;
    let added = change(
        &proxy,
        "/_magic-context/api/memories",
        &json!({"project": PROJECT, "category": "PROJECT_RULES",
                "content": "Run the tests before committing"}),
    )
    .await;
    assert_eq!(added.status, StatusCode::OK, "{}", added.text());
    let id = added.json()["id"].as_u64().unwrap();
    let edited = "Run the tests before committing, <b>always</b> & with --locked";
    let new_session = "browser-watched-session";
    let args = [
        chromium.display().to_string(),
        proxy.url(""),
        token(&proxy),
        PROJECT.to_owned(),
        id.to_string(),
        edited.to_owned(),
        new_session.to_owned(),
        anthropic_request(&[user("a new task")]).to_string(),
    ];
    let seen = tokio::task::spawn_blocking(move || drive(&modules, &args))
        .await
        .unwrap();

    assert_eq!(seen["errors"], json!([]), "the page's script threw: {seen}");
    assert_eq!(seen["landed"], "Sessions", "{seen}");
    assert_eq!(
        seen["shown"], edited,
        "the reloaded page shows the stored edit"
    );
    assert_eq!(seen["before"], false, "{seen}");
    assert_eq!(
        seen["after"], true,
        "the sessions page reloaded itself: {seen}"
    );
    let stored = crate::support::send(
        axum::http::Method::GET,
        &proxy.url(&format!("/_magic-context/api/memories?project={PROJECT}")),
        &[(mc_proxy::TOKEN_HEADER, token(&proxy).as_str())],
        "",
    )
    .await;
    let memories = stored.json()["memories"].clone();
    let memory = memories
        .as_array()
        .unwrap()
        .iter()
        .find(|memory| memory["id"] == id)
        .unwrap_or_else(|| panic!("{memories}"));
    assert_eq!(
        memory["content"], edited,
        "the store holds the browser's edit"
    );
}
