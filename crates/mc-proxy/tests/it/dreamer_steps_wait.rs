//! Once a dreamer run has started, each of its model calls still waits while a call of its
//! project is in flight on the same credential: a session call that starts during the run
//! delays the run's next call until it ends, and the upstream never sees a dreamer call
//! arrive while a session call is open.
//!
//! `verify_memories` is due every minute; the project holds a memory whose value changed
//! (one judging call) and one whose file is gone (an agent-loop step after it). The
//! upstream holds the run's first call until the user's second call has arrived, so the
//! run's second call would compete with it if it did not wait.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::Response;
use mc_core::head::MemoryCategory;
use mc_store::{MemorySource, NewMemory, RunOutcome};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::dreamer_waits::{
    PING_EVERY, stream_in, stream_tail, unix_ms, verify_every_minute, verify_runs,
};
use crate::support::*;

/// How long the user's second call streams once the run's first call has been answered.
const SESSION_CALL: Duration = Duration::from_secs(3);

/// Past the scheduler's first wake (a minute after start), with room for a slow machine.
const RUN_STARTS_WITHIN: Duration = Duration::from_secs(120);

/// What the upstream saw, and the cues between it and the test.
#[derive(Default)]
struct Stage {
    session_calls: AtomicUsize,
    /// Session calls whose answer has not ended yet.
    open_sessions: AtomicUsize,
    /// When each dreamer call arrived.
    dreamer_arrivals: Mutex<Vec<Instant>>,
    /// Dreamer calls (their forced tool) that arrived while a session call was open.
    overlaps: Mutex<Vec<String>>,
    /// When the last session answer ended.
    session_ended: Mutex<Option<Instant>>,
    dreamer_started: Notify,
    session_arrived: Notify,
    release: Notify,
}

/// A forced tool call answering `body`: `finish` for an agent-loop step, no verdicts for a
/// judging call.
fn dreamer_answer(body: &Value) -> Response<Body> {
    let tool = body["tool_choice"]["name"].as_str().unwrap_or_default();
    let input = if tool == mc_core::dreamer::STEP_TOOL {
        json!({"calls": [{"tool": "finish"}]})
    } else {
        json!({"verdicts": []})
    };
    json_response(
        200,
        &json!({
            "id": "msg_dreamer", "type": "message", "role": "assistant",
            "model": "claude-haiku-4-5",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": tool, "input": input}],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 120, "output_tokens": 12}
        }),
    )
}

/// Where a session answer is.
enum Part {
    Head(String),
    Open,
    Ended,
}

/// The answer's closing events, noted as the end of a session call.
fn session_tail(stage: &Stage) -> String {
    *stage.session_ended.lock().unwrap() = Some(Instant::now());
    stage.open_sessions.fetch_sub(1, Ordering::SeqCst);
    stream_tail()
}

/// A session call's streamed answer; a `held` one pings until the test releases it.
fn session_answer(stage: Arc<Stage>, held: bool) -> Response<Body> {
    let head = anthropic_stream_head("working").concat();
    let parts = futures_util::stream::unfold(Part::Head(head), move |part| {
        let stage = Arc::clone(&stage);
        async move {
            let (bytes, next) = match part {
                Part::Head(head) => (head, Part::Open),
                Part::Open if held => tokio::select! {
                    () = stage.release.notified() => (session_tail(&stage), Part::Ended),
                    () = tokio::time::sleep(PING_EVERY) => {
                        (sse_event("ping", &json!({"type": "ping"})), Part::Open)
                    }
                },
                Part::Open => (session_tail(&stage), Part::Ended),
                Part::Ended => return None,
            };
            Some((Ok::<_, Infallible>(Bytes::from(bytes)), next))
        }
    });
    sse_response(Body::from_stream(parts))
}

async fn staged_upstream(stage: Arc<Stage>) -> Upstream {
    Upstream::start(move |seen, _| {
        let stage = Arc::clone(&stage);
        async move {
            let body = seen.json();
            if body["tool_choice"]["type"] == "tool" {
                if stage.open_sessions.load(Ordering::SeqCst) > 0 {
                    let tool = body["tool_choice"]["name"].to_string();
                    stage.overlaps.lock().unwrap().push(tool);
                }
                let arrived = {
                    let mut arrivals = stage.dreamer_arrivals.lock().unwrap();
                    arrivals.push(Instant::now());
                    arrivals.len()
                };
                if arrived == 1 {
                    stage.dreamer_started.notify_one();
                    stage.session_arrived.notified().await;
                }
                return dreamer_answer(&body);
            }
            stage.open_sessions.fetch_add(1, Ordering::SeqCst);
            let held = stage.session_calls.fetch_add(1, Ordering::SeqCst) > 0;
            if held {
                stage.session_arrived.notify_one();
            }
            session_answer(stage, held)
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_call_during_a_run_delays_its_next_model_call_until_it_ends() {
    let stage = Arc::new(Stage::default());
    let upstream = staged_upstream(Arc::clone(&stage)).await;
    let proxy = Proxy::start_with_config(settings(&upstream.url()), verify_every_minute()).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/config.rs"),
        "pub const DEFAULT_PORT: u16 = 4141;\n",
    )
    .unwrap();
    let first = stream_in(&proxy, dir.path(), "Fix the parser.").await;
    assert!(String::from_utf8_lossy(&first.bytes().await.unwrap()).contains("message_stop"));
    let project = proxy.sessions()[0].project.clone().expect("a project");
    proxy
        .store()
        .write(|tx| {
            for content in [
                "The default port is DEFAULT_PORT = 8080",
                "Legacy parsing lives in src/old_parser.rs",
            ] {
                let memory = NewMemory {
                    category: MemoryCategory::Architecture,
                    content,
                    source: MemorySource::Historian,
                    permanent: false,
                };
                tx.add_memory(&project, &memory, unix_ms())?;
            }
            Ok(())
        })
        .unwrap();

    tokio::time::timeout(RUN_STARTS_WITHIN, stage.dreamer_started.notified())
        .await
        .expect("the run's first model call");
    let second = stream_in(&proxy, dir.path(), "Now the tests.").await;
    assert_eq!(second.status().as_u16(), 200);
    tokio::time::sleep(SESSION_CALL).await;
    assert_eq!(
        stage.dreamer_arrivals.lock().unwrap().len(),
        1,
        "the run's next call waits while the user's call streams"
    );
    stage.release.notify_one();
    assert!(String::from_utf8_lossy(&second.bytes().await.unwrap()).contains("message_stop"));

    let waiting = Instant::now();
    let runs = loop {
        let runs = verify_runs(&proxy);
        if !runs.is_empty() || waiting.elapsed() > Duration::from_secs(30) {
            break runs;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(
        runs.iter()
            .map(|run| (run.outcome, run.model_calls))
            .collect::<Vec<_>>(),
        [(RunOutcome::Done, 2)],
        "{runs:?}"
    );
    let arrivals = stage.dreamer_arrivals.lock().unwrap().clone();
    let ended = stage
        .session_ended
        .lock()
        .unwrap()
        .expect("the session call ended");
    assert_eq!(arrivals.len(), 2);
    assert!(
        arrivals[1] >= ended,
        "the run's second call followed the end of the user's call"
    );
    assert_eq!(
        *stage.overlaps.lock().unwrap(),
        Vec::<String>::new(),
        "no dreamer call arrived while a session call was open"
    );
}
