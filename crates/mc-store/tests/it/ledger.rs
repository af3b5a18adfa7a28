//! The call ledger (schema v3) and the session status built on it.

use mc_core::tags::{TagAssignment, TagNo, UnitRef};
use mc_store::{
    BustCount, CallRow, ContextUse, PassRow, SCHEMA_VERSION, SessionStatus, Store, StoreError,
    TokenTotals,
};

use crate::support::{NOW_MS, TempStore, new_session, seed, sid, turns};

/// A successful call of `session` started at `NOW_MS + offset_ms`, with its input figures.
fn call(session: &str, offset_ms: i64, uncached: u64, write: u64, read: u64) -> CallRow {
    CallRow {
        session: Some(sid(session)),
        pass_seq: None,
        started_ms: NOW_MS + offset_ms,
        route: "anthropic".into(),
        model: "claude-sonnet-4-5".into(),
        pass_kind: Some("cache_hit".into()),
        bust_cause: None,
        status: 200,
        uncached_tokens: Some(uncached),
        cache_write_tokens: Some(write),
        cache_read_tokens: Some(read),
        output_tokens: Some(100),
        first_byte_ms: Some(400),
        total_ms: 2_000,
        stop_reason: Some("end_turn".into()),
        usable_window: Some(168_000),
        overflow_retry: false,
        error: None,
        client_prompt_tokens: Some(uncached + write + read + 2_000),
        client_fixed_tokens: Some(1_500),
        window_tokens: Some(200_000),
    }
}

/// A call the provider answered with an error and no usage.
fn failed(session: &str, offset_ms: i64, status: u16, error: &str) -> CallRow {
    CallRow {
        status,
        uncached_tokens: None,
        cache_write_tokens: None,
        cache_read_tokens: None,
        output_tokens: None,
        stop_reason: None,
        error: Some(error.into()),
        ..call(session, offset_ms, 0, 0, 0)
    }
}

fn pass(seq: u64, kind: &str, cause: Option<&str>) -> PassRow {
    PassRow {
        seq,
        at_ms: NOW_MS + i64::try_from(seq).unwrap() * 1_000,
        kind: kind.into(),
        cause: cause.map(Into::into),
        tokens_removed: 0,
    }
}

fn pass_at(seq: u64, at_ms: i64) -> PassRow {
    PassRow {
        at_ms,
        ..pass(seq, "hard_fold", Some("first_render"))
    }
}

fn record(store: &Store, calls: &[CallRow]) -> Vec<i64> {
    store
        .write(|tx| calls.iter().map(|row| tx.record_call(row)).collect())
        .unwrap()
}

#[test]
fn a_v2_store_migrates_to_the_current_schema_and_keeps_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("context.db");
    {
        // A store as schema v2 left it, written without this binary's migrations.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(include_str!(
            "../../src/migrations/0001_sessions_messages.sql"
        ))
        .unwrap();
        conn.execute_batch(include_str!("../../src/migrations/0002_engine_state.sql"))
            .unwrap();
        conn.execute_batch(
            "INSERT INTO schema_migrations VALUES
                 (1, 'sessions and raw messages'), (2, 'engine state: tags, drops, passes');
             INSERT INTO sessions (id, host, created_ms, last_seen_ms)
                 VALUES ('old', 'claude-code', 1, 2);
             INSERT INTO passes (session_id, seq, at_ms, kind, cause)
                 VALUES ('old', 0, 2, 'hard_fold', 'first_render');
             PRAGMA user_version = 2;",
        )
        .unwrap();
    }

    let store = Store::open(&path).unwrap();
    let version = store.read(|tx| tx.health()).unwrap().schema_version;
    assert_eq!(version, SCHEMA_VERSION);
    record(&store, &[call("old", 0, 10, 0, 0)]);
    let status = store
        .read(|tx| tx.session_status(&sid("old")))
        .unwrap()
        .unwrap();
    assert_eq!(status.session.last_seen_ms, 2);
    assert_eq!(status.last_pass, Some(pass_at(0, 2)));
    assert_eq!(status.calls, 1);
}

