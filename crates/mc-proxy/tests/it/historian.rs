//! The historian through the proxy, against a real simulator on loopback.
//!
//! A client holds one long conversation with a small window ([`WINDOW_TOKENS`]) through a
//! proxy whose historian is on. The simulator answers the conversation from a script and
//! plays the historian too: honestly, or failing as [`HistorianMode`] says.
//!
//! Honest, the history must replace what it covers: compartments are stored, a later
//! upstream request carries their heading lines in `m[0]` or `m[1]`, the raw messages they
//! cover are gone from it, and every call stays inside the window although the conversation
//! outgrows it. Failing (a schema-breaking answer, an overloaded provider, a call that never
//! returns), the client must not notice: every request succeeds, none waits for the
//! historian, nothing is published, the raw log keeps every message, and the failed run is
//! recorded.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mc_core::SessionId;
use mc_core::config::Config;
use mc_proxy::RetryPolicy;
use mc_sim::CallRecord;
use mc_sim::script::Script;
use mc_sim::server::{HistorianMode, Responder, SimConfig, SimServer};
use mc_store::HistorianRun;
use serde_json::{Value, json};

use crate::support::{
    MODEL, Proxy, Upstream, anthropic_request, assistant, post, settings, tap, user,
};

/// The window of the simulator and the proxy: small, so a few dozen turns outgrow it.
pub(crate) const WINDOW_TOKENS: u64 = 24_000;
/// The ledger label of the client's own calls (historian calls carry none).
const AGENT_LABEL: &str = "agent";
/// The session every request names.
const SESSION: &str = "historian-it";
/// Words of the conversation's filler, each one o200k token with its leading space.
const WORDS: [&str; 32] = [
    "apple", "bread", "cloud", "delta", "eagle", "field", "grape", "house", "input", "joint",
    "lemon", "metal", "north", "ocean", "paper", "queen", "river", "stone", "table", "union",
    "value", "water", "yield", "alpha", "bench", "chain", "drive", "entry", "frame", "guard",
    "heart", "index",
];
/// Filler words per message: about 350 tokens, so a turn adds about 700.
const MESSAGE_WORDS: usize = 340;

/// The marker that opens message `ordinal`'s text: unique, so its presence in an upstream
/// body says whether that raw message was sent.
fn marker(ordinal: usize) -> String {
    format!("RAW-MESSAGE-{ordinal:03}")
}

/// Message `ordinal`'s text: its marker and filler picked by a fixed generator, so no two
/// messages repeat each other and every run sends the same bytes.
pub(crate) fn message_text(ordinal: usize) -> String {
    let mut state = (ordinal as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut text = marker(ordinal);
    for _ in 0..MESSAGE_WORDS {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        text.push(' ');
        text.push_str(WORDS[(state >> 59) as usize]);
    }
    text
}

/// A simulator answering every call with a short text, historian calls as `mode` says.
pub(crate) async fn simulator(mode: HistorianMode) -> SimServer {
    let script = json!([{"repeat": 1000, "content": [{"type": "text", "text": "Noted."}]}]);
    let script = Script::parse(&script.to_string(), "historian test").unwrap();
    let config = SimConfig::new(Responder::Script(script))
        .with_window(WINDOW_TOKENS)
        .with_historian(mode);
    SimServer::bind("127.0.0.1:0".parse().unwrap(), config)
        .await
        .unwrap()
}

/// A proxy in front of `upstream` with the historian on, the window at [`WINDOW_TOKENS`]
/// and the historian's calls timed and retried by `retry`.
pub(crate) async fn proxy(upstream: &str, retry: RetryPolicy) -> Proxy {
    let mut settings = settings(upstream);
    settings.context_window = Some(WINDOW_TOKENS);
    settings.historian_retry = retry;
    let mut config = Config::default();
    config.historian.enabled = true;
    config.tools.mode = mc_core::config::ToolsMode::Off;
    Proxy::start_with_config(settings, config).await
}

/// Unix milliseconds, the clock the proxy stamps historian runs with.
fn now_ms() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    i64::try_from(since.as_millis()).unwrap()
}

/// One client request: when it was sent and answered (unix ms), and its status.
#[derive(Debug, Clone, Copy)]
struct Sent {
    sent_ms: i64,
    done_ms: i64,
    status: u16,
}

