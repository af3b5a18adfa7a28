//! The historian at length, with the real client: Claude Code runs [`STEPS`] Bash steps in a
//! scratch repository through `magic-context serve` to `magic-context sim`, which plays both
//! the agent (a script) and the historian (`record_history` calls answered from their
//! transcript). Each step prints a log of about 700 tokens, so the session's tool output is
//! several times the [`WINDOW_TOKENS`] window, and the historian must summarise as it goes.
//!
//! The run must show: Claude Code finishes every step; every upstream call (the agent's and
//! the historian's) is served inside the window; compartments are published and the head
//! carries them (a sampler reads the head the engine last rendered several times a second
//! while the session runs: its heading lines must cover exactly the messages before the raw
//! tail, as the boundary moves along); and the agent never waits for the historian (agent
//! calls reach the provider while historian runs are in flight).
//!
//! A run takes about 40 s on an idle machine, Claude Code's own turns and tool runs most of
//! it; set `MC_CLAUDE_BIN` to skip the npm install of Claude Code (see
//! [`crate::claude_code`]).

pub mod work_logs;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use mc_core::SessionId;
use mc_sim::CallRecord;
use mc_store::{CallRow, HistorianRun, Store};
use serde_json::Value;

use crate::support::Machine;
use crate::support::claude_session::{ClaudeSession, MAIN_MODEL, Script, Setup};

/// How many Bash steps the script makes: with the final answer, that many main calls plus one.
const STEPS: usize = 320;
/// The window of the simulator and the proxy, in tokens.
const WINDOW_TOKENS: u64 = 60_000;
/// How often the sampler reads the head the engine last rendered.
const SAMPLE_EVERY: Duration = Duration::from_millis(150);

#[test]
fn long_claude_code_session_is_summarised_by_the_historian_inside_the_window() {
    let machine = Machine::fresh();
    let repo = machine.path("work/repo");
    work_logs::create(&repo, STEPS);
    let script = Script::install(&machine, "historian.json", &work_logs::script(STEPS));
    assert_eq!(script.tool_calls, STEPS);
    let sampler = HeadSampler::start(machine.path("data/context.db"));
    let setup = Setup {
        sim_window_tokens: WINDOW_TOKENS,
        token_scale: 1.0,
        proxy_window_tokens: Some(WINDOW_TOKENS),
        // Each run outlasts an agent's turn, so agent calls must be served while runs are in
        // flight: a proxy that waited for the historian would show none.
        sim_historian: "slow",
    };
    let session = ClaudeSession::run(machine, &repo, &script, setup);
    let heads = sampler.stop();
    let run = Finished::read(session, heads);
    eprintln!("{}", run.summary());
    run.assert_finished_inside_the_window();
    run.assert_history_in_the_head();
    run.assert_agent_never_waited();
}

/// The head of one pass, as the sampler read it from the engine's state.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Head {
    /// The first raw message after the head.
    boundary: u64,
    /// The ranges of the heading lines of `m[0]` and `m[1]`, in order.
    headings: Vec<(u64, u64)>,
}

/// Reads the main session's head from the store every [`SAMPLE_EVERY`] while the session
/// runs, keeping each distinct one: the engine commits a pass's state before the request
/// goes upstream, so each head read is the head of a request the provider got.
struct HeadSampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<Head>>,
}

impl HeadSampler {
    fn start(db: PathBuf) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut heads: Vec<Head> = Vec::new();
            let mut store = None;
            while !stopping.load(Ordering::Relaxed) {
                std::thread::sleep(SAMPLE_EVERY);
                if store.is_none() && db.is_file() {
                    store = Store::open(&db).ok();
                }
                let Some(head) = store.as_ref().and_then(read_head) else {
                    continue;
                };
                if heads.last() != Some(&head) {
                    heads.push(head);
                }
            }
            heads
        });
        Self { stop, thread }
    }

    fn stop(self) -> Vec<Head> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

/// The head of the session with the most messages (Claude Code's main loop), if it has one.
fn read_head(store: &Store) -> Option<Head> {
    let state = store
        .read(|tx| {
            let main = main_session(tx)?;
            match main {
                Some(session) => tx.engine_state(&session),
                None => Ok(None),
            }
        })
        .ok()??;
    let state: Value = serde_json::from_str(&state).ok()?;
    let text = format!(
        "{}\n{}",
        state["m0"].as_str().unwrap_or_default(),
        state["m1"].as_str().unwrap_or_default()
    );
    Some(Head {
        boundary: state["boundary"].as_u64()?,
        headings: text.lines().filter_map(heading_range).collect(),
    })
}

