//! `status` reads the ledger the proxy writes: sessions, passes and calls stored through
//! mc-store's API, then the binary run against the same data directory.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use mc_core::tags::{TagAssignment, TagNo, UnitRef};
use mc_core::{Host, Message, Part, ProjectId, Role, SessionId, SessionMode};
use mc_store::{CallRow, HistorianRun, NewSession, PassRow, Store};
use serde_json::{Value, json};

use crate::support::Machine;

const HOUR_MS: i64 = 3_600_000;

/// When the busy session was last seen: a little over two hours ago, so its ages print as
/// "2h ago" however long the test takes to reach the binary.
fn seen_ms() -> i64 {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    i64::try_from(now.as_millis()).unwrap() - 2 * HOUR_MS - 5 * 60_000
}

fn sid(id: &str) -> SessionId {
    SessionId::new(id).unwrap()
}

/// A successful call of the busy session made by pass `seq`; `input` is uncached, cache write
/// and cache read tokens, `latency_ms` to the first byte and in total.
fn call(seq: u64, kind: &str, started_ms: i64, input: [u64; 3], latency_ms: [u64; 2]) -> CallRow {
    CallRow {
        session: Some(sid("sess-busy")),
        pass_seq: Some(seq),
        started_ms,
        route: "anthropic".into(),
        model: "claude-sonnet-4-5".into(),
        pass_kind: Some(kind.into()),
        bust_cause: None,
        status: 200,
        uncached_tokens: Some(input[0]),
        cache_write_tokens: Some(input[1]),
        cache_read_tokens: Some(input[2]),
        output_tokens: Some(input[0] / 2),
        first_byte_ms: Some(latency_ms[0]),
        total_ms: latency_ms[1],
        stop_reason: Some("end_turn".into()),
        usable_window: Some(168_000),
        overflow_retry: false,
        error: None,
        client_prompt_tokens: None,
        client_fixed_tokens: None,
        window_tokens: None,
    }
}

/// The four calls of the busy session, oldest first: the first render, a cache hit, an
/// overflow refused by the provider and its emergency retry.
fn busy_calls(seen_ms: i64) -> Vec<CallRow> {
    let mut first = call(
        0,
        "hard_fold",
        seen_ms - 60_000,
        [1_200, 40_000, 0],
        [900, 5_000],
    );
    first.bust_cause = Some("first_render".into());
    let hit = call(
        1,
        "cache_hit",
        seen_ms - 40_000,
        [300, 2_000, 41_200],
        [700, 3_000],
    );
    let mut bust = call(2, "soft_bust", seen_ms - 20_000, [0, 0, 0], [300, 320]);
    bust.bust_cause = Some("execute_threshold".into());
    let overflow = CallRow {
        status: 400,
        uncached_tokens: None,
        cache_write_tokens: None,
        cache_read_tokens: None,
        output_tokens: None,
        stop_reason: None,
        error: Some("prompt is too long".into()),
        ..bust.clone()
    };
    let retry = CallRow {
        started_ms: seen_ms - 10_000,
        uncached_tokens: Some(500),
        cache_write_tokens: Some(60_000),
        cache_read_tokens: Some(50_000),
        output_tokens: Some(600),
        first_byte_ms: Some(1_100),
        total_ms: 9_000,
        overflow_retry: true,
        ..bust
    };
    vec![first, hit, overflow, retry]
}

/// Two sessions: a busy Claude Code one with passes, drops and calls, and a quiet Codex one
/// seen three days ago that never made a call.
fn seed(data_dir: &Path) -> i64 {
    let seen = seen_ms();
    let store = Store::open(data_dir.join("context.db")).unwrap();
    let busy = sid("sess-busy");
    store
        .write(|tx| {
            tx.upsert_session(
                &NewSession {
                    id: sid("sess-quiet"),
                    host: Host::Codex,
                    project: None,
                },
                seen - 72 * HOUR_MS,
            )?;
            tx.upsert_session(
                &NewSession {
                    id: busy.clone(),
                    host: Host::ClaudeCode,
                    project: Some(ProjectId::new("proj-1").unwrap()),
                },
                seen,
            )?;
            tx.set_session_mode(&sid("sess-quiet"), SessionMode::Subagent, Some(&busy))?;
            let messages: Vec<Message> = (0..2)
                .map(|turn| Message::new(Role::User, vec![Part::text(format!("turn {turn}"))]))
                .collect();
            tx.append_messages(&busy, 0, &messages, seen)?;
            let tags: Vec<TagAssignment> = (0..2)
                .map(|ordinal| TagAssignment {
                    tag: TagNo(u32::try_from(ordinal).unwrap() + 1),
                    unit: UnitRef { ordinal, part: 0 },
                })
                .collect();
            tx.insert_tags(&busy, &tags)?;
            tx.queue_drop(&busy, TagNo(1), "ctx_reduce", seen)?;
            tx.queue_drop(&busy, TagNo(2), "ctx_reduce", seen)?;
            tx.land_drops(&busy, &[TagNo(1)], 2)?;
            for (seq, kind, cause) in [
                (0, "hard_fold", Some("first_render")),
                (1, "cache_hit", None),
                (2, "soft_bust", Some("execute_threshold")),
            ] {
                let pass = PassRow {
                    seq,
                    at_ms: seen - 60_000 + i64::try_from(seq).unwrap() * 20_000,
                    kind: kind.into(),
                    cause: cause.map(Into::into),
                    tokens_removed: 0,
                };
                tx.record_pass(&busy, &pass)?;
            }
            for row in busy_calls(seen) {
                tx.record_call(&row)?;
            }
            Ok(())
        })
        .unwrap();
    seen
}

