//! The latency the proxy adds to a streamed model call, against calling its upstream
//! directly, and how it holds up under 100 concurrent sessions.
//!
//! Everything runs in this process on one multi-thread runtime. Request bodies are Anthropic
//! Messages calls of about 20K, 200K and 800K tokens (o200k_base over the whole body; these
//! run 3.6-4 bytes a token), built from real data: Claude Code's system prompt and tools
//! from the recorded capture, and the steps of recorded SWE-bench agent runs (each step's
//! reasoning as text, its shell command as a `Bash` tool_use, the command's output as the
//! tool_result), the last block marked for caching as Claude Code marks it.
//!
//! The conversation grows by one assistant/user pair per request, as an agent's does, so
//! every measured proxy call is a pass on a known session (the steady state: the first two
//! calls of each session, its cold pass and first follow-up, are not measured); the direct
//! path is sent the identical bytes. Each size runs several sessions, each sized so that
//! its middle measured request has the nominal token count. Each request goes both ways
//! back to back (the order alternating), and the added latency is paired per request:
//! proxy time minus direct time of the same body. The baseline is a bare
//! `serde_json::Value` parse + serialise of the same body, timed in the same run; on shared
//! machines read the ratios, not the absolute times. With 30 samples at 800K, its p99 is the
//! slowest request. Each body is also sent to `count_tokens`, which the proxy forwards
//! verbatim: that paired difference is what the extra HTTP hop alone costs, the floor under
//! a managed call before any of its own work.
//!
//! Two tables. The first has an upstream whose cost does not depend on the body's shape
//! ([`flat_upstream`]): the pairs cancel its cost exactly, and the targets are judged there.
//! The second has the simulator (`mc-sim`, a short streamed answer): the proxy moves the
//! client's cache markers, which changes what the simulator does for the call, so there the
//! difference also holds the simulator's own change of cost. Each proxy runs over a fresh
//! store with every tag protected, so nothing is dropped and both paths send bodies of the
//! same size.
//!
//! The concurrency run drives 100 sessions at once through the proxy to the simulator,
//! each making growing ~20K-token calls, counts failures (any status but 200, or a stream
//! without `message_stop`), and reads the process's RSS and its peak (VmHWM, reset before
//! the run).
//!
//! First of all, a growing session compares the agent tools on (the default for clients
//! other than Claude Code and Codex) with tools off, per quarter of the run, beside what
//! the verbatim hop costs for the same body ([`growing`]).
//!
//! Run: `cargo bench -p mc-proxy --bench proxy_latency`; with `PROXY_LATENCY_QUICK=1`, only
//! a shorter growing session; `PROXY_LATENCY_STEPS=N` sets its length.

#![expect(clippy::print_stdout, reason = "a benchmark prints its table")]

use std::error::Error;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use mc_proxy::{RunningProxy, SESSION_HEADER};
use mc_sim::script::Script;
use mc_sim::server::{Responder, SimConfig, SimServer};
use mc_sim::{CountTokens, O200kCounter};
use serde_json::Value;
use tokio::task::JoinSet;

#[path = "proxy_latency/corpus.rs"]
mod corpus;
#[path = "proxy_latency/flat_upstream.rs"]
mod flat_upstream;
#[path = "proxy_latency/growing.rs"]
mod growing;
#[path = "proxy_latency/proxies.rs"]
mod proxies;

use corpus::{Conversation, Corpus};
use flat_upstream::FlatUpstream;
use growing::{Growing, Wire, growing_table};
use proxies::{Managed, start_proxy};

type BoxError = Box<dyn Error + Send + Sync>;
type Result<T> = std::result::Result<T, BoxError>;

/// An unmanaged path: the proxy forwards token counting as it is, and the simulator counts
/// the same body whichever way it came.
const VERBATIM_PATH: &str = "/v1/messages/count_tokens";

/// Bytes per token the simulator charges (it counts by length, see [`QuarterBytes`]).
const BYTES_PER_TOKEN: usize = 4;

/// The window both the simulator and the proxy use, so 800K tokens fit with room to grow.
const WINDOW_TOKENS: u64 = 2_000_000;

/// One latency run: the body size, and its sessions. Each session grows by one agent step
/// per request (~500 tokens), so bodies stay near their size however many are measured.
struct Size {
    tokens: usize,
    sessions: usize,
    /// Requests per session before measuring (the first is the session's cold pass).
    warmup: usize,
    /// Requests measured per session.
    measured: usize,
}

