//! `magic-context status`: how each session stands, read from the call ledger.
//!
//! The operator's question is "is the proxy keeping my session inside the window without
//! burning the cache?", so each session shows the context used against the usable window, the
//! share of input read from the cache, and every bust with its cause. It opens the same store
//! as `doctor` (honouring `MAGIC_CONTEXT_DATA_DIR`) and only reads it.
//!
//! `--json` prints one object, in one of two shapes:
//! - without `--session`: `{"sessions": [SESSION, …], "token_corrections": […],
//!   "dreamer_runs": [RUN, …], "unmanaged_stateful_calls": STATEFUL}`, sessions most
//!   recently seen first; `dreamer_runs`, only present once the dreamer ran, holds its
//!   newest runs (RUN is described in [`crate::dreamer_runs`]); STATEFUL,
//!   only present when there are any, is `{"count", "last_ms"}` over the newest calls tied
//!   to no session: Responses calls that lean on history stored at the provider, forwarded
//!   unmanaged; `run_log`, only present once a `run` wrote it, is the path of the log of the
//!   proxy `run` hosts;
//! - with `--session ID`: `{"session": SESSION, "history": HISTORY, "recent_calls": [CALL, …]}`,
//!   calls newest first; HISTORY is described at [`HistoryStatus::json`].
//!
//! SESSION: `id`, `host`, `project` (or null), `project_folder` (the folder the project was
//! last seen in, or null), `fork` (`{"parent", "ordinal"}` or null), `mode` (`primary`,
//! `subagent` or `compaction_off`), `spawned_by` (the session a subagent works for, or null),
//! `created_ms`, `last_seen_ms`, `calls` (count), `last_call_status` (or null), `tokens`
//! (`{"uncached", "cache_write", "cache_read", "output"}` summed over all calls),
//! `cache_read_share` (0–1 over the calls after the first that reported input, or null),
//! `context` (the last successful call: `{"used_tokens", "usable_window", "used_share",
//! "at_ms"}`, the last two null when the window is unknown; null before any such call),
//! `busts` (`[{"cause", "passes"}]`, most frequent first), `pending_drops`, `last_pass`
//! (`{"seq", "kind", "cause", "at_ms", "tokens_removed"}` or null).
//!
//! CALL: `started_ms`, `route`, `model`, `pass_seq`, `pass_kind`, `bust_cause`, `status`,
//! `uncached_tokens`, `cache_write_tokens`, `cache_read_tokens`, `output_tokens`,
//! `first_byte_ms`, `total_ms`, `stop_reason`, `usable_window`, `overflow_retry`, `error`:
//! the ledger row as stored, null where the provider reported nothing. Times are unix
//! milliseconds, sizes tokens.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use mc_config::{ConfigSources, load};
use mc_core::window_fit::TokenCorrection;
use mc_core::{ProjectId, SessionId, SessionMode};
use mc_replay::thousands;

use crate::status_history::HistoryStatus;
use crate::status_viewpoint::Viewpoint;
use mc_store::{
    CallRow, LocationEnv, Platform, SessionStatus, Store, StoreOptions, resolve_data_dir,
};
use serde_json::{Value, json};

use crate::clock::now_ms;
use crate::dreamer_runs::{run_json, runs_text};
use crate::output::{pretty, write_stdout};
use crate::run_log;
use crate::store_size::{size_json, size_line};
use crate::team_report::{team_line, team_report};

/// Calls listed under a single session: enough to see the last few turns and a retry.
const CALLS_SHOWN: usize = 10;

/// Calls tied to no session read to count the stateful ones.
const UNATTRIBUTED_READ: usize = 200;

/// The dreamer's newest runs the session list ends with (`dream --list` shows more).
const DREAMER_RUNS_SHOWN: usize = 5;

/// What an empty store prints, pointing at the one step that fills it.
const NO_SESSIONS: &str = "no sessions yet; point your agent at `magic-context serve`\n";

/// Arguments of `status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Show only this session, with its newest calls.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,

    /// How many of the most recently seen sessions to show.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 20,
        conflicts_with = "session"
    )]
    pub limit: usize,

    /// Print one JSON object: {"sessions", "token_corrections"}, or {"session",
    /// "recent_calls"} with --session.
    #[arg(long)]
    pub json: bool,
}

