//! `bench memory`: how much memory a `serve` process holds for long sessions, and how much
//! time it adds to each call.
//!
//! A proxy runs all day, so what it keeps must not grow with what it has seen. The bench
//! runs the real thing: this binary's own `serve`, as a child process with a scratch store
//! and default settings. Each phase starts a fresh `serve`, opens N generated sessions at
//! the start size in one request each, then grows them a turn at a time, round robin, to
//! the target size.
//!
//! Memory phases run in front of the simulated provider (`mc-sim`, in this process), so
//! the historian and everything else behave as against a provider; their figures are the
//! child's peak resident set (`VmHWM`) and its resident set at the end, read from `/proc`.
//! A last phase times one session against an upstream whose cost does not depend on the
//! body ([`crate::bench_flat_upstream`]): each call goes straight to it first, then through
//! the proxy with the same body, and the paired difference is the time the proxy adds,
//! against a baseline from the same run on the same machine.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use mc_sim::O200kCounter;
use mc_sim::script::Script;
use mc_sim::server::{Responder, SimConfig, SimServer};
use serde::Serialize;

use crate::bench_flat_upstream;
use crate::bench_memory_turns::{Conversation, request_body};

/// How long `serve` may take to start listening.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The simulated window: the long-context beta's.
const SIM_WINDOW_TOKENS: u64 = 1_000_000;

/// What to run.
#[derive(Debug, Clone)]
pub struct MemoryBench {
    /// Each session's size at the end, in o200k tokens.
    pub tokens: u64,
    /// Each session's size in its first request.
    pub start_tokens: u64,
    /// One phase per entry: how many sessions it runs.
    pub sessions: Vec<usize>,
}

/// The figures of a run.
#[derive(Debug, Serialize)]
pub struct MemoryReport {
    /// One per memory phase.
    pub phases: Vec<PhaseReport>,
    /// The timed phase.
    pub latency: LatencyReport,
}

/// The figures of one memory phase.
#[derive(Debug, Serialize)]
pub struct PhaseReport {
    /// Sessions served at once.
    pub sessions: usize,
    /// Calls made through the proxy.
    pub calls: usize,
    /// The smallest session's final size, in o200k tokens.
    pub tokens_per_session: u64,
    /// The largest request body sent, in bytes.
    pub last_body_bytes: usize,
    /// `serve`'s peak resident set, in MB (10^6 bytes).
    pub peak_rss_mb: f64,
    /// `serve`'s resident set after the last call, in MB.
    pub end_rss_mb: f64,
    /// `serve`'s threads after the last call.
    pub threads: u32,
    /// Median time of a call through the proxy to the simulator (to the last byte of the
    /// stream), in ms.
    pub proxied_p50_ms: f64,
}

/// The time the proxy adds to a call, one session grown to the target size.
#[derive(Debug, Serialize)]
pub struct LatencyReport {
    /// Calls timed each way.
    pub calls: usize,
    /// Median time of a call through the proxy (to the last byte of the stream), in ms.
    pub proxied_p50_ms: f64,
    /// Median time of the same call straight to the simulator, in ms.
    pub direct_p50_ms: f64,
    /// Median over calls of (proxied − direct), in ms: the time the proxy adds.
    pub added_p50_ms: f64,
    /// `proxied_p50_ms / direct_p50_ms`.
    pub ratio: f64,
}

/// Runs every memory phase against one simulator, then the timed phase.
pub fn run(bench: &MemoryBench) -> anyhow::Result<MemoryReport> {
    if bench.start_tokens >= bench.tokens || bench.sessions.contains(&0) {
        bail!("--start-tokens must be below --tokens, and --sessions at least 1");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let config = SimConfig::new(Responder::Script(Script::new(Vec::new())))
            .with_window(SIM_WINDOW_TOKENS);
        let sim = SimServer::bind(([127, 0, 0, 1], 0).into(), config)
            .await
            .context("cannot start the simulated provider")?;
        let sim_url = format!("http://{}", sim.local_addr());
        let counter = O200kCounter::load().context("cannot load the o200k tables")?;
        let mut phases = Vec::new();
        for &sessions in &bench.sessions {
            let (report, _) = phase(bench, sessions, &sim_url, None, &counter).await?;
            phases.push(report);
        }
        sim.shutdown()
            .await
            .context("cannot stop the simulated provider")?;
        let flat_url = bench_flat_upstream::start()
            .await
            .context("cannot start the flat upstream")?;
        let (_, timings) = phase(bench, 1, &flat_url, Some(&flat_url), &counter).await?;
        Ok(MemoryReport {
            phases,
            latency: timings.latency(),
        })
    })
}

