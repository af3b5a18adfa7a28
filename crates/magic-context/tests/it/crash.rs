//! `kill -9` of `serve` in the middle of many concurrent streaming sessions, then a restart
//! on the same store with every client sending its unanswered request again.
//!
//! What must hold (DESIGN §7): no raw message the clients sent is lost, every session's hash
//! chain verifies (through `doctor`), and a request sent again goes upstream byte for byte as
//! it went before the kill, since the pass is decided from the stored state alone. Requests
//! the kill stopped before they went upstream cannot be compared that way, so every turn's
//! upstream body is also compared with the same turn of a run nobody killed. Each kill
//! point is its own test on a fresh store; each prints its counts, so a run with
//! `--nocapture` gives the figures. `MC_CRASH_SESSIONS` sets the number of sessions (20 by
//! default; 100 for the heavier run).

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mc_core::{SessionId, joined_texts};
use mc_store::Store;

use crate::support::Machine;
use crate::support::recording_relay::{Relay, RelayLog};
use crate::support::servers::Server;
use crate::support::stream_client::{Fleet, SessionRun, run_session};

/// Turns each session plays: its conversation grows to this many user messages.
const TURNS: usize = 6;

/// The window both servers use: far above what the sessions reach, so no pass drops
/// anything and the check of stored messages is exact.
const WINDOW_TOKENS: u64 = 200_000;

/// How long a kill point may take to arrive before the test says it never did.
const KILL_DEADLINE: Duration = Duration::from_secs(120);

/// When `serve` is killed.
#[derive(Debug, Clone, Copy)]
enum KillPoint {
    /// While many answers are being streamed back to their clients.
    MidStream,
    /// While requests have reached the proxy but not yet the upstream: being ingested and
    /// passed.
    Ingest,
    /// The instant the store's write-ahead log is seen written (its size or modification
    /// time changes): a pass's transaction is being written or has just committed.
    WalCommit,
    /// After a random delay (the seed is printed, and `MC_CRASH_SEED` replays it).
    RandomDelay,
}

/// Each session's acknowledged messages, as (role, text).
type Acknowledged = HashMap<String, Vec<(String, String)>>;

/// The store as the kill left it, before any restart touched it.
#[derive(Debug)]
struct AtKill {
    /// Messages the clients had been answered for (their last fully answered requests).
    acknowledged: usize,
    messages_stored: usize,
    lost: usize,
    corrupted: usize,
}

/// What one run found after the restart and the retries.
#[derive(Debug, Default)]
struct Counts {
    sessions: usize,
    messages_stored: usize,
    lost: usize,
    corrupted: usize,
    retried: usize,
    retried_identical: usize,
    retried_unsent_before: usize,
    retried_differ: Vec<String>,
    /// Turns whose last upstream body differs from the same turn of an uninterrupted run.
    differ_from_uninterrupted: Vec<String>,
}

/// How the proxy treats these clients' answers, which decides what a kill cuts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answers {
    /// The default for a client without MCP: the proxy offers its own tools, reads each
    /// answer whole (it must see whether the model called them) and sends it assembled.
    Assembled,
    /// `tools.mode = "off"` (as for Claude Code): answers stream through live, so a kill
    /// cuts the client's stream itself.
    Live,
}

#[test]
fn crash_mid_stream_loses_nothing() {
    crash_run(KillPoint::MidStream, Answers::Assembled);
}

#[test]
fn crash_mid_stream_of_live_answers_loses_nothing() {
    crash_run(KillPoint::MidStream, Answers::Live);
}

#[test]
fn crash_during_ingest_loses_nothing() {
    crash_run(KillPoint::Ingest, Answers::Assembled);
}

#[test]
fn crash_during_a_wal_commit_loses_nothing() {
    crash_run(KillPoint::WalCommit, Answers::Assembled);
}

#[test]
fn crash_after_a_random_delay_loses_nothing() {
    crash_run(KillPoint::RandomDelay, Answers::Assembled);
}

