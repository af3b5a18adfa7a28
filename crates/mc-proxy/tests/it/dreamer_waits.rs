//! The dreamer inside the proxy holds a project's run back while a call of that project is
//! in flight on the credential the run would borrow, and runs it as soon as the call ends.
//!
//! `verify_memories` is due every minute and the scheduler first wakes a minute after the
//! proxy starts. The upstream holds the project's only call open past that wake: no run is
//! made while it streams, and the run follows the end of the call within seconds, not at
//! the scheduler's next minute.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use mc_core::config::{DreamerSchedules, TaskSchedule};
use mc_store::{DreamerRun, RunOutcome};
use serde_json::json;
use tokio::sync::Notify;

use crate::hostile_bounds::body;
use crate::support::*;

/// Past the scheduler's first wake (a minute after start), with room for a slow machine.
const HOLD: Duration = Duration::from_secs(70);

/// How soon after the call's end the deferred run must be recorded: well inside the
/// minute the scheduler would otherwise sleep.
const FOLLOWS_WITHIN: Duration = Duration::from_secs(15);

/// Where the held answer is.
enum Part {
    Head(String),
    Held,
    Ended,
}

/// Within the proxy's idle timeout for the upstream (20 s in the tests' settings).
pub(crate) const PING_EVERY: Duration = Duration::from_secs(5);

/// The closing events of the answer [`anthropic_stream_head`] starts.
pub(crate) fn stream_tail() -> String {
    [
        sse_event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": 0}),
        ),
        sse_event(
            "message_delta",
            &json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 3}}),
        ),
        sse_event("message_stop", &json!({"type": "message_stop"})),
    ]
    .concat()
}

/// The first call streams its head, then a ping every few seconds (inside the proxy's
/// idle timeout) until `release`, then its tail; any later call is answered at once.
async fn holding_upstream(release: Arc<Notify>) -> Upstream {
    Upstream::start(move |_, index| {
        let release = Arc::clone(&release);
        async move {
            if index > 0 {
                return json_response(200, &anthropic_message("ok"));
            }
            let head = anthropic_stream_head("working").concat();
            let parts = futures_util::stream::unfold(Part::Head(head), move |part| {
                let release = Arc::clone(&release);
                async move {
                    let (bytes, next) = match part {
                        Part::Head(head) => (head, Part::Held),
                        Part::Held => tokio::select! {
                            () = release.notified() => (stream_tail(), Part::Ended),
                            () = tokio::time::sleep(PING_EVERY) => {
                                (sse_event("ping", &json!({"type": "ping"})), Part::Held)
                            }
                        },
                        Part::Ended => return None,
                    };
                    Some((Ok::<_, Infallible>(Bytes::from(bytes)), next))
                }
            });
            sse_response(Body::from_stream(parts))
        }
    })
    .await
}

pub(crate) fn unix_ms() -> i64 {
    let elapsed = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    i64::try_from(elapsed.as_millis()).unwrap()
}

/// The test configuration with only `verify_memories` on, due every minute.
pub(crate) fn verify_every_minute() -> mc_core::config::Config {
    let mut config = quiet_config();
    let off = TaskSchedule::Off;
    config.dreamer.schedules = DreamerSchedules {
        verify_memories: TaskSchedule::Cron("* * * * *".into()),
        consolidate_memories: off.clone(),
        archive_stale_memories: off.clone(),
        rewrite_verbose_memories: off.clone(),
        maintain_docs: off.clone(),
        evaluate_smart_notes: off.clone(),
        promote_user_profile: off.clone(),
        pin_key_files: off,
    };
    config
}

/// Sends a streaming Claude Code call working in `folder`, asking `text`; the response as
/// soon as its head arrives.
pub(crate) async fn stream_in(
    proxy: &Proxy,
    folder: &std::path::Path,
    text: &str,
) -> reqwest::Response {
    let folder = folder.canonicalize().unwrap();
    let system = format!(
        "You are Claude Code.\nPrimary working directory: {}\n",
        folder.display()
    );
    let mut request = body(&system, text);
    request["stream"] = json!(true);
    client()
        .post(proxy.url("/v1/messages"))
        .header("content-type", "application/json")
        .header("x-api-key", "sk-ant-test-dreamer")
        .body(request.to_string())
        .send()
        .await
        .unwrap()
}

pub(crate) fn verify_runs(proxy: &Proxy) -> Vec<DreamerRun> {
    proxy
        .store()
        .read(|tx| tx.dreamer_runs(None, 10))
        .unwrap()
        .into_iter()
        .filter(|run| run.task == "verify_memories")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_due_run_waits_for_the_projects_call_and_follows_its_end() {
    let release = Arc::new(Notify::new());
    let upstream = holding_upstream(Arc::clone(&release)).await;
    let config = verify_every_minute();
    let started = Instant::now();
    let proxy = Proxy::start_with_config(settings(&upstream.url()), config).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    let response = stream_in(&proxy, dir.path(), "Fix the parser.").await;
    assert_eq!(response.status().as_u16(), 200);

    tokio::time::sleep(HOLD.saturating_sub(started.elapsed())).await;
    assert_eq!(
        verify_runs(&proxy),
        [],
        "no run while the project's call is in flight"
    );
    release.notify_one();
    let answer = response.bytes().await.unwrap();
    let ended_ms = unix_ms();
    assert!(String::from_utf8_lossy(&answer).contains("message_stop"));

    let waiting = Instant::now();
    let runs = loop {
        let runs = verify_runs(&proxy);
        if !runs.is_empty() || waiting.elapsed() > FOLLOWS_WITHIN {
            break runs;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let project = proxy.sessions()[0].project.clone().expect("a project");
    assert_eq!(runs.len(), 1, "the deferred run, once: {runs:?}");
    assert_eq!(
        (&runs[0].project, runs[0].outcome),
        (&project, RunOutcome::Done)
    );
    assert!(
        runs[0].started_ms >= ended_ms - 1_000,
        "after the call: {runs:?}"
    );
}