/// One fresh `serve` forwarding to `upstream_url`, `sessions` sessions grown to the target
/// size; each call is first sent to `direct_url` too, when given.
async fn phase(
    bench: &MemoryBench,
    sessions: usize,
    upstream_url: &str,
    direct_url: Option<&str>,
    counter: &O200kCounter,
) -> anyhow::Result<(PhaseReport, Timings)> {
    let scratch = tempfile::tempdir().context("cannot create a scratch directory")?;
    let mut serve = Serve::start(scratch.path(), upstream_url)?;
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .context("cannot build the HTTP client")?;
    let mut conversations: Vec<Conversation> = (0..sessions)
        .map(|index| Conversation::new(index, counter))
        .collect();
    for conversation in &mut conversations {
        while conversation.tokens < bench.start_tokens {
            conversation.add_turn(counter);
        }
    }
    let mut timings = Timings::default();
    // Every session's first request carries its start; each later one a turn more.
    for conversation in &conversations {
        timings
            .send(&client, direct_url, &serve.url, conversation)
            .await?;
    }
    while conversations.iter().any(|c| c.tokens < bench.tokens) {
        for conversation in &mut conversations {
            if conversation.tokens < bench.tokens {
                conversation.add_turn(counter);
                timings
                    .send(&client, direct_url, &serve.url, conversation)
                    .await?;
            }
        }
    }
    let (peak_rss_mb, end_rss_mb, threads) = serve.memory_mb()?;
    serve.stop();
    let report = PhaseReport {
        sessions,
        calls: timings.proxied.len(),
        tokens_per_session: conversations.iter().map(|c| c.tokens).min().unwrap_or(0),
        last_body_bytes: timings.last_body_bytes,
        peak_rss_mb,
        end_rss_mb,
        threads,
        proxied_p50_ms: median(&timings.proxied),
    };
    Ok((report, timings))
}

/// Call times so far, in ms, and the largest body sent.
#[derive(Debug, Default)]
struct Timings {
    proxied: Vec<f64>,
    direct: Vec<f64>,
    last_body_bytes: usize,
}

impl Timings {
    /// Sends the conversation's request straight to `direct_url` (when given), then
    /// through the proxy.
    async fn send(
        &mut self,
        client: &reqwest::Client,
        direct_url: Option<&str>,
        proxy_url: &str,
        conversation: &Conversation,
    ) -> anyhow::Result<()> {
        let body = request_body(&conversation.messages_json());
        self.last_body_bytes = self.last_body_bytes.max(body.len());
        let id = conversation.id.as_str();
        if let Some(direct_url) = direct_url {
            self.direct
                .push(call(client, direct_url, id, body.clone()).await?);
        }
        self.proxied.push(call(client, proxy_url, id, body).await?);
        Ok(())
    }

    /// The paired figures; calls without a direct twin are left out.
    fn latency(&self) -> LatencyReport {
        let added: Vec<f64> = self
            .proxied
            .iter()
            .zip(&self.direct)
            .map(|(proxied, direct)| proxied - direct)
            .collect();
        let proxied_p50_ms = median(&self.proxied);
        let direct_p50_ms = median(&self.direct);
        LatencyReport {
            calls: added.len(),
            proxied_p50_ms,
            direct_p50_ms,
            added_p50_ms: median(&added),
            ratio: proxied_p50_ms / direct_p50_ms.max(f64::MIN_POSITIVE),
        }
    }
}