#[test]
fn calls_read_back_whole_newest_first() {
    let fixture = TempStore::new();
    let store = &fixture.store;
    seed(store, "s", &turns(1), NOW_MS);
    let mut oldest = call("s", 0, 1_000, 20_000, 0);
    oldest.pass_seq = Some(0);
    oldest.pass_kind = Some("hard_fold".into());
    oldest.bust_cause = Some("first_render".into());
    let mut retry = failed("s", 5_000, 200, "stream cut");
    retry.overflow_retry = true;
    retry.first_byte_ms = None;
    retry.usable_window = None;
    let tie = call("s", 5_000, 3, 0, 21_000);
    let ids = record(store, &[oldest.clone(), retry.clone(), tie.clone()]);
    assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "{ids:?}");

    // Same start: the one recorded later is newer.
    let newest_two = store.read(|tx| tx.calls(&sid("s"), 2)).unwrap();
    assert_eq!(newest_two, [tie.clone(), retry.clone()]);
    let all = store.read(|tx| tx.calls(&sid("s"), 10)).unwrap();
    assert_eq!(all, [tie, retry, oldest]);
    assert!(
        store
            .read(|tx| tx.calls(&sid("nobody"), 10))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_call_may_have_no_session_but_not_a_made_up_one() {
    let fixture = TempStore::new();
    let store = &fixture.store;
    let refused = CallRow {
        session: None,
        ..failed("x", 0, 503, "store unavailable")
    };
    record(store, std::slice::from_ref(&refused));
    assert_eq!(
        store.read(|tx| tx.unattributed_calls(10)).unwrap(),
        [refused]
    );

    let err = store
        .write(|tx| tx.record_call(&call("ghost", 0, 1, 0, 0)))
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::UnknownSession { session } if session.as_str() == "ghost"),
        "{err}"
    );
    let conn = rusqlite::Connection::open(fixture.path()).unwrap();
    let rows: i64 = conn
        .query_row("SELECT count(*) FROM calls", [], |row| row.get(0))
        .unwrap();
    assert_eq!(rows, 1, "only the unattributed call is stored");
}

#[test]
fn status_aggregates_calls_passes_and_drops() {
    let fixture = TempStore::new();
    let store = &fixture.store;
    seed(store, "s", &turns(3), NOW_MS);
    seed(store, "other", &turns(1), NOW_MS);
    let units = (0..3).map(|ordinal| TagAssignment {
        tag: TagNo(u32::try_from(ordinal).unwrap() + 1),
        unit: UnitRef { ordinal, part: 0 },
    });
    store
        .write(|tx| {
            tx.insert_tags(&sid("s"), &units.collect::<Vec<_>>())?;
            for tag in 1..=3 {
                tx.queue_drop(&sid("s"), TagNo(tag), "ctx_reduce", NOW_MS)?;
            }
            tx.land_drops(&sid("s"), &[TagNo(1)], 2)?;
            for row in [
                pass(0, "hard_fold", Some("first_render")),
                pass(1, "cache_hit", None),
                pass(2, "soft_bust", Some("execute_threshold")),
                pass(3, "soft_bust", Some("execute_threshold")),
                pass(4, "hard_fold", Some("cache_expired")),
            ] {
                tx.record_pass(&sid("s"), &row)?;
            }
            Ok(())
        })
        .unwrap();
    let retry = CallRow {
        overflow_retry: true,
        usable_window: Some(150_000),
        ..call("s", 4_000, 100, 5_000, 15_000)
    };
    record(
        store,
        &[
            call("s", 0, 1_000, 20_000, 0),
            call("s", 1_000, 500, 1_000, 20_000),
            failed("s", 3_000, 400, "prompt is too long"),
            retry,
            failed("s", 9_000, 529, "overloaded"),
            call("other", 10_000, 7, 7, 7),
        ],
    );

    let status = store
        .read(|tx| tx.session_status(&sid("s")))
        .unwrap()
        .unwrap();
    let session = store.read(|tx| tx.get_session(&sid("s"))).unwrap().unwrap();
    assert_eq!(
        status,
        SessionStatus {
            session,
            calls: 5,
            tokens: TokenTotals {
                uncached: 1_600,
                cache_write: 26_000,
                cache_read: 35_000,
                output: 300,
            },
            // The first call wrote the prefix and is left out.
            cache_read_share: Some(35_000.0 / 41_600.0),
            context: Some(ContextUse {
                used_tokens: 20_100,
                usable_window: Some(150_000),
                at_ms: NOW_MS + 4_000,
            }),
            busts: vec![
                BustCount {
                    cause: Some("execute_threshold".into()),
                    passes: 2
                },
                BustCount {
                    cause: Some("cache_expired".into()),
                    passes: 1
                },
                BustCount {
                    cause: Some("first_render".into()),
                    passes: 1
                },
            ],
            pending_drops: 2,
            last_pass: Some(pass(4, "hard_fold", Some("cache_expired"))),
            last_call_status: Some(529),
        }
    );
    let ratio = status.context.unwrap().used_ratio().unwrap();
    assert!((ratio - 0.134).abs() < 1e-12, "{ratio}");
}