/// Reads the store and prints the sessions' standing; an unknown `--session` is an error.
pub fn run(args: &StatusArgs) -> anyhow::Result<ExitCode> {
    let location = resolve_data_dir(&LocationEnv::from_process(), Platform::current())
        .context("cannot find the data directory")?;
    let path = location.db_path();
    let store = Store::open_location(&location, StoreOptions::default())
        .with_context(|| format!("cannot open the store {}", path.display()))?;
    let folders = store
        .read(|tx| tx.project_folders())
        .context("cannot read the projects' folders")?;
    let view = Viewpoint {
        now_ms: now_ms()?,
        here: Viewpoint::current_folder(),
        folders,
    };
    let text = match &args.session {
        Some(id) => one_session(&store, id, args.json, &view)?,
        None => {
            let log = run_log::existing(&location);
            let team = team_report(&load(&ConfigSources::discover(None)).config, &store);
            let places = Places {
                run_log: log.as_deref(),
                store_path: &path,
                team: team.as_ref(),
            };
            recent_sessions(&store, args.limit, args.json, &view, &places)?
        }
    };
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// One session with its newest calls, read in one snapshot so the two agree.
fn one_session(store: &Store, id: &str, as_json: bool, view: &Viewpoint) -> anyhow::Result<String> {
    let now_ms = view.now_ms;
    let session = SessionId::new(id)?;
    let found = store
        .read(|tx| {
            let Some(status) = tx.session_status(&session)? else {
                return Ok(None);
            };
            let usable = status.context.and_then(|context| context.usable_window);
            let history = HistoryStatus::read(tx, &session, usable)?;
            Ok(Some((status, tx.calls(&session, CALLS_SHOWN)?, history)))
        })
        .context("cannot read the session's status")?;
    let Some((status, calls, history)) = found else {
        bail!(
            "no session `{id}` in the store {}; run `magic-context status` to list the sessions \
             it knows",
            store.path().display()
        );
    };
    if as_json {
        let calls: Vec<Value> = calls.iter().map(call_json).collect();
        return pretty(
            &json!({"session": session_json(&status, view), "history": history.json(),
            "recent_calls": calls}),
        );
    }
    let mut text = session_text(&status, view);
    text.push_str(&history.text(&|at_ms| age(now_ms, at_ms)));
    text.push_str(&calls_text(&calls, status.calls, now_ms));
    Ok(text)
}

/// Where the store and its neighbours are, for the summary under the sessions.
#[derive(Clone, Copy)]
struct Places<'a> {
    run_log: Option<&'a Path>,
    store_path: &'a Path,
    /// The team store's report, when one is configured.
    team: Option<&'a Value>,
}