/// One streamed call as Claude Code makes it, timed to the last byte of the answer.
async fn call(
    client: &reqwest::Client,
    base_url: &str,
    session: &str,
    body: String,
) -> anyhow::Result<f64> {
    let started = Instant::now();
    let response = client
        .post(format!("{base_url}/v1/messages"))
        .header("content-type", "application/json")
        .header("anthropic-version", "2023-06-01")
        .header("anthropic-beta", "context-1m-2025-08-07")
        .header("x-api-key", "sk-ant-bench-not-a-key")
        .header("x-claude-code-session-id", session)
        .body(body)
        .send()
        .await
        .with_context(|| format!("cannot call {base_url}"))?;
    let status = response.status();
    let answer = response
        .bytes()
        .await
        .with_context(|| format!("cannot read the answer of {base_url}"))?;
    if !status.is_success() {
        let excerpt = String::from_utf8_lossy(answer.get(..400).unwrap_or(&answer)).into_owned();
        bail!("{base_url} answered {status}: {excerpt}");
    }
    Ok(started.elapsed().as_secs_f64() * 1000.0)
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
}

/// A `serve` child process in a scratch home.
struct Serve {
    child: Child,
    url: String,
}

impl Serve {
    /// Starts this binary's `serve` on a free port with a store in `scratch`, forwarding to
    /// `sim_url`, and waits for the line naming its address.
    fn start(scratch: &Path, sim_url: &str) -> anyhow::Result<Self> {
        let exe = std::env::current_exe().context("cannot find this binary")?;
        for dir in ["home", "xdg", "data"] {
            std::fs::create_dir_all(scratch.join(dir)).context("cannot create the scratch home")?;
        }
        let mut child = Command::new(exe)
            .args(["serve", "--listen", "127.0.0.1:0", "--upstream-anthropic"])
            .arg(sim_url)
            .env_clear()
            .env("HOME", scratch.join("home"))
            .env("XDG_CONFIG_HOME", scratch.join("xdg"))
            .env("MAGIC_CONTEXT_DATA_DIR", scratch.join("data"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot start serve")?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| anyhow!("serve's stderr is not piped"))?;
        let (found, listening) = mpsc::channel();
        std::thread::spawn(move || drain(stderr, &found));
        let mut serve = Self {
            child,
            url: String::new(),
        };
        match listening.recv_timeout(START_TIMEOUT) {
            Ok(url) => serve.url = url,
            Err(_) => {
                serve.stop();
                bail!("serve did not say where it listens");
            }
        }
        Ok(serve)
    }

    /// Peak and current resident set, in MB, and the thread count (each thread that
    /// allocates or counts tokens may keep an allocator arena and a tokenizer cache).
    fn memory_mb(&self) -> anyhow::Result<(f64, f64, u32)> {
        let path = format!("/proc/{}/status", self.child.id());
        let status = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {path} (Linux only)"))?;
        let kilobytes = |field: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(field))
                .and_then(|rest| {
                    rest.trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<f64>()
                        .ok()
                })
                .ok_or_else(|| anyhow!("{path} has no {field}"))
        };
        Ok((
            kilobytes("VmHWM:")? * 1024.0 / 1e6,
            kilobytes("VmRSS:")? * 1024.0 / 1e6,
            kilobytes("Threads:")? as u32,
        ))
    }

    fn stop(&mut self) {
        // The child may have exited already; either way it is gone after this.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Reads `serve`'s stderr to its end (a full pipe would block it), sending the address
/// from its listening line.
fn drain(stderr: ChildStderr, found: &mpsc::Sender<String>) {
    const PREFIX: &str = "magic-context listening on ";
    for line in BufReader::new(stderr).lines() {
        let Ok(line) = line else { break };
        if let Some(rest) = line.strip_prefix(PREFIX)
            && let Some(url) = rest.split_whitespace().next()
        {
            // The bench stops waiting after a timeout; a late address has nowhere to go.
            let _ = found.send(url.to_owned());
        }
    }
}