#[test]
fn a_fresh_session_has_an_empty_status_and_an_unknown_one_none() {
    let fixture = TempStore::new();
    let store = &fixture.store;
    store
        .write(|tx| tx.upsert_session(&new_session("s"), NOW_MS))
        .unwrap();
    let empty = store
        .read(|tx| tx.session_status(&sid("s")))
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            empty.calls,
            empty.tokens,
            empty.cache_read_share,
            empty.context,
            empty.busts.len(),
            empty.pending_drops,
            empty.last_pass,
            empty.last_call_status,
        ),
        (0, TokenTotals::default(), None, None, 0, 0, None, None)
    );
    assert_eq!(
        store.read(|tx| tx.session_status(&sid("nope"))).unwrap(),
        None
    );

    // One call: the window is known, but there is no second call to measure the cache by.
    record(
        store,
        &[failed("s", 0, 529, "overloaded"), call("s", 1, 9, 90, 0)],
    );
    let status = store
        .read(|tx| tx.session_status(&sid("s")))
        .unwrap()
        .unwrap();
    assert_eq!(status.cache_read_share, None);
    assert_eq!(status.context.map(|context| context.used_tokens), Some(99));
    assert_eq!(status.last_call_status, Some(200));
}

#[test]
fn recent_sessions_come_most_recently_seen_first() {
    let fixture = TempStore::new();
    let store = &fixture.store;
    for (id, seen) in [("a", 3), ("b", 1), ("c", 2)] {
        store
            .write(|tx| tx.upsert_session(&new_session(id), NOW_MS + seen))
            .unwrap();
    }
    record(store, &[call("b", 0, 1, 2, 3)]);
    let recent = store.read(|tx| tx.recent_sessions_status(2)).unwrap();
    let ids: Vec<&str> = recent
        .iter()
        .map(|status| status.session.id.as_str())
        .collect();
    assert_eq!(ids, ["a", "c"]);
    let all = store.read(|tx| tx.recent_sessions_status(10)).unwrap();
    assert_eq!(all[2].calls, 1);
}

#[test]
fn a_rows_prompt_is_what_the_provider_reported() {
    assert_eq!(call("s", 0, 12, 100, 5_000).prompt_tokens(), Some(5_112));
    assert_eq!(failed("s", 0, 529, "overloaded").prompt_tokens(), None);
}

/// A call recorded before schema v24 reads back with no client prompt and no window, beside
/// calls that have them.
#[test]
fn calls_from_before_the_client_prompt_read_back_without_it() {
    let fixture = TempStore::new();
    let store = &fixture.store;
    seed(store, "s", &turns(1), NOW_MS);
    let recorded = call("s", 1_000, 10, 2_000, 30_000);
    record(store, std::slice::from_ref(&recorded));
    let conn = rusqlite::Connection::open(fixture.path()).unwrap();
    conn.execute(
        "INSERT INTO calls (session_id, started_ms, route, model, status, uncached_tokens,
           cache_write_tokens, cache_read_tokens, output_tokens, total_ms, overflow_retry)
         SELECT session_id, started_ms - 1000, route, model, status, uncached_tokens,
           cache_write_tokens, cache_read_tokens, output_tokens, total_ms, overflow_retry
         FROM calls",
        [],
    )
    .unwrap();
    let old = CallRow {
        started_ms: NOW_MS,
        pass_kind: None,
        first_byte_ms: None,
        stop_reason: None,
        usable_window: None,
        client_prompt_tokens: None,
        client_fixed_tokens: None,
        window_tokens: None,
        ..recorded.clone()
    };
    assert_eq!(
        store.read(|tx| tx.calls(&sid("s"), 10)).unwrap(),
        [recorded, old]
    );
}