/// The servers of one run, on a fresh machine: the simulator, the relay in front of it, and
/// `serve` in front of the relay with its store in `data/`.
struct Stand {
    machine: Machine,
    _sim: Server,
    relay: Relay,
    serve: Server,
}

impl Stand {
    fn start(answers: Answers) -> Self {
        let machine = Machine::fresh();
        if answers == Answers::Live {
            // Where `serve` looks for its config in the machine's environment.
            let config = machine.path("xdg").join("magic-context");
            std::fs::create_dir_all(&config).unwrap();
            std::fs::write(
                config.join("magic-context.jsonc"),
                r#"{"tools": {"mode": "off"}}"#,
            )
            .unwrap();
        }
        let script = machine.path("script.json");
        let answer = "Here is what each function does, one line each. ".repeat(30);
        let script_json = serde_json::json!({"turns": [], "final_text": answer});
        std::fs::write(&script, script_json.to_string()).unwrap();
        let sim = Server::sim(&script, WINDOW_TOKENS, 1.0);
        let relay = Relay::start(&sim.base_url);
        let serve = Server::serve(
            &machine,
            &relay.base_url,
            &machine.path("data"),
            WINDOW_TOKENS,
        );
        Self {
            machine,
            _sim: sim,
            relay,
            serve,
        }
    }
}

fn session_count() -> usize {
    std::env::var("MC_CRASH_SESSIONS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(20)
}

/// Every turn's upstream body in a run of the same sessions that nobody killed: what each
/// interrupted request would have sent. Computed once per test process and kind of answers.
fn uninterrupted_bodies(answers: Answers) -> &'static HashMap<String, Vec<u8>> {
    static ASSEMBLED: OnceLock<HashMap<String, Vec<u8>>> = OnceLock::new();
    static LIVE: OnceLock<HashMap<String, Vec<u8>>> = OnceLock::new();
    let bodies = match answers {
        Answers::Assembled => &ASSEMBLED,
        Answers::Live => &LIVE,
    };
    bodies.get_or_init(|| {
        let stand = Stand::start(answers);
        let fleet = Arc::new(Fleet::default());
        fleet.proxy.publish(&stand.serve.base_url);
        let clients: Vec<_> = (0..session_count())
            .map(|index| {
                let fleet = Arc::clone(&fleet);
                std::thread::spawn(move || run_session(index, TURNS, &fleet))
            })
            .collect();
        for client in clients {
            let run = client.join().unwrap();
            assert_eq!(run.failure, None, "{}", stand.serve.stderr());
            assert_eq!(run.retried, Vec::<String>::new(), "nothing was killed");
        }
        stand.relay.log.last_bodies()
    })
}

