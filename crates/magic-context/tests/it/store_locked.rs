//! A store whose write lock another process holds: DESIGN §7 says a busy database never
//! lets a turn through unmanaged. A new request is refused with an Anthropic-shaped error and
//! nothing goes upstream; a request identical to one already managed is answered by sending
//! its managed bytes again; once the lock is released, the same session goes on and the
//! store is intact.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::support::Machine;
use crate::support::recording_relay::Relay;
use crate::support::servers::Server;
use crate::support::store_check::assert_doctor_verifies_chains;
use crate::support::stream_client::{exchange, request_body, user_text};

#[test]
fn a_locked_store_refuses_new_turns_and_sends_nothing_unmanaged() {
    let machine = Machine::fresh();
    let script = machine.path("script.json");
    std::fs::write(&script, r#"{"turns": [], "final_text": "Looked."}"#).unwrap();
    let sim = Server::sim(&script, 200_000, 1.0);
    let relay = Relay::start(&sim.base_url);
    let data = machine.path("data");
    let serve = Server::serve(&machine, &relay.base_url, &data, 200_000);
    let sent = AtomicUsize::new(0);
    let first = request_body(&[("user".into(), user_text(0, 0))]);
    let send = |key: &str, body: &[u8]| {
        exchange(&serve.base_url, "locked", key, body, &sent)
            .unwrap_or_else(|| panic!("no answer to {key}\n{}", serve.stderr()))
    };
    let (head, _) = send("0-0", &first);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(relay.log.received.load(Ordering::SeqCst), 1);

    // Another process takes the write lock and keeps it.
    let holder = rusqlite::Connection::open(data.join("context.db")).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let next = request_body(&[
        ("user".into(), user_text(0, 0)),
        ("assistant".into(), "Looked.".into()),
        ("user".into(), user_text(0, 1)),
    ]);
    let (head, body) = send("0-1", &next);
    assert!(head.starts_with("HTTP/1.1 503"), "{head}\n{body}");
    let error: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["type"], "error", "{error}");
    assert_eq!(error["error"]["type"], "overloaded_error", "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not sent unmanaged"),
        "{error}"
    );
    assert_eq!(
        relay.log.received.load(Ordering::SeqCst),
        1,
        "nothing went upstream"
    );

    // The first request again: the bytes its pass produced go up again, nothing else.
    let (head, _) = send("0-0", &first);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let bodies = relay.log.bodies("0-0");
    assert_eq!(bodies.len(), 2);
    assert!(bodies[0] == bodies[1], "the replay differs from the pass");

    holder.execute_batch("ROLLBACK").unwrap();
    drop(holder);
    let (head, body) = send("0-1", &next);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
    assert_eq!(relay.log.bodies("0-1").len(), 1);
    drop(serve);

    assert_doctor_verifies_chains(&machine, &data, 1, 3);
}

/// A lock held by another process when `serve` starts (longer than the busy timeout): the
/// proxy still starts and refuses managed calls without sending anything, and once the lock
/// is released it opens the store on the next call and manages it, with no restart.
#[test]
fn a_store_locked_before_serve_starts_refuses_until_released() {
    let machine = Machine::fresh();
    let script = machine.path("script.json");
    std::fs::write(&script, r#"{"turns": [], "final_text": "Looked."}"#).unwrap();
    let sim = Server::sim(&script, 200_000, 1.0);
    let relay = Relay::start(&sim.base_url);
    let data = machine.path("data");
    // The store exists, and another process holds its write lock before the proxy starts.
    drop(mc_store::Store::open(data.join("context.db")).unwrap());
    let holder = rusqlite::Connection::open(data.join("context.db")).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let serve = Server::serve(&machine, &relay.base_url, &data, 200_000);
    let sent = AtomicUsize::new(0);
    let body = request_body(&[("user".into(), user_text(0, 0))]);
    // Each refused call waits for an attempt to open the store for a bounded time, not for
    // the store's five-second busy timeout.
    for _ in 0..2 {
        let asked = Instant::now();
        let (head, answer) = exchange(&serve.base_url, "early", "0-0", &body, &sent).unwrap();
        let waited = asked.elapsed();
        assert!(
            head.starts_with("HTTP/1.1 503"),
            "{head}\n{answer}\n{}",
            serve.stderr()
        );
        assert!(waited < Duration::from_secs(3), "refused after {waited:?}");
        let error: serde_json::Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(error["type"], "error", "{error}");
        assert_eq!(error["error"]["type"], "overloaded_error", "{error}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains("not sent unmanaged"), "{message}");
        assert!(message.contains("locked"), "{message}");
    }
    assert_eq!(relay.log.received.load(Ordering::SeqCst), 0);
    holder.execute_batch("ROLLBACK").unwrap();
    drop(holder);
    let (head, answer) = exchange(&serve.base_url, "early", "0-0", &body, &sent).unwrap();
    assert!(
        head.starts_with("HTTP/1.1 200"),
        "{head}\n{answer}\n{}",
        serve.stderr()
    );
    assert_eq!(relay.log.received.load(Ordering::SeqCst), 1);
    drop(serve);

    assert_doctor_verifies_chains(&machine, &data, 1, 1);
}