const SIZES: [Size; 3] = [
    Size {
        tokens: 20_000,
        sessions: 20,
        warmup: 2,
        measured: 10,
    },
    Size {
        tokens: 200_000,
        sessions: 10,
        warmup: 2,
        measured: 10,
    },
    Size {
        tokens: 800_000,
        sessions: 3,
        warmup: 2,
        measured: 10,
    },
];

/// Claude Code's Bash tool cuts a command's output at this many characters; a few recorded
/// steps printed far more, and one such step would make a body overshoot its size.
const MAX_OUTPUT_CHARS: usize = 30_000;

/// The concurrency run: sessions at once, each making this many growing requests.
const SESSIONS: usize = 100;
const REQUESTS_PER_SESSION: usize = 10;
const SESSION_TOKENS: usize = 20_000;

/// Measured steps of the growing session ([`growing`]): 200 by default, 60 in a quick run.
const GROWING_STEPS: usize = 200;
const GROWING_STEPS_QUICK: usize = 60;

/// Set to run only a shorter growing session (the tools on/off comparison), for a check
/// after a change to the request path.
const QUICK_ENV: &str = "PROXY_LATENCY_QUICK";

/// Set to a number of measured steps for the growing session (400 take it from ~1 MB to
/// ~1.7 MB).
const STEPS_ENV: &str = "PROXY_LATENCY_STEPS";

/// Names the growing session's wires to run, comma-separated (`anthropic,chat,responses`;
/// all by default), to profile one alone.
const WIRES_ENV: &str = "PROXY_LATENCY_WIRES";

fn main() -> std::result::Result<(), BoxError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run())
}

async fn run() -> Result<()> {
    let o200k = Arc::new(tokio::task::spawn_blocking(O200kCounter::load).await??);
    let counter = Arc::clone(&o200k);
    let corpus =
        tokio::task::spawn_blocking(move || Corpus::load(&mc_testdata::dir(), &counter)).await??;
    let corpus = Arc::new(corpus);
    let script = Script::parse(
        r#"{"turns": [], "final_text": "Done: the parser test passes now."}"#,
        "bench",
    )?;
    // The simulator counts tokens at 4 bytes each: o200k would cost it ~25 MB/s behind its
    // one lock, a cost of the fake upstream whose jitter would swamp the difference measured.
    let sim = SimServer::bind(
        "127.0.0.1:0".parse()?,
        SimConfig::new(Responder::Script(script))
            .with_window(WINDOW_TOKENS)
            .with_counter(Arc::new(QuarterBytes)),
    )
    .await?;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(2 * SESSIONS)
        .build()?;
    let sim_url = format!("http://{}", sim.local_addr());
    let flat = FlatUpstream::start().await?;

    let quick = std::env::var_os(QUICK_ENV).is_some_and(|value| !value.is_empty() && value != "0");
    println!(
        "growing session: one conversation from ~1 MB, one step per request, through a proxy with the agent tools off and one at the defaults (tools on, as a client without Claude Code's headers gets them); added = proxy time - direct time of the same body"
    );
    let run = Growing {
        steps: std::env::var(STEPS_ENV)
            .ok()
            .and_then(|steps| steps.parse().ok())
            .unwrap_or(if quick {
                GROWING_STEPS_QUICK
            } else {
                GROWING_STEPS
            }),
    };
    let wires = std::env::var(WIRES_ENV).unwrap_or_default();
    for wire in [Wire::Anthropic, Wire::Chat, Wire::Responses] {
        if wires.is_empty() || wires.split(',').any(|name| name.trim() == wire.name()) {
            growing_table(&client, &corpus, &flat.url(), &run, wire).await?;
        }
    }
    if quick {
        sim.shutdown().await?;
        return Ok(());
    }
    println!();
    println!("proxy_latency: added latency of a streamed Anthropic call through the proxy");
    println!(
        "(added = proxy time - direct time of the same body, paired per request; ratio = p50 added / p50 bare serde_json parse+serialise of the body; verbatim hop = the same for count_tokens, which the proxy forwards as it is)"
    );
    println!();
    println!(
        "upstream: a flat server that reads the body and streams a fixed answer, so a call costs it the same either way"
    );
    let (proxy, _store) = start_proxy(&flat.url(), Managed::TOOLS_OFF).await?;
    let verdicts = latency_table(&client, &corpus, &o200k, &flat.url(), &proxy).await?;
    proxy.shutdown().await;
    println!();
    println!(
        "targets (ratio <= 2, 200K p99 <= 5 ms): {}",
        verdicts.join("; ")
    );
    println!();
    println!(
        "upstream: the simulator (its cost per call depends on the body's cache markers, which the proxy moves: read with care)"
    );
    let (proxy, _store) = start_proxy(&sim_url, Managed::TOOLS_OFF).await?;
    latency_table(&client, &corpus, &o200k, &sim_url, &proxy).await?;
    let proxied = format!("http://{}/v1/messages", proxy.local_addr());

    let load = concurrency_run(&client, &corpus, &proxied).await?;
    println!();
    println!(
        "concurrency: {SESSIONS} sessions x {REQUESTS_PER_SESSION} growing requests of ~{}K tokens, streamed through the proxy",
        SESSION_TOKENS / 1000
    );
    println!(
        "| requests | errors | wall s | req/s | latency p50 ms | latency p99 ms | RSS before MB | peak RSS during MB | RSS after MB |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {} | {} | {:.2} | {:.1} | {:.1} | {:.1} | {:.0} | {:.0} | {:.0} |",
        load.requests,
        load.errors,
        load.wall.as_secs_f64(),
        load.requests as f64 / load.wall.as_secs_f64(),
        ms(percentile(&load.latencies, 0.50)),
        ms(percentile(&load.latencies, 0.99)),
        load.rss_before_kb as f64 / 1024.0,
        load.peak_kb as f64 / 1024.0,
        load.rss_after_kb as f64 / 1024.0,
    );
    println!("(RSS is the whole bench process: proxy, simulator and client together)");
    if let Some(error) = &load.first_error {
        println!("first error: {error}");
    }

    proxy.shutdown().await;
    sim.shutdown().await?;
    if load.errors > 0 {
        return Err(format!("{} requests failed under concurrency", load.errors).into());
    }
    Ok(())
}