/// The `limit` most recently seen sessions, one block each.
fn recent_sessions(
    store: &Store,
    limit: usize,
    as_json: bool,
    view: &Viewpoint,
    places: &Places<'_>,
) -> anyhow::Result<String> {
    let Places {
        run_log,
        store_path,
        team,
    } = *places;
    let now_ms = view.now_ms;
    let (sessions, corrections, unattributed, dreams) = store
        .read(|tx| {
            Ok((
                tx.recent_sessions_status(limit)?,
                tx.token_corrections()?,
                tx.unattributed_calls(UNATTRIBUTED_READ)?,
                tx.dreamer_runs(None, DREAMER_RUNS_SHOWN)?,
            ))
        })
        .context("cannot read the sessions' status")?;
    let stateful = StatefulCalls::among(&unattributed);
    if as_json {
        let sessions: Vec<Value> = sessions
            .iter()
            .map(|status| session_json(status, view))
            .collect();
        let corrections: Vec<Value> = corrections
            .iter()
            .map(|(model, correction)| {
                json!({
                    "model": model,
                    "provider_tokens_per_estimated_token": f64::from(correction.permille) / 1000.0,
                    "reports": correction.samples,
                })
            })
            .collect();
        let mut out = json!({ "sessions": sessions, "token_corrections": corrections });
        if let (false, Some(object)) = (dreams.is_empty(), out.as_object_mut()) {
            let dreams: Vec<Value> = dreams.iter().map(|run| run_json(run, view)).collect();
            object.insert("dreamer_runs".to_owned(), json!(dreams));
        }
        if let (Some(calls), Some(object)) = (stateful, out.as_object_mut()) {
            object.insert(
                "unmanaged_stateful_calls".to_owned(),
                json!({"count": calls.count, "last_ms": calls.last_ms}),
            );
        }
        if let (Some(path), Some(object)) = (run_log, out.as_object_mut()) {
            object.insert("run_log".to_owned(), json!(path.display().to_string()));
        }
        if let Some(object) = out.as_object_mut() {
            object.insert("store".to_owned(), size_json(store_path));
            if let Some(team) = team {
                object.insert("team_store".to_owned(), team.clone());
            }
        }
        return pretty(&out);
    }
    let log_line = format!(
        "\n{}{}{}",
        size_line(store_path),
        team.map(|team| team_line(team, now_ms)).unwrap_or_default(),
        run_log
            .map(|path| format!("run's proxy log: {}\n", path.display()))
            .unwrap_or_default()
    );
    if sessions.is_empty() {
        let mut text = NO_SESSIONS.to_owned();
        if let Some(calls) = stateful {
            text.push_str(&calls.text(now_ms));
        }
        text.push_str(&log_line);
        return Ok(text);
    }
    let mut blocks: Vec<String> = sessions
        .iter()
        .map(|status| session_text(status, view))
        .collect();
    if !corrections.is_empty() {
        blocks.push(corrections_text(&corrections));
    }
    if let Some(calls) = stateful {
        blocks.push(calls.text(now_ms));
    }
    if !dreams.is_empty() {
        blocks.push(runs_text(&dreams, view));
    }
    Ok(blocks.join("\n") + &log_line)
}

/// Responses calls forwarded unmanaged because their history lives at the provider: a
/// session the user expected managed may be missing for this reason, so `status` says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct StatefulCalls {
    count: usize,
    last_ms: i64,
}

impl StatefulCalls {
    /// The stateful calls among `calls` (newest first), if any.
    fn among(calls: &[CallRow]) -> Option<Self> {
        let mut stateful = calls
            .iter()
            .filter(|call| call.route == mc_proxy::STATEFUL_RESPONSES_ROUTE);
        let newest = stateful.next()?;
        Some(Self {
            count: 1 + stateful.count(),
            last_ms: newest.started_ms,
        })
    }

    fn text(self, now_ms: i64) -> String {
        format!(
            "{} Responses call(s) forwarded unmanaged, the last {}: they use history stored at \
             the provider (previous_response_id), which the proxy cannot rewrite; send the whole \
             conversation with `store: false` to have it managed\n",
            self.count,
            age(now_ms, self.last_ms)
        )
    }
}

/// The token counts learned per model: what the provider counts per token the proxy
/// estimated, from how many usage reports.
fn corrections_text(corrections: &[(String, TokenCorrection)]) -> String {
    let mut text = String::from("token counts learned (provider tokens per estimated token)\n");
    for (model, correction) in corrections {
        text.push_str(&format!(
            "  {model}  {:.3} ({} reports)\n",
            f64::from(correction.permille) / 1000.0,
            thousands(u64::from(correction.samples))
        ));
    }
    text
}

fn session_json(status: &SessionStatus, view: &Viewpoint) -> Value {
    let session = &status.session;
    let tokens = &status.tokens;
    json!({
        "id": session.id.as_str(),
        "host": session.host.as_str(),
        "project": session.project.as_ref().map(ProjectId::as_str),
        "project_folder": session.project.as_ref().and_then(|project| view.folder(project)),
        "fork": session.fork.as_ref().map(|fork| json!({
            "parent": fork.parent.as_str(),
            "ordinal": fork.ordinal,
        })),
        "mode": session.mode.as_str(),
        "spawned_by": session.spawned_by.as_ref().map(SessionId::as_str),
        "created_ms": session.created_ms,
        "last_seen_ms": session.last_seen_ms,
        "calls": status.calls,
        "last_call_status": status.last_call_status,
        "tokens": {
            "uncached": tokens.uncached,
            "cache_write": tokens.cache_write,
            "cache_read": tokens.cache_read,
            "output": tokens.output,
        },
        "cache_read_share": status.cache_read_share,
        "context": status.context.map(|context| json!({
            "used_tokens": context.used_tokens,
            "usable_window": context.usable_window,
            "used_share": context.used_ratio(),
            "at_ms": context.at_ms,
        })),
        "busts": status.busts.iter().map(|bust| json!({
            "cause": bust.cause,
            "passes": bust.passes,
        })).collect::<Vec<_>>(),
        "pending_drops": status.pending_drops,
        "last_pass": status.last_pass.as_ref().map(|pass| json!({
            "seq": pass.seq,
            "kind": pass.kind,
            "cause": pass.cause,
            "at_ms": pass.at_ms,
            "tokens_removed": pass.tokens_removed,
        })),
    })
}

