//! PostgreSQL stopped mid-session: requests keep flowing at the same added latency.
//!
//! One `serve` with a team store, over HTTP against the simulator. Each phase sends the same
//! requests straight to the simulator and through the proxy, alternately, so both see the
//! same machine load; what the proxy adds is the difference. The phases run in one process,
//! with the server up, then stopped, then back (reads only: a control for what the run's
//! order adds as the store grows), and the test prints the figures and their ratios (timing
//! on these machines is noise in absolute terms; a ratio within one run is the figure). It
//! asserts what must hold whatever the load: every request answered, the write
//! each one makes landing while the server is up and queued while it is down, and no request
//! waiting on the stopped server (the team store's connect timeout) at all.
//!
//! `cargo test -p magic-context --test it team_latency -- --nocapture` prints the figure.
//! Needs `MC_TEST_PG_URL` and `MC_TEST_PG_BIN`.

use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

use mc_team_store::{CONNECT_TIMEOUT, create_scratch_database};
use serde_json::json;

use crate::support::servers::Server;
use crate::support::stream_client::exchange;
use crate::team_serves::{
    WINDOW_TOKENS, cluster, on_server, queued, runtime, send, team_machine, user,
};

/// Requests per phase and per path.
const REQUESTS: usize = 60;
/// A request whose answer writes nothing: the pass reads the team's memories from the cache.
const READING: &str = "Just answer";
/// A request whose answer writes one memory through the proxy's own `ctx_memory`.
const WRITING: &str = "WRITE one fact";

/// What the proxy added to one phase's requests: quantiles of (through the proxy − straight
/// to the simulator), each request paired with the direct one sent just before it.
#[derive(Debug, Clone, Copy)]
struct Added {
    p50_ms: f64,
    p95_ms: f64,
    slowest: Duration,
}

fn added(direct: &[Duration], proxied: &[Duration]) -> Added {
    let mut differences: Vec<f64> = direct
        .iter()
        .zip(proxied)
        .map(|(direct, proxied)| (proxied.as_secs_f64() - direct.as_secs_f64()) * 1_000.0)
        .collect();
    differences.sort_by(f64::total_cmp);
    let at = |q: f64| differences[((differences.len() - 1) as f64 * q).round() as usize];
    Added {
        p50_ms: at(0.5),
        p95_ms: at(0.95),
        slowest: proxied.iter().copied().max().unwrap_or_default(),
    }
}

#[test]
fn requests_keep_flowing_at_the_same_added_latency_while_postgres_is_down() {
    let Some(cluster) = cluster::Cluster::start() else {
        return;
    };
    let url = runtime()
        .block_on(create_scratch_database(&cluster.url()))
        .unwrap();
    let (machine, shop, project) = team_machine(&url);
    // Every request the user marks WRITE makes the model write one fact, through the
    // proxy's own `ctx_memory`: a team write on the request's path.
    let turns: Vec<_> = (0..2 * REQUESTS)
        .flat_map(|n| {
            [
                json!({"when": {"last_user_text_contains": "WRITE"},
                    "content": [{"type": "tool_use", "name": "ctx_memory", "input":
                        {"action": "write", "category": "NAMING", "content": format!("Latency fact {n}.")}}]}),
                json!({"when": {"tool_result_count_at_least": 1},
                    "content": [{"type": "text", "text": "ok"}]}),
            ]
        })
        .collect();
    let script = machine.path("script.json");
    std::fs::write(
        &script,
        json!({"turns": turns, "final_text": "ok"}).to_string(),
    )
    .unwrap();
    let proxied_sim = Server::sim(&script, WINDOW_TOKENS, 1.0);
    let plain = machine.path("plain.json");
    std::fs::write(&plain, json!({"turns": [], "final_text": "ok"}).to_string()).unwrap();
    let direct_sim = Server::sim(&plain, WINDOW_TOKENS, 1.0);
    let data = machine.path("data");
    let proxy = Server::serve(&machine, &proxied_sim.base_url, &data, WINDOW_TOKENS);
    // Warm both paths (first connections, the tokenizer) before timing anything.
    send(&proxy, &shop, "warm", "warm", json!([user("Hello")]));

    let phase = |name: &str, asked: &str| {
        let (mut direct, mut proxied) = (Vec::new(), Vec::new());
        for n in 0..REQUESTS {
            let session = format!("{name}-{n}");
            let body = serde_json::to_vec(&json!({
                "model": "claude-sonnet-4-5", "max_tokens": 256, "stream": true,
                "system": format!("You are a coding agent.\nPrimary working directory: {}\n", shop.display()),
                "messages": [user(asked)],
            }))
            .unwrap();
            let started = Instant::now();
            let (head, _) = exchange(
                &direct_sim.base_url,
                &session,
                &session,
                &body,
                &AtomicUsize::new(0),
            )
            .unwrap();
            direct.push(started.elapsed());
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            let started = Instant::now();
            let text = send(&proxy, &shop, &session, &session, json!([user(asked)]));
            proxied.push(started.elapsed());
            assert!(text.contains("ok"), "{text}\n{}", proxy.stderr());
        }
        added(&direct, &proxied)
    };

    let up_read = phase("up-read", READING);
    let up = phase("up", WRITING);
    assert_eq!(queued(&data), 0, "with the server up every write landed");
    assert_eq!(on_server(&url, &project).len(), REQUESTS);

    cluster.down();
    let down_read = phase("down-read", READING);
    let down = phase("down", WRITING);
    assert_eq!(
        queued(&data),
        REQUESTS as u64,
        "with the server down every write waits in the queue\n{}",
        proxy.stderr()
    );
    for (stopped, running) in [(down_read, up_read), (down, up)] {
        assert!(
            stopped.slowest < CONNECT_TIMEOUT,
            "a request waited on the stopped server: {stopped:?} (up: {running:?})"
        );
    }
    for (what, running, stopped) in [
        ("reading the team's memories only", up_read, down_read),
        ("each writing one memory (ctx_memory)", up, down),
    ] {
        eprintln!(
            "team store latency, {what}: added per request through the proxy ({REQUESTS} \
             requests): server up p50 {:.2} ms p95 {:.2} ms; server stopped p50 {:.2} ms \
             p95 {:.2} ms; ratio stopped/up p50 {:.2}, p95 {:.2}",
            running.p50_ms,
            running.p95_ms,
            stopped.p50_ms,
            stopped.p95_ms,
            stopped.p50_ms / running.p50_ms,
            stopped.p95_ms / running.p95_ms
        );
    }

    cluster.up();
    crate::team_serves::wait_for("the queue drained", &proxy, || queued(&data) == 0);
    assert_eq!(
        on_server(&url, &project).len(),
        2 * REQUESTS,
        "nothing lost"
    );
    // The same reads once more with the server back: what the run's order (a store grown
    // by the earlier phases) adds, against which to read the stopped phase.
    let again = phase("again-read", READING);
    eprintln!(
        "team store latency, reading again with the server back: p50 {:.2} ms p95 {:.2} ms; \
         ratio stopped/back p50 {:.2}, p95 {:.2}",
        again.p50_ms,
        again.p95_ms,
        down_read.p50_ms / again.p50_ms,
        down_read.p95_ms / again.p95_ms
    );
}