/// Prints one latency table, direct calls going to `upstream`; returns the verdicts.
async fn latency_table(
    client: &reqwest::Client,
    corpus: &Corpus,
    o200k: &O200kCounter,
    upstream: &str,
    proxy: &RunningProxy,
) -> Result<Vec<String>> {
    let direct = format!("{upstream}/v1/messages");
    let proxied = format!("http://{}/v1/messages", proxy.local_addr());
    let hop = [
        format!("{upstream}{VERBATIM_PATH}"),
        format!("http://{}{VERBATIM_PATH}", proxy.local_addr()),
    ];
    let mut verdicts = Vec::new();
    println!(
        "| size | body MB | o200k tokens | n | direct p50 ms | proxy p50 ms | added p50 ms | added p99 ms | parse+ser p50 ms | ratio p50/parse+ser | verbatim hop added p50 ms |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for size in &SIZES {
        let urls = [&direct, &proxied, &hop[0], &hop[1]];
        let row = latency_run(client, corpus, size, urls, o200k).await?;
        let ratio = percentile_of(&row.added, 0.50) / percentile(&row.baseline, 0.50);
        let p99_ms = ms(percentile_of(&row.added, 0.99));
        verdicts.push(format!(
            "{}K ratio {ratio:.1} ({})",
            size.tokens / 1000,
            if ratio <= 2.0 { "met" } else { "MISSED" }
        ));
        if size.tokens == 200_000 {
            verdicts.push(format!(
                "200K added p99 {p99_ms:.1} ms ({})",
                if p99_ms <= 5.0 { "met" } else { "MISSED" }
            ));
        }
        println!(
            "| {}K | {:.2} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
            size.tokens / 1000,
            row.body_bytes as f64 / 1e6,
            row.o200k_tokens,
            row.added.len(),
            ms(percentile(&row.direct, 0.50)),
            ms(percentile(&row.proxy, 0.50)),
            ms(percentile_of(&row.added, 0.50)),
            p99_ms,
            ms(percentile(&row.baseline, 0.50)),
            ratio,
            ms(percentile_of(&row.hop_added, 0.50)),
        );
    }
    Ok(verdicts)
}

/// Durations of one size's measured requests, each list in request order.
struct LatencyRow {
    direct: Vec<Duration>,
    proxy: Vec<Duration>,
    /// Proxy minus direct, per request, in seconds (negative when the proxy path happened
    /// to be faster: noise, kept so it does not bias the median).
    added: Vec<f64>,
    baseline: Vec<Duration>,
    /// The same body sent to an unmanaged path, proxy minus direct: what the extra HTTP hop
    /// alone adds, the floor under any managed call.
    hop_added: Vec<f64>,
    /// The middle measured body of the first session (the others are near it).
    body_bytes: usize,
    /// Its o200k tokens.
    o200k_tokens: u64,
}