fn main_session(tx: &mc_store::ReadTx<'_>) -> mc_store::Result<Option<SessionId>> {
    let mut best: Option<(u64, SessionId)> = None;
    for session in tx.list_sessions(usize::MAX)? {
        let count = tx.message_count(&session.id)?;
        if best.as_ref().is_none_or(|(most, _)| count > *most) {
            best = Some((count, session.id));
        }
    }
    Ok(best.map(|(_, id)| id))
}

/// The range of a history heading line, `### START-END | … | title`.
fn heading_range(line: &str) -> Option<(u64, u64)> {
    let (range, _) = line.strip_prefix("### ")?.split_once(" | ")?;
    let (start, end) = range.split_once('-')?;
    Some((start.parse().ok()?, end.parse().ok()?))
}

/// The finished session and what the proxy's store holds about its main session.
struct Finished {
    session: ClaudeSession,
    /// Each distinct head the sampler read, then the last one.
    heads: Vec<Head>,
    /// The stored compartments' ranges, in order.
    compartments: Vec<(u64, u64)>,
    /// The main session's raw log length.
    messages: u64,
    /// The historian's runs, oldest first.
    runs: Vec<HistorianRun>,
    /// The proxy's ledger rows of the main session's calls.
    calls: Vec<CallRow>,
}

impl Finished {
    fn read(session: ClaudeSession, mut heads: Vec<Head>) -> Self {
        let store = Store::open(session.store_path()).unwrap();
        let (compartments, messages, mut runs, calls) = store
            .read(|tx| {
                let main = main_session(tx)?.unwrap();
                let compartments = tx
                    .compartments(&main)?
                    .iter()
                    .map(|compartment| (compartment.start_ordinal, compartment.end_ordinal))
                    .collect::<Vec<_>>();
                Ok((
                    compartments,
                    tx.message_count(&main)?,
                    tx.historian_runs(&main, usize::MAX)?,
                    tx.calls(&main, usize::MAX)?,
                ))
            })
            .unwrap();
        runs.sort_by_key(|run| run.started_ms);
        if let Some(last) = read_head(&store)
            && heads.last() != Some(&last)
        {
            heads.push(last);
        }
        Self {
            session,
            heads,
            compartments,
            messages,
            runs,
            calls,
        }
    }

    /// Claude Code finished every step, and every upstream call was served inside the
    /// window; the raw log kept every tool result.
    fn assert_finished_inside_the_window(&self) {
        let session = &self.session;
        assert!(
            session.status.success() && session.stdout.contains(work_logs::FINAL_ANSWER),
            "claude did not finish with the script's final answer ({}; `{}` means a scripted \
             turn's `when` did not match)\n{}",
            session.status,
            work_logs::FELL_THROUGH,
            self.diagnostics()
        );
        assert!(session.api_errors.is_empty(), "{}", self.diagnostics());
        assert_eq!(session.transcript.len(), STEPS, "{}", self.diagnostics());
        assert!(
            session.main_calls().count() > STEPS,
            "{}",
            self.diagnostics()
        );
        for call in &session.ledger {
            assert!(
                call.status == 200 && call.prompt_tokens <= WINDOW_TOKENS,
                "upstream call {} ({}) was {} tokens, status {}; the window is \
                 {WINDOW_TOKENS}\n{}",
                call.seq,
                call.model,
                call.prompt_tokens,
                call.status,
                self.diagnostics()
            );
        }
        crate::support::store_check::assert_tool_results_stored(
            &session.store_path(),
            &session.transcript,
        );
    }

