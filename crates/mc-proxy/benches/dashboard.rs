//! How fast the dashboard answers on a store that has lived a while: 100 sessions of 1,000
//! messages each (100K messages, every one searchable), 200 calls in each session's ledger
//! and 200 memories in each of 10 projects. Every page and its API are asked for
//! [`ROUNDS`] times through a running proxy over HTTP, as the browser asks (the token in the
//! cookie, the API's in its header); the table gives p50 and p95 per page against the
//! 200 ms target, beside a baseline measured in the same run: the bare store reading one
//! session's whole log (1,000 messages).
//!
//! Run: `cargo bench -p mc-proxy --bench dashboard` (`DASHBOARD_BENCH_SESSIONS=N` for
//! another number of sessions).

#![expect(clippy::print_stdout, reason = "a benchmark prints its table")]

use std::time::{Duration, Instant};

use mc_core::head::MemoryCategory;
use mc_core::{Host, Message, Part, ProjectId, Role, SessionId};
use mc_proxy::{ProxySettings, RunningProxy, TOKEN_HEADER, load_or_create};
use mc_store::{CallRow, MemorySource, NewMemory, NewSession, Store};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Sessions in the store unless `DASHBOARD_BENCH_SESSIONS` says otherwise.
const SESSIONS: usize = 100;
const MESSAGES_PER_SESSION: u64 = 1_000;
const CALLS_PER_SESSION: usize = 200;
const PROJECTS: usize = 10;
const MEMORIES_PER_PROJECT: usize = 200;
/// Requests per page.
const ROUNDS: usize = 20;
/// The bound for every page.
const TARGET_MS: f64 = 200.0;
/// Unix milliseconds the seeded history ends at.
const NOW_MS: i64 = 1_780_000_000_000;

fn main() -> Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run())
}