async fn latency_run(
    client: &reqwest::Client,
    corpus: &Corpus,
    size: &Size,
    [direct, proxied, hop_direct, hop_proxied]: [&String; 4],
    o200k: &O200kCounter,
) -> Result<LatencyRow> {
    let measured = size.sessions * size.measured;
    let mut row = LatencyRow {
        direct: Vec::with_capacity(measured),
        proxy: Vec::with_capacity(measured),
        added: Vec::with_capacity(measured),
        baseline: Vec::with_capacity(measured),
        hop_added: Vec::with_capacity(measured),
        body_bytes: 0,
        o200k_tokens: 0,
    };
    let mut sample: Option<Bytes> = None;
    for session_no in 0..size.sessions {
        let session = format!("bench-{}k-{session_no:02}", size.tokens / 1000);
        let first_step = session_no * 37 + size.tokens / 1000;
        let middle = size.warmup + size.measured / 2;
        let mut conversation = Conversation::sized(corpus, size.tokens, first_step, middle + 1);
        for index in 0..size.warmup + size.measured {
            conversation.grow(corpus);
            let body = conversation.body(corpus)?;
            let baseline = bare_parse_serialise(&body)?;
            let (direct_headers, proxy_headers) = ([], [(SESSION_HEADER, session.as_str())]);
            let to_direct = call(client, direct, &body, &direct_headers);
            let to_proxy = call(client, proxied, &body, &proxy_headers);
            let (direct_time, proxy_time) = if index % 2 == 0 {
                let direct_time = to_direct.await?;
                (direct_time, to_proxy.await?)
            } else {
                let proxy_time = to_proxy.await?;
                (to_direct.await?, proxy_time)
            };
            let hop_direct_time = call_verbatim(client, hop_direct, &body).await?;
            let hop_proxy_time = call_verbatim(client, hop_proxied, &body).await?;
            if index < size.warmup {
                continue;
            }
            row.hop_added
                .push(hop_proxy_time.as_secs_f64() - hop_direct_time.as_secs_f64());
            row.direct.push(direct_time);
            row.proxy.push(proxy_time);
            row.added
                .push(proxy_time.as_secs_f64() - direct_time.as_secs_f64());
            row.baseline.push(baseline);
            if session_no == 0 && index == middle {
                sample = Some(body);
            }
        }
    }
    if let Some(sample) = sample {
        row.body_bytes = sample.len();
        row.o200k_tokens = o200k.count_tokens(std::str::from_utf8(&sample)?);
    }
    Ok(row)
}

/// One streamed call, read to the end; fails on any status but 200 or a stream that does
/// not finish with its wire's closing event (`message_stop`, `[DONE]`,
/// `response.completed`).
async fn call(
    client: &reqwest::Client,
    url: &str,
    body: &Bytes,
    headers: &[(&str, &str)],
) -> Result<Duration> {
    let started = Instant::now();
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("anthropic-version", "2023-06-01")
        .header("x-api-key", "bench")
        .body(body.clone());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await?;
    let status = response.status();
    let mut stream = response.bytes_stream();
    let mut tail: Vec<u8> = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        if !status.is_success() {
            tail.extend_from_slice(&chunk);
            continue;
        }
        // Keep only the end of the stream: enough to find the closing event.
        tail.extend_from_slice(&chunk);
        let keep = tail.len().saturating_sub(1024);
        tail.drain(..keep);
    }
    let elapsed = started.elapsed();
    if !status.is_success() {
        return Err(format!(
            "{url} answered {status}: {}",
            String::from_utf8_lossy(&tail[..tail.len().min(400)])
        )
        .into());
    }
    let ended = |marker: &[u8]| tail.windows(marker.len()).any(|window| window == marker);
    if !ended(b"message_stop") && !ended(b"data: [DONE]") && !ended(b"response.completed") {
        return Err(format!("{url} ended its stream without its closing event").into());
    }
    Ok(elapsed)
}

