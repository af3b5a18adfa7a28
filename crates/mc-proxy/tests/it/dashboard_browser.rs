//! The dashboard in a real browser: headless Chromium, driven by Playwright
//! (`dashboard_browser.mjs`), logs in by the URL `dashboard` prints, reads a session's
//! timeline (a bar per call, a marker per bust, as the API counts them), edits a memory
//! through the page's form (the page's script posts it with the token header, then reloads;
//! the store holds it and the session's next request carries it), has a bad configuration
//! refused and a good one, comments and all, written, and watches the sessions page reload
//! itself when a new session calls the model; no console errors, and a screenshot of every
//! page kept under the target directory's `tmp/dashboard-screenshots`.
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

use crate::dashboard::{PROJECT, SESSION, api, call, call_with, change, seed, token, upstream};
use crate::support::{Proxy, anthropic_request, assistant, user};

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

/// Runs the driver script with `run` (Node finds Playwright in `modules`), bounded by
/// [`RUN_LIMIT`]; what it printed, parsed.
fn drive(modules: &Path, run: &Value) -> Value {
    let script_dir = tempfile::tempdir().unwrap();
    let script = script_dir.path().join("dashboard_browser.mjs");
    std::fs::write(&script, include_str!("dashboard_browser.mjs")).unwrap();
    // An ES module resolves packages from its own folder upwards, not from NODE_PATH.
    std::os::unix::fs::symlink(modules, script_dir.path().join("node_modules")).unwrap();
    let mut child = Command::new("node")
        .arg(&script)
        .arg(run.to_string())
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
async fn an_operator_uses_every_page_in_chromium() {
    let Some(chromium) = chromium() else {
        return;
    };
    let modules = tokio::task::spawn_blocking(playwright).await.unwrap();
    let upstream = upstream().await;
    let config_dir = tempfile::tempdir().unwrap();
    let config_file = config_dir.path().join("magic-context.jsonc");
    let mut settings = crate::support::settings(&upstream.url());
    settings.user_config = Some(config_file.clone());
    let proxy = Proxy::start_with(settings).await;
    let mut messages = seed(&proxy).await;
    let added = change(
        &proxy,
        "/_magic-context/api/memories",
        &json!({"project": PROJECT, "category": "PROJECT_RULES",
                "content": "Run the tests before committing"}),
    )
    .await;
    assert_eq!(added.status, StatusCode::OK, "{}", added.text());
    let id = added.json()["id"].as_u64().unwrap();
    let timeline =
        api(&proxy, &format!("/_magic-context/api/sessions/{SESSION}")).await["timeline"]
            .as_array()
            .unwrap()
            .clone();
    let busts = timeline
        .iter()
        .filter(|call| matches!(call["pass_kind"].as_str(), Some("soft_bust" | "hard_fold")))
        .count();

    let edited = "Run the tests before committing, <b>always</b> & with --locked";
    let config_good = "// smaller windows here\n{\"pass\": {\"execute_threshold_percent\": 60}}\n";
    let screenshots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard-screenshots");
    std::fs::create_dir_all(&screenshots).unwrap();
    let run = json!({
        "chromium": chromium,
        "base": proxy.url(""),
        "token": token(&proxy),
        "project": PROJECT,
        "session": SESSION,
        "memoryId": id,
        "edited": edited,
        "configBad": "{\"pass\": {\"execute_threshold_percent\": 900}}",
        "configGood": config_good,
        "searchFor": "parser",
        "newSession": "browser-watched-session",
        "callBody": anthropic_request(&[user("a new task")]).to_string(),
        "screenshots": screenshots,
    });
    let seen = tokio::task::spawn_blocking(move || drive(&modules, &run))
        .await
        .unwrap();

    assert_eq!(seen["errors"], json!([]), "console errors: {seen}");
    assert_eq!(seen["landed"], "Sessions", "{seen}");
    assert_eq!(seen["bars"], timeline.len(), "one bar per call: {seen}");
    assert!(
        busts > 0,
        "the session's first call renders its head: {timeline:?}"
    );
    assert_eq!(seen["busts"], busts, "one marker per bust: {seen}");
    assert_eq!(
        seen["shown"], edited,
        "the reloaded page shows the stored edit"
    );
    let refusal = seen["refusal"].as_str().unwrap();
    assert!(
        refusal.starts_with("not saved") && refusal.contains("execute_threshold_percent"),
        "{refusal}"
    );
    assert_eq!(seen["configShown"], config_good, "{seen}");
    assert_eq!(std::fs::read_to_string(&config_file).unwrap(), config_good);
    assert!(seen["searchHits"].as_u64().unwrap() > 0, "{seen}");
    assert_eq!(seen["before"], false, "{seen}");
    assert_eq!(
        seen["after"], true,
        "the sessions page reloaded itself: {seen}"
    );
    for page in [
        "sessions", "session", "memories", "config", "search", "runs",
    ] {
        let shot = screenshots.join(format!("{page}.png"));
        assert!(
            std::fs::metadata(&shot).is_ok_and(|file| file.len() > 0),
            "{}",
            shot.display()
        );
    }

    let memories = api(
        &proxy,
        &format!("/_magic-context/api/memories?project={PROJECT}"),
    )
    .await;
    let memory = memories["memories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|memory| memory["id"] == id)
        .unwrap_or_else(|| panic!("{memories}"))
        .clone();
    assert_eq!(
        memory["content"], edited,
        "the store holds the browser's edit"
    );
    // As the design says: the edit alone does not bust the cache (the next request keeps
    // its head), and the next pass whose prefix is rewritten anyway (here the system prompt
    // changed) shows it in `m[0]`.
    let escaped = serde_json::to_string(edited).unwrap();
    let escaped = escaped.trim_matches('"');
    messages.push(assistant("done"));
    messages.push(user("go on"));
    let reply = call(&proxy, &messages).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let kept = upstream.seen().last().unwrap().body.clone();
    assert!(
        !String::from_utf8_lossy(&kept).contains(escaped),
        "a memory edit alone rewrote the cached head"
    );
    messages.push(assistant("done"));
    messages.push(user("and now with new instructions"));
    let mut body = anthropic_request(&messages);
    body["system"] = json!("You are a careful coding agent. Prefer small commits.");
    let reply = call_with(&proxy, &body).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let folded = upstream.seen().last().unwrap().body.clone();
    let folded = String::from_utf8_lossy(&folded);
    assert!(
        folded.contains(escaped),
        "the fold's head states the edited memory: {folded}"
    );
}