fn seeded() -> (Machine, PathBuf, i64) {
    let machine = Machine::fresh();
    let data = machine.path("data");
    let seen = seed(&data);
    (machine, data, seen)
}

fn env(data: &Path) -> [(&'static str, &OsStr); 1] {
    [("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())]
}

/// `status`'s text without its last line, the store's path and size (which the file
/// system decides), checked to be there.
fn without_store_line(stdout: &str) -> String {
    let (sessions, store) = stdout
        .rsplit_once("\nstore: [TMP]/data/context.db (")
        .unwrap_or_else(|| panic!("status names the store:\n{stdout}"));
    assert!(store.ends_with(")\n"), "{stdout}");
    sessions.to_owned()
}

/// `status --json` without the store's size, checked to name the store.
fn without_store(mut json: Value) -> Value {
    let store = json.as_object_mut().unwrap().remove("store").unwrap();
    assert_eq!(store["path"], "[TMP]/data/context.db");
    assert_eq!(
        store["total_bytes"].as_u64().unwrap(),
        store["db_bytes"].as_u64().unwrap() + store["wal_bytes"].as_u64().unwrap()
    );
    json
}

const BUSY_TEXT: &str = "\
sess-busy  claude-code, project proj-1, seen 2h ago
  mode       primary
  context    110,500 of 168,000 tokens (65.8%)
  cache      59.2% of input read from the cache
  calls      4, last returned 200
  tokens     uncached 2,000, cache write 102,000, cache read 91,200, output 1,350
  busts      execute_threshold 1, first_render 1
  drops      1 pending
  last pass  #2 soft_bust (execute_threshold), 2h ago
";

const QUIET_TEXT: &str = "\
sess-quiet  codex, no project, seen 3d ago
  mode       subagent of sess-busy
  context    no successful call yet
  cache      not measured yet (needs a second call)
  calls      none
  tokens     uncached 0, cache write 0, cache read 0, output 0
  busts      none
  drops      0 pending
  last pass  none yet
";

#[test]
fn lists_the_most_recently_seen_sessions_first() {
    let (machine, data, _) = seeded();
    let run = machine.run(&["status"], &env(&data)).success();
    assert_eq!(
        without_store_line(&run.stdout),
        format!("{BUSY_TEXT}\n{QUIET_TEXT}")
    );

    let limited = machine
        .run(&["status", "--limit", "1"], &env(&data))
        .success();
    assert_eq!(without_store_line(&limited.stdout), BUSY_TEXT);
}

/// The busy session as `--json` prints it.
fn busy_json(seen: i64) -> Value {
    json!({
        "id": "sess-busy",
        "host": "claude-code",
        "project": "proj-1",
        "project_folder": null,
        "fork": null,
        "mode": "primary",
        "spawned_by": null,
        "created_ms": seen,
        "last_seen_ms": seen,
        "calls": 4,
        "last_call_status": 200,
        "tokens": {"uncached": 2_000, "cache_write": 102_000, "cache_read": 91_200, "output": 1_350},
        "cache_read_share": 91_200.0 / 154_000.0,
        "context": {
            "used_tokens": 110_500,
            "usable_window": 168_000,
            "used_share": 110_500.0 / 168_000.0,
            "at_ms": seen - 10_000,
        },
        "busts": [
            {"cause": "execute_threshold", "passes": 1},
            {"cause": "first_render", "passes": 1},
        ],
        "pending_drops": 1,
        "last_pass": {
            "seq": 2,
            "kind": "soft_bust",
            "cause": "execute_threshold",
            "at_ms": seen - 20_000,
            "tokens_removed": 0,
        },
    })
}

#[test]
fn json_lists_every_figure_with_nulls_for_the_unknown() {
    let (machine, data, seen) = seeded();
    let run = machine.run(&["status", "--json"], &env(&data)).success();
    let quiet = json!({
        "id": "sess-quiet",
        "host": "codex",
        "project": null,
        "project_folder": null,
        "fork": null,
        "mode": "subagent",
        "spawned_by": "sess-busy",
        "created_ms": seen - 72 * HOUR_MS,
        "last_seen_ms": seen - 72 * HOUR_MS,
        "calls": 0,
        "last_call_status": null,
        "tokens": {"uncached": 0, "cache_write": 0, "cache_read": 0, "output": 0},
        "cache_read_share": null,
        "context": null,
        "busts": [],
        "pending_drops": 0,
        "last_pass": null,
    });
    assert_eq!(
        without_store(run.json()),
        json!({"sessions": [busy_json(seen), quiet], "token_corrections": []})
    );
}

#[test]
fn one_session_shows_its_newest_calls() {
    let (machine, data, seen) = seeded();
    // One failed historian run, a minute before the session was last seen.
    Store::open(data.join("context.db"))
        .unwrap()
        .write(|tx| {
            tx.record_historian_run(
                &sid("sess-busy"),
                &HistorianRun {
                    started_ms: seen - 62_000,
                    finished_ms: seen - 60_000,
                    chunk_start: 0,
                    chunk_end: 3,
                    outcome: "failed".into(),
                    model: Some("claude-haiku-4-5".into()),
                    calls: 2,
                    input_tokens: 4_000,
                    output_tokens: 1_000,
                    compartments: 0,
                    detail: Some("claude-haiku-4-5: overloaded".into()),
                },
            )
        })
        .unwrap();
    let run = machine
        .run(&["status", "--session", "sess-busy"], &env(&data))
        .success();
    // Haiku 4.5 at $1 in, $5 out per million: 4,000 in and 1,000 out cost $0.009.
    let history = "  history    nothing summarised yet
  historian  1 runs, 4,000 in / 1,000 out tokens, about $0.0090
             last failed 2h ago: messages 0-3 on claude-haiku-4-5, 2 calls, 0 compartments (claude-haiku-4-5: overloaded)
";
    let calls = "  newest 4 of 4 calls:
    started  status  pass          cause              uncached   write    read  output  first byte     total  note
    2h ago      200  #2 soft_bust  execute_threshold       500  60,000  50,000     600    1,100 ms  9,000 ms  overflow retry
    2h ago      400  #2 soft_bust  execute_threshold         -       -       -       -      300 ms    320 ms  prompt is too long
    2h ago      200  #1 cache_hit  -                       300   2,000  41,200     150      700 ms  3,000 ms
    2h ago      200  #0 hard_fold  first_render          1,200  40,000       0     600      900 ms  5,000 ms
";
    assert_eq!(run.stdout, format!("{BUSY_TEXT}{history}{calls}"));

    let json = machine
        .run(&["status", "--session", "sess-busy", "--json"], &env(&data))
        .success()
        .json();
    assert_eq!(json["session"], busy_json(seen));
    let mut expected = busy_calls(seen);
    expected.reverse();
    let started: Vec<i64> = expected.iter().map(|call| call.started_ms).collect();
    let shown: Vec<i64> = json["recent_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| call["started_ms"].as_i64().unwrap())
        .collect();
    assert_eq!(shown, started, "newest first");
    assert_eq!(
        json["recent_calls"][1],
        json!({
            "started_ms": seen - 20_000,
            "route": "anthropic",
            "model": "claude-sonnet-4-5",
            "pass_seq": 2,
            "pass_kind": "soft_bust",
            "bust_cause": "execute_threshold",
            "status": 400,
            "uncached_tokens": null,
            "cache_write_tokens": null,
            "cache_read_tokens": null,
            "output_tokens": null,
            "first_byte_ms": 300,
            "total_ms": 320,
            "stop_reason": null,
            "usable_window": 168_000,
            "overflow_retry": false,
            "error": "prompt is too long",
        })
    );
}

#[test]
fn an_unknown_session_fails_naming_it() {
    let (machine, data, _) = seeded();
    let run = machine.run(&["status", "--session", "nobody"], &env(&data));
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(
        run.stderr.contains("no session `nobody` in the store"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_empty_store_says_how_to_fill_it() {
    let machine = Machine::fresh();
    let data = machine.path("data");
    let run = machine.run(&["status"], &env(&data)).success();
    assert_eq!(
        without_store_line(&run.stdout),
        "no sessions yet; point your agent at `magic-context serve`\n"
    );
    let json = machine
        .run(&["status", "--json"], &env(&data))
        .success()
        .json();
    assert_eq!(
        without_store(json),
        json!({"sessions": [], "token_corrections": []})
    );
}

#[test]
fn stateful_responses_calls_are_reported() {
    let machine = Machine::fresh();
    let data = machine.path("data");
    let store = Store::open(data.join("context.db")).unwrap();
    let started_ms = seen_ms();
    let row = CallRow {
        session: None,
        pass_seq: None,
        pass_kind: None,
        route: mc_proxy::STATEFUL_RESPONSES_ROUTE.into(),
        model: "gpt-5".into(),
        ..call(0, "cache_hit", started_ms, [0, 0, 0], [10, 20])
    };
    store.write_with(|tx| tx.record_call(&row)).unwrap();
    drop(store);
    let run = machine.run(&["status"], &env(&data)).success();
    assert_eq!(
        without_store_line(&run.stdout),
        "no sessions yet; point your agent at `magic-context serve`\n1 Responses call(s) \
         forwarded unmanaged, the last 2h ago: they use history stored at the provider \
         (previous_response_id), which the proxy cannot rewrite; send the whole conversation \
         with `store: false` to have it managed\n"
    );
    let json = machine
        .run(&["status", "--json"], &env(&data))
        .success()
        .json();
    assert_eq!(
        json["unmanaged_stateful_calls"],
        json!({"count": 1, "last_ms": started_ms})
    );
}

#[test]
fn learned_token_counts_are_listed_per_model() {
    let (machine, data, _) = seeded();
    let store = Store::open(data.join("context.db")).unwrap();
    let learned = mc_core::window_fit::TokenCorrection::default().observe(20_000, 25_000);
    store
        .write_with(|tx| tx.put_token_correction("claude-sonnet-4-5", learned, 1))
        .unwrap();
    drop(store);
    let run = machine
        .run(&["status", "--limit", "1"], &env(&data))
        .success();
    assert_eq!(
        without_store_line(&run.stdout),
        format!(
            "{BUSY_TEXT}\ntoken counts learned (provider tokens per estimated token)\n  \
             claude-sonnet-4-5  1.250 (1 reports)\n"
        )
    );
    let json = machine
        .run(&["status", "--json", "--limit", "1"], &env(&data))
        .success()
        .json();
    assert_eq!(
        json["token_corrections"],
        json!([{"model": "claude-sonnet-4-5", "provider_tokens_per_estimated_token": 1.25, "reports": 1}])
    );
}

/// A session of the project `status` runs in is named by that folder, as the user knows it;
/// one of another project by the folder the proxy saw it in, or its id when none is known.
#[test]
fn the_current_folders_project_is_named_by_its_folder() {
    let (machine, data, _) = seeded();
    let here = mc_proxy::identify_project(&machine.path("work")).unwrap();
    let store = Store::open(data.join("context.db")).unwrap();
    store
        .write(|tx| {
            tx.upsert_session(
                &NewSession {
                    id: sid("sess-here"),
                    host: Host::ClaudeCode,
                    project: Some(here.clone()),
                },
                seen_ms(),
            )
        })
        .unwrap();
    drop(store);
    let run = machine.run(&["status"], &env(&data)).success();
    assert!(
        run.stdout
            .contains("sess-here  claude-code, project [TMP]/work, seen "),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains(", project proj-1,"), "{}", run.stdout);
    // Another folder's project is named by the folder the proxy last saw it in.
    let store = Store::open(data.join("context.db")).unwrap();
    let other = ProjectId::new("proj-1").unwrap();
    store
        .write(|tx| tx.note_project_folder(&other, "/srv/checkouts/shop", seen_ms()))
        .unwrap();
    drop(store);
    let run = machine.run(&["status"], &env(&data)).success();
    assert!(
        run.stdout.contains(", project /srv/checkouts/shop,"),
        "{}",
        run.stdout
    );
    let json = machine
        .run(&["status", "--json"], &env(&data))
        .success()
        .json();
    let ids: Vec<&str> = json["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|session| session["project"].as_str())
        .collect();
    assert!(ids.contains(&here.as_str()), "JSON keeps the id: {json}");
    let folders: Vec<&str> = json["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|session| session["project_folder"].as_str())
        .collect();
    assert!(folders.contains(&"/srv/checkouts/shop"), "{json}");
}