/// A call whose answer is read to the end; fails on any status but 200.
async fn call_verbatim(client: &reqwest::Client, url: &str, body: &Bytes) -> Result<Duration> {
    let started = Instant::now();
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("x-api-key", "bench")
        .body(body.clone())
        .send()
        .await?;
    let status = response.status();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        chunk?;
    }
    if !status.is_success() {
        return Err(format!("{url} answered {status}").into());
    }
    Ok(started.elapsed())
}

/// The baseline: what a bare parse into `serde_json::Value` and back costs for `body`.
fn bare_parse_serialise(body: &[u8]) -> Result<Duration> {
    let started = Instant::now();
    let value: Value = serde_json::from_slice(std::hint::black_box(body))?;
    let bytes = serde_json::to_vec(&value)?;
    let elapsed = started.elapsed();
    if bytes.len() != body.len() {
        return Err("the baseline round trip changed the body's length".into());
    }
    Ok(elapsed)
}

/// Results of the concurrency run.
struct LoadResult {
    requests: usize,
    errors: usize,
    first_error: Option<String>,
    wall: Duration,
    latencies: Vec<Duration>,
    rss_before_kb: u64,
    peak_kb: u64,
    rss_after_kb: u64,
}

async fn concurrency_run(
    client: &reqwest::Client,
    corpus: &Arc<Corpus>,
    proxied: &str,
) -> Result<LoadResult> {
    let rss_before_kb = status_kb("VmRSS")?;
    // Resets VmHWM to the current RSS, so the peak read afterwards is this run's own.
    std::fs::write("/proc/self/clear_refs", "5")?;
    let started = Instant::now();
    let mut sessions = JoinSet::new();
    for index in 0..SESSIONS {
        let (client, corpus, url) = (client.clone(), Arc::clone(corpus), proxied.to_owned());
        sessions.spawn(async move {
            // Sessions start at different steps so their conversations differ.
            let mut conversation = Conversation::sized(
                &corpus,
                SESSION_TOKENS,
                index * 7,
                REQUESTS_PER_SESSION / 2 + 1,
            );
            let session = format!("load-{index:03}");
            let mut outcomes = Vec::with_capacity(REQUESTS_PER_SESSION);
            for _ in 0..REQUESTS_PER_SESSION {
                conversation.grow(&corpus);
                let outcome = match conversation.body(&corpus) {
                    Ok(body) => call(&client, &url, &body, &[(SESSION_HEADER, &session)])
                        .await
                        .map_err(|error| error.to_string()),
                    Err(error) => Err(error.to_string()),
                };
                outcomes.push(outcome);
            }
            outcomes
        });
    }
    let mut result = LoadResult {
        requests: 0,
        errors: 0,
        first_error: None,
        wall: Duration::ZERO,
        latencies: Vec::with_capacity(SESSIONS * REQUESTS_PER_SESSION),
        rss_before_kb,
        peak_kb: 0,
        rss_after_kb: 0,
    };
    while let Some(joined) = sessions.join_next().await {
        for outcome in joined? {
            result.requests += 1;
            match outcome {
                Ok(latency) => result.latencies.push(latency),
                Err(error) => {
                    result.errors += 1;
                    result.first_error.get_or_insert(error);
                }
            }
        }
    }
    result.wall = started.elapsed();
    result.peak_kb = status_kb("VmHWM")?;
    result.rss_after_kb = status_kb("VmRSS")?;
    Ok(result)
}

/// A `kB` field of `/proc/self/status`.
fn status_kb(field: &str) -> Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|line| {
            let rest = line.strip_prefix(field)?.strip_prefix(':')?;
            rest.trim().trim_end_matches("kB").trim().parse().ok()
        })
        .ok_or_else(|| format!("/proc/self/status has no {field}").into())
}

/// The simulator's token count: a quarter of the bytes.
struct QuarterBytes;

impl CountTokens for QuarterBytes {
    fn count_tokens(&self, text: &str) -> u64 {
        text.len().div_ceil(BYTES_PER_TOKEN) as u64
    }
}

/// The nearest-rank percentile `p` (0..=1) of `samples`, in seconds.
fn percentile(samples: &[Duration], p: f64) -> f64 {
    let seconds: Vec<f64> = samples.iter().map(Duration::as_secs_f64).collect();
    percentile_of(&seconds, p)
}

/// The nearest-rank percentile `p` (0..=1) of `seconds`.
fn percentile_of(seconds: &[f64], p: f64) -> f64 {
    let mut sorted = seconds.to_vec();
    sorted.sort_by(f64::total_cmp);
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn ms(seconds: f64) -> f64 {
    seconds * 1000.0
}