impl Sent {
    fn latency_ms(&self) -> i64 {
        self.done_ms - self.sent_ms
    }
}

/// The client's side of the conversation.
struct Conversation {
    messages: Vec<Value>,
    sent: Vec<Sent>,
}

impl Conversation {
    fn new() -> Self {
        Self {
            messages: Vec::new(),
            sent: Vec::new(),
        }
    }

    /// Adds the next user message, sends the conversation and, once answered, adds the
    /// assistant's reply as the client would keep it.
    async fn turn(&mut self, proxy: &Proxy) {
        self.messages.push(user(&message_text(self.messages.len())));
        let sent_ms = now_ms();
        let reply = post(
            proxy,
            "/v1/messages",
            &[
                ("x-api-key", "sk-test"),
                ("anthropic-version", "2023-06-01"),
                ("x-magic-context-session", SESSION),
                ("x-sim-label", AGENT_LABEL),
            ],
            &anthropic_request(&self.messages),
        )
        .await;
        self.sent.push(Sent {
            sent_ms,
            done_ms: now_ms(),
            status: reply.status.as_u16(),
        });
        self.messages
            .push(assistant(&message_text(self.messages.len())));
    }

    /// Messages the client sent with its last request (the last reply is not sent yet).
    fn sent_messages(&self) -> u64 {
        self.messages.len() as u64 - 1
    }
}

fn session() -> SessionId {
    SessionId::new(SESSION).unwrap()
}

/// The historian runs recorded for the session, newest first.
fn runs(proxy: &Proxy) -> Vec<HistorianRun> {
    proxy
        .store()
        .read(|tx| tx.historian_runs(&session(), 100))
        .unwrap()
}

/// The client's calls in the simulator's ledger.
fn agent_calls(ledger: &[CallRecord]) -> impl Iterator<Item = &CallRecord> {
    ledger
        .iter()
        .filter(|call| call.label.as_deref() == Some(AGENT_LABEL))
}

/// Whether `body` forces the historian's tool.
fn is_historian_request(body: &Value) -> bool {
    body["tool_choice"]["name"] == "record_history"
}