async fn run() -> Result<()> {
    let sessions = std::env::var("DASHBOARD_BENCH_SESSIONS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(SESSIONS);
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("dashboard.db");
    let seeding = Instant::now();
    let store = Store::open(&path)?;
    seed(&store, sessions)?;
    store.index_pending_messages()?;
    println!(
        "dashboard bench: {sessions} sessions x {MESSAGES_PER_SESSION} messages, {CALLS_PER_SESSION} calls each, {PROJECTS} projects x {MEMORIES_PER_PROJECT} memories (seeded and indexed in {:.1} s)",
        seeding.elapsed().as_secs_f64()
    );
    let baseline = read_baseline(&store, &session_id(sessions / 2)?)?;

    let engine = mc_engine::Engine::new(store, mc_core::config::Config::default());
    let settings = ProxySettings {
        listen: "127.0.0.1:0".parse()?,
        upstream_anthropic: "http://127.0.0.1:9".to_owned(),
        upstream_openai: "http://127.0.0.1:9".to_owned(),
        max_request_bytes: 64 << 20,
        context_window: None,
        upstream_idle_timeout: Duration::from_secs(30),
        historian_retry: mc_proxy::RetryPolicy::default(),
        cache_budget: mc_proxy::CacheBudget::default(),
        allowed_hosts: Vec::new(),
        client_limits: mc_proxy::ClientLimits::default(),
        user_config: None,
    };
    let proxy = RunningProxy::start(settings, Ok(engine)).await?;
    let token = load_or_create(dir.path())?.as_str().to_owned();
    let base = format!("http://{}", proxy.local_addr());
    let client = reqwest::Client::new();
    let session = session_id(sessions / 2)?;
    let project = project_id(PROJECTS / 2)?;
    let pages = [
        ("sessions page".to_owned(), "/_magic-context/ui/".to_owned()),
        (
            "sessions API".to_owned(),
            "/_magic-context/api/sessions".to_owned(),
        ),
        (
            "a session's page".to_owned(),
            format!("/_magic-context/ui/sessions/{session}"),
        ),
        (
            "a session's API".to_owned(),
            format!("/_magic-context/api/sessions/{session}"),
        ),
        (
            "memories page".to_owned(),
            format!("/_magic-context/ui/memories?project={project}"),
        ),
        ("runs page".to_owned(), "/_magic-context/ui/runs".to_owned()),
        (
            "search page".to_owned(),
            format!("/_magic-context/ui/search?q=retry+budget+parser&project={project}"),
        ),
        (
            "config page".to_owned(),
            "/_magic-context/ui/config".to_owned(),
        ),
    ];
    println!("| page | p50 ms | p95 ms | bytes | under {TARGET_MS} ms |");
    println!("|---|---|---|---|---|");
    let mut slowest: f64 = 0.0;
    for (name, path) in &pages {
        let mut times = Vec::with_capacity(ROUNDS);
        let mut bytes = 0;
        for _ in 0..ROUNDS {
            let started = Instant::now();
            let answer = client
                .get(format!("{base}{path}"))
                .header("cookie", format!("mc_dashboard={token}"))
                .header(TOKEN_HEADER, &token)
                .send()
                .await?;
            let status = answer.status();
            let body = answer.bytes().await?;
            times.push(started.elapsed().as_secs_f64() * 1000.0);
            if !status.is_success() {
                return Err(format!("{path}: {status}: {}", String::from_utf8_lossy(&body)).into());
            }
            bytes = body.len();
        }
        times.sort_by(f64::total_cmp);
        let (p50, p95) = (percentile(&times, 0.50), percentile(&times, 0.95));
        slowest = slowest.max(p95);
        let met = if p95 <= TARGET_MS { "yes" } else { "NO" };
        println!("| {name} | {p50:.1} | {p95:.1} | {bytes} | {met} |");
    }
    println!(
        "slowest page p95 {slowest:.1} ms (target <= {TARGET_MS} ms: {}); baseline: the store reading one session's {MESSAGES_PER_SESSION} messages, p50 {baseline:.1} ms; the slowest page is {:.1}x that",
        if slowest <= TARGET_MS {
            "met"
        } else {
            "MISSED"
        },
        slowest / baseline.max(f64::EPSILON),
    );
    proxy.shutdown().await;
    Ok(())
}

fn session_id(index: usize) -> Result<SessionId> {
    Ok(SessionId::new(format!("bench-session-{index:03}"))?)
}

fn project_id(index: usize) -> Result<ProjectId> {
    Ok(ProjectId::new(format!("bench-project-{index}"))?)
}

/// Words the seeded messages are made of, so full text has real postings to rank.
const WORDS: &[&str] = &[
    "parser",
    "retry",
    "budget",
    "cache",
    "session",
    "window",
    "token",
    "compartment",
    "history",
    "memory",
    "search",
    "index",
    "render",
    "stream",
    "upstream",
    "client",
    "store",
    "ledger",
    "config",
    "project",
    "failing",
    "test",
    "fixed",
    "module",
    "function",
    "value",
];

fn message(session: usize, ordinal: u64) -> Message {
    let mut text = String::new();
    let mut state = (session as u64) * 7_919 + ordinal * 104_729;
    for _ in 0..30 {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        text.push_str(WORDS[(state >> 33) as usize % WORDS.len()]);
        text.push(' ');
    }
    if ordinal.is_multiple_of(2) {
        Message::new(Role::User, vec![Part::text(text)])
    } else {
        Message::new(Role::Assistant, vec![Part::text(text)])
    }
}

fn seed(store: &Store, sessions: usize) -> Result<()> {
    for index in 0..sessions {
        let id = session_id(index)?;
        let project = project_id(index % PROJECTS)?;
        let messages: Vec<Message> = (0..MESSAGES_PER_SESSION)
            .map(|ordinal| message(index, ordinal))
            .collect();
        let started = NOW_MS - (sessions - index) as i64 * 3_600_000;
        store.write(|tx| {
            tx.upsert_session(
                &NewSession {
                    id: id.clone(),
                    host: Host::ClaudeCode,
                    project: Some(project.clone()),
                },
                started,
            )?;
            tx.append_messages(&id, 0, &messages, started)?;
            for call in 0..CALLS_PER_SESSION {
                tx.record_call(&call_row(&id, started, call))?;
            }
            Ok(())
        })?;
    }
    for project in 0..PROJECTS {
        let id = project_id(project)?;
        store.write(|tx| {
            for memory in 0..MEMORIES_PER_PROJECT {
                let content = format!(
                    "fact {memory} of project {project}: the {} runs before the {}",
                    WORDS[memory % WORDS.len()],
                    WORDS[(memory * 7 + 3) % WORDS.len()]
                );
                tx.add_memory(
                    &id,
                    &NewMemory {
                        category: MemoryCategory::ProjectRules,
                        content: &content,
                        source: MemorySource::Historian,
                        permanent: false,
                    },
                    NOW_MS,
                )?;
            }
            Ok(())
        })?;
    }
    Ok(())
}

fn call_row(session: &SessionId, started: i64, call: usize) -> CallRow {
    let bust = call.is_multiple_of(25);
    CallRow {
        session: Some(session.clone()),
        pass_seq: Some(call as u64 + 1),
        started_ms: started + call as i64 * 10_000,
        route: "anthropic".to_owned(),
        model: "claude-sonnet-4-5".to_owned(),
        pass_kind: Some(if bust { "soft_bust" } else { "cache_hit" }.to_owned()),
        bust_cause: bust.then(|| "working_set".to_owned()),
        status: 200,
        uncached_tokens: Some(50),
        cache_write_tokens: Some(if bust { 20_000 } else { 800 }),
        cache_read_tokens: Some(if bust { 0 } else { 40_000 + call as u64 * 100 }),
        output_tokens: Some(300),
        first_byte_ms: Some(400),
        total_ms: 2_000,
        stop_reason: Some("end_turn".to_owned()),
        usable_window: Some(180_000),
        overflow_retry: false,
        error: None,
        client_prompt_tokens: Some(60_000 + call as u64 * 800),
        client_fixed_tokens: Some(18_000),
        window_tokens: Some(200_000),
    }
}

/// The bare store's time to read `session`'s whole log: what any page showing a session
/// could pay at most for its messages.
fn read_baseline(store: &Store, session: &SessionId) -> Result<f64> {
    let mut times = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let log = store.read(|tx| tx.messages(session, 0..MESSAGES_PER_SESSION))?;
        std::hint::black_box(log);
        times.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    Ok(percentile(&times, 0.50))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let index = ((sorted.len() as f64 * p).ceil() as usize).saturating_sub(1);
    sorted.get(index).copied().unwrap_or(f64::NAN)
}