    /// Compartments were published, and every head the engine rendered shows their heading
    /// lines for exactly the messages before its raw tail, as the boundary moved along.
    fn assert_history_in_the_head(&self) {
        let published = self.runs.iter().filter(|run| published(run));
        assert!(
            published.count() >= 5 && self.compartments.len() >= 10,
            "{}",
            self.diagnostics()
        );
        for head in &self.heads {
            let mut next = 0;
            for &(start, end) in &head.headings {
                assert!(
                    start == next && end >= start,
                    "a head's history has a gap or an overlap: {head:?}"
                );
                next = end + 1;
            }
            assert_eq!(
                next, head.boundary,
                "a head's history must end where its raw tail starts: {head:?}"
            );
        }
        let boundaries: Vec<u64> = self
            .heads
            .iter()
            .map(|head| head.boundary)
            .filter(|&boundary| boundary > 0)
            .collect();
        assert!(
            boundaries.len() >= 5,
            "the boundary moved only to {boundaries:?}\n{}",
            self.diagnostics()
        );
        let last = self.heads.last().unwrap();
        let behind: Vec<(u64, u64)> = self
            .compartments
            .iter()
            .copied()
            .filter(|&(_, end)| end < last.boundary)
            .collect();
        // The head may show a provisional compartment that a later run read again and
        // replaced with one from the same start reaching further.
        let (shown, replaced) = last
            .headings
            .split_at(behind.len().min(last.headings.len()));
        assert_eq!(shown, behind);
        assert!(
            replaced.len() <= 1
                && replaced.iter().all(|&(start, end)| self
                    .compartments
                    .iter()
                    .any(|&(from, to)| from == start && to >= end)),
            "the head shows {replaced:?} beyond the stored history {behind:?}"
        );
        assert!(
            last.boundary * 2 > self.messages,
            "history replaced only {} of {} messages\n{}",
            last.boundary,
            self.messages,
            self.diagnostics()
        );
    }

    /// Agent calls reached the provider while historian runs were in flight. Claude Code
    /// sends one call at a time, so a proxy that waited for the historian before sending a
    /// call upstream would leave no run with an agent call arriving inside it. The simulator
    /// answers each run 300 ms late (`--historian slow`), longer than an agent's turn here,
    /// so most runs must see one, whatever the machine's speed.
    fn assert_agent_never_waited(&self) {
        let overlapped = self.runs_overlapping_agent_calls();
        let wanted = (self.runs.len() / 3).max(5);
        assert!(
            overlapped >= wanted,
            "only {overlapped} of {} historian runs saw an agent call arrive upstream while \
             in flight (wanted {wanted})\n{}",
            self.runs.len(),
            self.diagnostics()
        );
    }

    /// Historian runs during which some main call reached the simulator.
    fn runs_overlapping_agent_calls(&self) -> usize {
        let arrivals: Vec<i64> = self
            .session
            .main_calls()
            .map(|call| call.at_ms as i64)
            .collect();
        self.runs
            .iter()
            .filter(|run| {
                arrivals
                    .iter()
                    .any(|&at| run.started_ms <= at && at <= run.finished_ms)
            })
            .count()
    }

    /// The simulator's rows of historian calls: those forcing no agent's model.
    fn historian_calls(&self) -> impl Iterator<Item = &CallRecord> {
        self.session
            .ledger
            .iter()
            .filter(|call| call.model != MAIN_MODEL)
    }

    /// One line of figures (visible with `--nocapture`).
    fn summary(&self) -> String {
        let session = &self.session;
        let peak = session.peak_prompt_tokens();
        let mut latencies: Vec<u64> = self.calls.iter().map(|call| call.total_ms).collect();
        latencies.sort_unstable();
        let median = latencies.get(latencies.len() / 2).copied().unwrap_or(0);
        format!(
            "historian session: {} main calls and {} historian calls upstream, peak main prompt \
             {peak} of {WINDOW_TOKENS}, {} runs ({} published, {} overlapping agent calls), {} \
             compartments, {} heads sampled, final boundary {} of {} messages, proxy call \
             latency median {median} ms max {} ms, claude ran {:.1}s",
            session.main_calls().count(),
            self.historian_calls().count(),
            self.runs.len(),
            self.runs.iter().filter(|run| published(run)).count(),
            self.runs_overlapping_agent_calls(),
            self.compartments.len(),
            self.heads.len(),
            self.heads.last().map_or(0, |head| head.boundary),
            self.messages,
            latencies.last().copied().unwrap_or(0),
            session.wall.as_secs_f64(),
        )
    }

    fn diagnostics(&self) -> String {
        self.session.diagnostics(&self.summary())
    }
}

/// Whether a historian run published compartments (the last one possibly provisional).
fn published(run: &HistorianRun) -> bool {
    run.outcome == "published" || run.outcome == "provisional"
}