/// Waits until every historian call the tap relayed belongs to a recorded run, so the next
/// pass sees whatever the run published (at most `limit`).
async fn settle(proxy: &Proxy, upstream: &Upstream, limit: Duration) {
    // A run starts after the pass that called for it, on a task of its own: on a loaded
    // machine it may not have asked yet when the turn returns, so every asked call recorded
    // is not enough; nothing new asked for a while is.
    const QUIET: Duration = Duration::from_millis(300);
    let started = Instant::now();
    let mut last = (u32::MAX, Instant::now());
    loop {
        let asked = upstream
            .seen()
            .iter()
            .filter(|seen| is_historian_request(&seen.json()))
            .count() as u32;
        if asked != last.0 {
            last = (asked, Instant::now());
        }
        let recorded: u32 = runs(proxy).iter().map(|run| run.calls).sum();
        let quiet = last.1.elapsed() >= QUIET;
        if (recorded >= asked && quiet) || started.elapsed() > limit {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The texts of `message`'s content, joined.
fn texts(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| block["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The ordinal of a raw message's text as the proxy sends it (`§N§ RAW-MESSAGE-NNN …`), or
/// `None` for any other text (the head: `m[0]` with the pinned first message, `m[1]`).
fn raw_ordinal(text: &str) -> Option<u64> {
    let rest = text.strip_prefix('§')?;
    let (tag, rest) = rest.split_once("§ ")?;
    tag.parse::<u64>().ok()?;
    let digits = rest.strip_prefix("RAW-MESSAGE-")?.get(..3)?;
    digits.parse().ok()
}

/// The range of a history heading line, `### START-END | … | title`.
pub(crate) fn heading_range(line: &str) -> Option<(u64, u64)> {
    let (range, _) = line.strip_prefix("### ")?.split_once(" | ")?;
    let (start, end) = range.split_once('-')?;
    Some((start.parse().ok()?, end.parse().ok()?))
}

/// A client request as the proxy sent it upstream.
#[derive(Debug)]
struct Upstreamed {
    /// The ranges of the head's heading lines, in order.
    headings: Vec<(u64, u64)>,
    /// The ordinals of the raw messages after the head, in order.
    raw: Vec<u64>,
}

impl Upstreamed {
    fn read(body: &Value) -> Self {
        let mut headings = Vec::new();
        let mut raw = Vec::new();
        for message in body["messages"].as_array().unwrap() {
            let text = texts(message);
            match raw_ordinal(&text) {
                Some(ordinal) => raw.push(ordinal),
                None => headings.extend(text.lines().filter_map(heading_range)),
            }
        }
        Self { headings, raw }
    }

    /// The first ordinal the head's history does not cover.
    fn covered_until(&self) -> u64 {
        self.headings.last().map_or(0, |&(_, end)| end + 1)
    }
}

/// Turns of the honest conversation: about 30K tokens in all, well over the window.
const HONEST_TURNS: usize = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn honest_history_replaces_the_raw_messages_it_covers_inside_the_window() {
    let sim = simulator(HistorianMode::Honest).await;
    let (upstream, _relayed) = tap(sim.local_addr()).await;
    let proxy = proxy(&upstream.url(), RetryPolicy::default()).await;
    let mut conversation = Conversation::new();
    for _ in 0..HONEST_TURNS {
        conversation.turn(&proxy).await;
        // Publishing is asynchronous: letting each run finish before the next turn makes
        // the passes that move the boundary the same on every run of the test.
        settle(&proxy, &upstream, Duration::from_secs(10)).await;
    }
    let ledger = sim.ledger();
    let store = proxy.store();
    let compartments = store.read(|tx| tx.compartments(&session())).unwrap();
    let state = store
        .read(|tx| tx.engine_state(&session()))
        .unwrap()
        .unwrap();
    let boundary = serde_json::from_str::<Value>(&state).unwrap()["boundary"]
        .as_u64()
        .unwrap();
    let requests: Vec<Upstreamed> = upstream
        .seen()
        .iter()
        .map(|seen| seen.json())
        .filter(|body| !is_historian_request(body))
        .map(|body| Upstreamed::read(&body))
        .collect();
    let conversation_tokens = tokio::task::spawn_blocking({
        let messages = conversation.messages.clone();
        move || {
            let counter = mc_sim::O200kCounter::load().unwrap();
            messages
                .iter()
                .map(|message| mc_sim::CountTokens::count_tokens(&counter, &texts(message)))
                .sum::<u64>()
        }
    })
    .await
    .unwrap();
    let peak = agent_calls(&ledger)
        .map(|call| call.prompt_tokens)
        .max()
        .unwrap();
    let with_history = requests
        .iter()
        .filter(|request| !request.headings.is_empty())
        .count();
    eprintln!(
        "honest historian: {HONEST_TURNS} turns, conversation {conversation_tokens} tokens, \
         peak prompt {peak} of {WINDOW_TOKENS}, {} runs, {} compartments, boundary {boundary}, \
         {with_history} requests with history",
        runs(&proxy).len(),
        compartments.len(),
    );
    let context = format!("ledger: {ledger:#?}\nruns: {:#?}", runs(&proxy));

    // The conversation outgrew the window, yet every call was served inside it.
    assert!(
        conversation_tokens > WINDOW_TOKENS,
        "{conversation_tokens} tokens never needed the history"
    );
    assert!(conversation.sent.iter().all(|sent| sent.status == 200));
    assert_eq!(agent_calls(&ledger).count(), HONEST_TURNS, "{context}");
    for call in agent_calls(&ledger) {
        assert!(
            call.status == 200 && call.prompt_tokens <= WINDOW_TOKENS,
            "call {} was {} tokens, status {}\n{context}",
            call.seq,
            call.prompt_tokens,
            call.status
        );
    }

    // Compartments were stored, and the last request's head names every one behind the
    // boundary, which is past the first message (so the head pinned it). The newest it shows
    // may have been provisional and read again after that request (settling lets the last
    // run publish), so the store must agree up to where that one starts.
    assert!(compartments.len() >= 2, "{context}");
    let last = requests.last().unwrap();
    assert!(boundary > 1, "the boundary never moved\n{context}");
    assert_eq!(last.covered_until(), boundary);
    let newest_shown = last.headings.last().map_or(0, |&(start, _)| start);
    let settled = |ranges: Vec<(u64, u64)>| -> Vec<(u64, u64)> {
        ranges
            .into_iter()
            .filter(|&(_, end)| end < newest_shown)
            .collect()
    };
    let stored: Vec<(u64, u64)> = compartments
        .iter()
        .map(|compartment| (compartment.start_ordinal, compartment.end_ordinal))
        .collect();
    assert_eq!(settled(last.headings.clone()), settled(stored), "{context}");
    assert!(
        compartments
            .iter()
            .any(|compartment| compartment.start_ordinal == newest_shown),
        "{context}"
    );

    // In every request, the history and the raw tail meet exactly: the history covers
    // 0..B without gaps, and the raw messages are B to the newest, none of those the
    // history covers.
    for (index, request) in requests.iter().enumerate() {
        let mut next = 0;
        for &(start, end) in &request.headings {
            assert!(
                start == next && end >= start,
                "request {index}: history {:?} has a gap or an overlap",
                request.headings
            );
            next = end + 1;
        }
        let newest = 2 * index as u64;
        let expected: Vec<u64> = (request.covered_until()..=newest).collect();
        assert_eq!(
            request.raw, expected,
            "request {index}: the raw tail must start where the history ends"
        );
    }
    proxy.shutdown().await;
    sim.shutdown().await.unwrap();
}

/// The historian's attempt budget in the failure tests: attempts short enough that a
/// stalled call fails within seconds, waits long enough that a failing run outlasts
/// several requests.
const FAULT_RETRY: RetryPolicy = RetryPolicy {
    max_attempts: 3,
    attempt_timeout: Duration::from_secs(2),
    base_backoff: Duration::from_secs(1),
    max_backoff: Duration::from_secs(2),
    max_retry_after: Duration::from_secs(2),
};
/// Turns of the failure tests: the historian's trigger is reached about half-way, and the
/// conversation (about 18K tokens) fits the window unsummarised.
const FAULT_TURNS: usize = 24;

/// A conversation whose historian fails as `mode` says, once its run is recorded.
struct FaultRun {
    conversation: Conversation,
    ledger: Vec<CallRecord>,
    run: HistorianRun,
    compartments: usize,
    summarised_until: u64,
    stored_messages: u64,
}

impl FaultRun {
    async fn go(mode: HistorianMode) -> Self {
        let sim = simulator(mode).await;
        let base = format!("http://{}", sim.local_addr());
        let proxy = proxy(&base, FAULT_RETRY).await;
        let mut conversation = Conversation::new();
        for _ in 0..FAULT_TURNS {
            conversation.turn(&proxy).await;
        }
        let waited = Instant::now();
        let recorded = loop {
            let recorded = runs(&proxy);
            if !recorded.is_empty() || waited.elapsed() > Duration::from_secs(30) {
                break recorded;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let [run] = recorded.as_slice() else {
            panic!("one historian run expected ({mode}), got {recorded:#?}");
        };
        let store = proxy.store();
        let (compartments, summarised_until, stored_messages) = store
            .read(|tx| {
                Ok((
                    tx.compartments(&session())?.len(),
                    tx.summarised_until(&session())?,
                    tx.message_count(&session())?,
                ))
            })
            .unwrap();
        let fault = Self {
            conversation,
            ledger: sim.ledger(),
            run: run.clone(),
            compartments,
            summarised_until,
            stored_messages,
        };
        eprintln!(
            "historian {mode}: {FAULT_TURNS} requests, slowest {} ms; run {} after {} ms and \
             {} calls, {} requests inside it",
            fault
                .conversation
                .sent
                .iter()
                .map(Sent::latency_ms)
                .max()
                .unwrap_or(0),
            fault.run.outcome,
            fault.run.finished_ms - fault.run.started_ms,
            fault.run.calls,
            fault.requests_during_run(),
        );
        proxy.shutdown().await;
        sim.shutdown().await.unwrap();
        fault
    }

    /// What every failure mode must hold: each request served inside the window, in less
    /// time than one historian attempt may take; nothing published; every message sent
    /// stored; the run recorded as failed.
    fn assert_client_unaffected(&self) {
        let context = format!("run: {:#?}\nledger: {:#?}", self.run, self.ledger);
        for sent in &self.conversation.sent {
            assert_eq!(sent.status, 200, "{context}");
            assert!(
                sent.latency_ms() < FAULT_RETRY.attempt_timeout.as_millis() as i64,
                "a request took {} ms: it waited for the historian\n{context}",
                sent.latency_ms()
            );
        }
        assert_eq!(agent_calls(&self.ledger).count(), FAULT_TURNS, "{context}");
        assert!(
            agent_calls(&self.ledger)
                .all(|call| call.status == 200 && call.prompt_tokens <= WINDOW_TOKENS),
            "{context}"
        );
        assert_eq!((self.compartments, self.summarised_until), (0, 0));
        assert_eq!(self.stored_messages, self.conversation.sent_messages());
        assert_eq!(self.run.outcome, "failed", "{context}");
        assert_eq!(self.run.compartments, 0);
    }

    /// The requests sent and answered while the run was in flight.
    fn requests_during_run(&self) -> usize {
        self.conversation
            .sent
            .iter()
            .filter(|sent| {
                sent.sent_ms >= self.run.started_ms && sent.done_ms <= self.run.finished_ms
            })
            .count()
    }

    /// The simulator's rows of historian calls (the client labels its own).
    fn historian_calls(&self) -> Vec<&CallRecord> {
        self.ledger
            .iter()
            .filter(|call| call.label.as_deref() != Some(AGENT_LABEL))
            .collect()
    }

    fn detail(&self) -> &str {
        self.run.detail.as_deref().unwrap_or_default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_history_answers_are_refused_and_never_published() {
    let fault = FaultRun::go(HistorianMode::Garbage).await;
    fault.assert_client_unaffected();
    // Each of the two models (the small one, then the session's) got one repair round.
    assert_eq!(fault.run.calls, 4, "{:#?}", fault.run);
    let models: Vec<&str> = fault
        .historian_calls()
        .iter()
        .map(|call| call.model.as_str())
        .collect();
    assert_eq!(
        models,
        ["claude-haiku-4-5", "claude-haiku-4-5", MODEL, MODEL]
    );
    assert_eq!(
        fault.detail().matches("answer refused twice").count(),
        2,
        "{}",
        fault.detail()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overloaded_historian_fails_its_run_while_requests_go_on() {
    let fault = FaultRun::go(HistorianMode::Overloaded).await;
    fault.assert_client_unaffected();
    // Both models were tried, each for every attempt its policy allows, all refused.
    let refused: Vec<u16> = fault
        .historian_calls()
        .iter()
        .map(|call| call.status)
        .collect();
    assert_eq!(refused, [529; 6], "{:#?}", fault.ledger);
    assert_eq!(fault.run.calls, 2);
    assert_eq!(
        fault.detail().matches("HTTP 529").count(),
        2,
        "{}",
        fault.detail()
    );
    // The retries' backoff kept the run in flight over several requests.
    assert!(
        fault.requests_during_run() >= 3,
        "{} requests during the run {:#?}; the test did not overlap them",
        fault.requests_during_run(),
        fault.run
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_historian_call_never_delays_a_request() {
    let fault = FaultRun::go(HistorianMode::Stall).await;
    fault.assert_client_unaffected();
    // Each model's call hung until its attempt timed out: the run was in flight for at
    // least two attempts, and the requests sent meanwhile were answered without it.
    assert_eq!(fault.run.calls, 2);
    assert_eq!(
        fault
            .detail()
            .matches("no complete answer within 2000 ms")
            .count(),
        2,
        "{}",
        fault.detail()
    );
    let in_flight_ms = fault.run.finished_ms - fault.run.started_ms;
    assert!(in_flight_ms >= 2 * FAULT_RETRY.attempt_timeout.as_millis() as i64);
    assert!(
        fault.requests_during_run() >= 3,
        "{} requests during the run {:#?}; the test did not overlap them",
        fault.requests_during_run(),
        fault.run
    );
    assert!(
        fault.historian_calls().is_empty(),
        "a stalled call is never answered"
    );
}