fn call_json(call: &CallRow) -> Value {
    json!({
        "started_ms": call.started_ms,
        "route": call.route,
        "model": call.model,
        "pass_seq": call.pass_seq,
        "pass_kind": call.pass_kind,
        "bust_cause": call.bust_cause,
        "status": call.status,
        "uncached_tokens": call.uncached_tokens,
        "cache_write_tokens": call.cache_write_tokens,
        "cache_read_tokens": call.cache_read_tokens,
        "output_tokens": call.output_tokens,
        "first_byte_ms": call.first_byte_ms,
        "total_ms": call.total_ms,
        "stop_reason": call.stop_reason,
        "usable_window": call.usable_window,
        "overflow_retry": call.overflow_retry,
        "error": call.error,
    })
}

/// A heading line, then one labelled line per figure, each saying plainly when there is
/// nothing to show yet.
fn session_text(status: &SessionStatus, view: &Viewpoint) -> String {
    let now_ms = view.now_ms;
    let session = &status.session;
    let project = match &session.project {
        Some(project) => format!("project {}", view.project_name(project)),
        None => "no project".to_owned(),
    };
    let fork = match &session.fork {
        Some(fork) => format!(
            ", fork of {} at message {}",
            fork.parent.as_str(),
            fork.ordinal
        ),
        None => String::new(),
    };
    let context = match status.context {
        None => "no successful call yet".to_owned(),
        Some(context) => match (context.usable_window, context.used_ratio()) {
            (Some(window), Some(ratio)) => format!(
                "{} of {} tokens ({})",
                thousands(context.used_tokens),
                thousands(window),
                percent(ratio)
            ),
            (Some(_) | None, _) => format!(
                "{} tokens (usable window unknown)",
                thousands(context.used_tokens)
            ),
        },
    };
    let cache = match status.cache_read_share {
        Some(share) => format!("{} of input read from the cache", percent(share)),
        None => "not measured yet (needs a second call)".to_owned(),
    };
    let calls = match status.last_call_status {
        Some(last) => format!("{}, last returned {last}", thousands(status.calls)),
        None => "none".to_owned(),
    };
    let tokens = &status.tokens;
    let busts = if status.busts.is_empty() {
        "none".to_owned()
    } else {
        status
            .busts
            .iter()
            .map(|bust| format!("{} {}", cause_name(bust.cause.as_deref()), bust.passes))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let last_pass = match &status.last_pass {
        Some(pass) => format!(
            "#{} {}{}, {}",
            pass.seq,
            pass.kind,
            pass.cause
                .as_ref()
                .map(|cause| format!(" ({cause})"))
                .unwrap_or_default(),
            age(now_ms, pass.at_ms)
        ),
        None => "none yet".to_owned(),
    };
    let mode = match (session.mode, &session.spawned_by) {
        (SessionMode::Primary, _) => "primary".to_owned(),
        (SessionMode::Subagent, Some(parent)) => format!("subagent of {parent}"),
        (SessionMode::Subagent, None) => "subagent".to_owned(),
        (SessionMode::CompactionOff, None) => {
            "compaction off: the host manages the window".to_owned()
        }
        (SessionMode::CompactionOff, Some(parent)) => {
            format!("compaction off: the host manages the window; subagent of {parent}")
        }
    };
    let lines = [
        ("mode", mode),
        ("context", context),
        ("cache", cache),
        ("calls", calls),
        (
            "tokens",
            format!(
                "uncached {}, cache write {}, cache read {}, output {}",
                thousands(tokens.uncached),
                thousands(tokens.cache_write),
                thousands(tokens.cache_read),
                thousands(tokens.output)
            ),
        ),
        ("busts", busts),
        ("drops", format!("{} pending", status.pending_drops)),
        ("last pass", last_pass),
    ];
    let mut out = format!(
        "{}  {}, {project}{fork}, seen {}\n",
        session.id.as_str(),
        session.host.as_str(),
        age(now_ms, session.last_seen_ms)
    );
    for (label, value) in lines {
        out.push_str(&format!("  {label:<10} {value}\n"));
    }
    out
}

/// The newest calls as an aligned table, numbers right-aligned so magnitudes line up.
fn calls_text(calls: &[CallRow], total: u64, now_ms: i64) -> String {
    if calls.is_empty() {
        return String::new();
    }
    let header = [
        "started",
        "status",
        "pass",
        "cause",
        "uncached",
        "write",
        "read",
        "output",
        "first byte",
        "total",
        "note",
    ];
    let numeric = [
        false, true, false, false, true, true, true, true, true, true, false,
    ];
    let count = |figure: Option<u64>| figure.map_or_else(|| "-".to_owned(), thousands);
    let millis =
        |ms: Option<u64>| ms.map_or_else(|| "-".to_owned(), |ms| format!("{} ms", thousands(ms)));
    let rows: Vec<Vec<String>> = calls
        .iter()
        .map(|call| {
            let pass = match (call.pass_seq, &call.pass_kind) {
                (Some(seq), Some(kind)) => format!("#{seq} {kind}"),
                (Some(seq), None) => format!("#{seq}"),
                (None, Some(kind)) => kind.clone(),
                (None, None) => "-".to_owned(),
            };
            let note: Vec<&str> = [
                call.overflow_retry.then_some("overflow retry"),
                call.error.as_deref(),
            ]
            .into_iter()
            .flatten()
            .collect();
            vec![
                age(now_ms, call.started_ms),
                call.status.to_string(),
                pass,
                call.bust_cause.clone().unwrap_or_else(|| "-".to_owned()),
                count(call.uncached_tokens),
                count(call.cache_write_tokens),
                count(call.cache_read_tokens),
                count(call.output_tokens),
                millis(call.first_byte_ms),
                millis(Some(call.total_ms)),
                note.join("; "),
            ]
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|title| title.chars().count()).collect();
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut text = String::from("  ");
        for ((cell, width), right) in cells.iter().zip(&widths).zip(numeric) {
            text.push_str("  ");
            if right {
                text.push_str(&format!("{cell:>width$}"));
            } else {
                text.push_str(&format!("{cell:<width$}"));
            }
        }
        format!("{}\n", text.trim_end())
    };
    let mut out = format!("  newest {} of {} calls:\n", calls.len(), thousands(total));
    out.push_str(&line(&header.map(String::from)));
    for row in &rows {
        out.push_str(&line(row));
    }
    out
}

/// A bust recorded without a cause still counts, under a name that says so.
fn cause_name(cause: Option<&str>) -> &str {
    cause.unwrap_or("unrecorded cause")
}

/// One decimal: 99.6% and 100% are different stories for a cache.
fn percent(ratio: f64) -> String {
    format!("{:.1}%", ratio * 100.0)
}

/// How long ago `at_ms` was, in the largest whole unit; a time ahead of the clock (another
/// machine's skew) reads as now.
pub fn age(now_ms: i64, at_ms: i64) -> String {
    format!("{} ago", span(now_ms.saturating_sub(at_ms)))
}

/// A span of `ms` in the largest whole unit (`45s`, `9m`, `3h`, `4d`); negative is none.
pub fn span(ms: i64) -> String {
    let seconds = ms.max(0) / 1_000;
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3_600 => format!("{}m", seconds / 60),
        3_600..172_800 => format!("{}h", seconds / 3_600),
        _ => format!("{}d", seconds / 86_400),
    }
}

#[cfg(test)]
mod tests;