fn crash_run(point: KillPoint, answers: Answers) {
    let sessions = session_count();
    let uninterrupted = uninterrupted_bodies(answers);
    let Stand {
        machine,
        _sim,
        relay,
        serve,
    } = Stand::start(answers);
    let data = machine.path("data");
    let fleet = Arc::new(Fleet::default());
    fleet.proxy.publish(&serve.base_url);

    let clients: Vec<_> = (0..sessions)
        .map(|index| {
            let fleet = Arc::clone(&fleet);
            std::thread::spawn(move || run_session(index, TURNS, &fleet))
        })
        .collect();
    let started = Instant::now();
    let killed_at = wait_for(point, sessions, &relay.log, &fleet, &data);
    let killed_after = started.elapsed();
    let stderr_before = serve.stderr();
    drop(serve); // SIGKILL, then reaped
    let acknowledged = fleet.acknowledged.lock().unwrap().clone();
    let at_kill = check_at_kill(&data, &acknowledged);
    let serve = Server::serve(&machine, &relay.base_url, &data, WINDOW_TOKENS);
    fleet.proxy.publish(&serve.base_url);
    let runs: Vec<SessionRun> = clients
        .into_iter()
        .map(|client| client.join().unwrap())
        .collect();
    let stderr_after = serve.stderr();
    drop(serve);

    let failures: Vec<&String> = runs.iter().filter_map(|run| run.failure.as_ref()).collect();
    assert!(
        failures.is_empty(),
        "sessions gave up: {failures:?}\n{stderr_before}\n{stderr_after}"
    );
    let doctor = machine.run(
        &["doctor", "--json"],
        &[("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())],
    );
    let report = doctor.json();
    let mut counts = count(&runs, &report, &data, &relay.log);
    let bodies = relay.log.last_bodies();
    let mut keys: Vec<&String> = uninterrupted.keys().collect();
    keys.sort();
    counts.differ_from_uninterrupted = keys
        .into_iter()
        .filter(|key| bodies.get(*key) != uninterrupted.get(*key))
        .cloned()
        .collect();
    eprintln!(
        "crash {point:?} ({answers:?} answers): killed at {:.2}s ({killed_at}); at the kill {} messages acknowledged, \
         {} stored, {} lost, {} sessions corrupted",
        killed_after.as_secs_f64(),
        at_kill.acknowledged,
        at_kill.messages_stored,
        at_kill.lost,
        at_kill.corrupted,
    );
    eprintln!(
        "crash {point:?} ({answers:?} answers): after restart and retries ({:.2}s in all): {} sessions, {} messages \
         stored, {} lost, {} corrupted, {} retried ({} identical upstream bytes, {} not sent \
         upstream before the kill, {} differ); {} of {} turns' upstream bodies differ from \
         an uninterrupted run",
        started.elapsed().as_secs_f64(),
        counts.sessions,
        counts.messages_stored,
        counts.lost,
        counts.corrupted,
        counts.retried,
        counts.retried_identical,
        counts.retried_unsent_before,
        counts.retried_differ.len(),
        counts.differ_from_uninterrupted.len(),
        uninterrupted.len(),
    );
    assert_eq!((at_kill.lost, at_kill.corrupted), (0, 0), "{at_kill:?}");
    assert_eq!(doctor.code, Some(0), "{}", doctor.stdout);
    assert_eq!((counts.lost, counts.corrupted), (0, 0), "{counts:?}");
    assert!(counts.retried > 0, "the kill interrupted no request");
    assert_eq!(counts.retried_differ, Vec::<String>::new(), "{counts:?}");
    assert_eq!(
        counts.differ_from_uninterrupted,
        Vec::<String>::new(),
        "{counts:?}"
    );
    assert_eq!(counts.sessions, sessions, "a session was forked or lost");
}

/// Waits until the kill point arrives; says what it saw.
fn wait_for(
    point: KillPoint,
    sessions: usize,
    log: &RelayLog,
    fleet: &Fleet,
    data: &Path,
) -> String {
    let deadline = Instant::now() + KILL_DEADLINE;
    // Every kill point waits until each session has had two answers, so the store holds
    // history that a bad restart could damage.
    let warmed = || {
        let acknowledged = fleet.acknowledged.lock().unwrap();
        acknowledged.len() == sessions && acknowledged.values().all(|messages| messages.len() >= 3)
    };
    let random_delay = if matches!(point, KillPoint::RandomDelay) {
        let seed = std::env::var("MC_CRASH_SEED")
            .ok()
            .and_then(|value| value.parse().ok())
            .unwrap_or_else(|| {
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap()
                    .subsec_nanos()
            });
        eprintln!("crash RandomDelay seed {seed}");
        Duration::from_millis(u64::from(seed % 1000))
    } else {
        Duration::ZERO
    };
    let mut wal_seen = None;
    let mut warmed_at = None;
    loop {
        assert!(Instant::now() < deadline, "kill point {point:?} never came");
        if warmed() {
            let since = *warmed_at.get_or_insert_with(Instant::now);
            let streaming = log.streaming.load(Ordering::SeqCst);
            let waiting = fleet
                .sent
                .load(Ordering::SeqCst)
                .saturating_sub(log.received.load(Ordering::SeqCst));
            let reached = match point {
                KillPoint::MidStream => (streaming >= sessions.div_ceil(2))
                    .then(|| format!("{streaming} answers streaming")),
                KillPoint::Ingest => (waiting >= sessions.div_ceil(10).max(2))
                    .then(|| format!("{waiting} requests inside the proxy")),
                KillPoint::WalCommit => {
                    // Once checkpointed, the log is rewritten from its start without growing,
                    // so its modification time is what shows a write.
                    let seen = std::fs::metadata(data.join("context.db-wal"))
                        .and_then(|meta| Ok((meta.len(), meta.modified()?)))
                        .ok();
                    let written = wal_seen.is_some() && seen != wal_seen;
                    wal_seen = seen;
                    written.then(|| {
                        let len = seen.map(|(len, _)| len);
                        format!("write-ahead log written, {len:?} bytes")
                    })
                }
                KillPoint::RandomDelay => (since.elapsed() >= random_delay)
                    .then(|| format!("{} ms after warm-up", random_delay.as_millis())),
            };
            if let Some(reached) = reached {
                return reached;
            }
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Opens the store the kill left (recovering its WAL, as a restart would) and checks that
/// every acknowledged message is stored and every chain verifies.
fn check_at_kill(data: &Path, acknowledged: &Acknowledged) -> AtKill {
    let store = Store::open(data.join("context.db")).unwrap();
    let (messages_stored, lost) = stored_and_lost(&store, acknowledged);
    let chains = store.read(|tx| tx.verify_chains()).unwrap();
    AtKill {
        acknowledged: acknowledged.values().map(Vec::len).sum(),
        messages_stored,
        lost,
        corrupted: chains.broken.len(),
    }
}

/// All messages stored, and how many acknowledged ones are missing: a message counts as
/// stored when the row at its ordinal in its session has its role and contains its text.
fn stored_and_lost(store: &Store, acknowledged: &Acknowledged) -> (usize, usize) {
    store
        .read(|tx| {
            let mut stored_count = 0;
            for session in tx.list_sessions(usize::MAX)? {
                stored_count += tx.messages(&session.id, ..)?.len();
            }
            let mut lost = 0;
            for (session, messages) in acknowledged {
                let stored = tx.messages(&SessionId::new(session.as_str()).unwrap(), ..)?;
                let kept = |(ordinal, (role, text)): (usize, &(String, String))| {
                    stored.get(ordinal).is_some_and(|row| {
                        row.message.role.as_str() == role
                            && joined_texts(&row.message.parts).contains(text.as_str())
                    })
                };
                lost += messages
                    .iter()
                    .enumerate()
                    .filter(|&pair| !kept(pair))
                    .count();
            }
            Ok((stored_count, lost))
        })
        .unwrap()
}

/// Compares what the clients had answered with what the store holds and the upstream saw.
fn count(runs: &[SessionRun], doctor: &serde_json::Value, data: &Path, log: &RelayLog) -> Counts {
    let store = Store::open(data.join("context.db")).unwrap();
    let acknowledged: Acknowledged = runs
        .iter()
        .map(|run| (run.session.clone(), run.acknowledged.clone()))
        .collect();
    let (messages_stored, lost) = stored_and_lost(&store, &acknowledged);
    let mut counts = Counts {
        sessions: store.read(|tx| tx.list_sessions(usize::MAX)).unwrap().len(),
        messages_stored,
        lost,
        corrupted: doctor["chains"]["broken"]
            .as_array()
            .map_or(usize::MAX, Vec::len),
        ..Counts::default()
    };
    for key in runs.iter().flat_map(|run| &run.retried) {
        counts.retried += 1;
        let bodies = log.bodies(key);
        // One body: only the retry reached the upstream. More: all must be the same bytes.
        match bodies.len() {
            0 | 1 => counts.retried_unsent_before += 1,
            _ if bodies.windows(2).all(|pair| pair[0] == pair[1]) => {
                counts.retried_identical += 1;
            }
            _ => counts.retried_differ.push(key.clone()),
        }
    }
    counts
}
