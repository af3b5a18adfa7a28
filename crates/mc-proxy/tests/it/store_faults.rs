//! A store that cannot take a turn (DESIGN §7): full, or locked by another process since
//! before the proxy opened it. Each managed call is refused with a provider-shaped error that
//! names the cause, nothing goes upstream, the store is intact afterwards, and once the cause
//! is gone the proxy manages calls again without a restart.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use axum::http::{Method, StatusCode};
use mc_engine::Engine;
use mc_store::{Store, StoreOptions};
use serde_json::{Value, json};

use crate::support::{
    Proxy, Reply, Upstream, anthropic_message, anthropic_request, assistant, json_response, post,
    quiet_config, send, settings, user,
};

async fn post_anthropic(proxy: &Proxy, body: &Value) -> Reply {
    post(
        proxy,
        "/v1/messages",
        &[("x-api-key", "sk-ant-store")],
        body,
    )
    .await
}

async fn post_chat(proxy: &Proxy, body: &Value) -> Reply {
    let headers = [("authorization", "Bearer sk-store")];
    post(proxy, "/v1/chat/completions", &headers, body).await
}

/// An upstream answering every call with a short Anthropic message.
async fn answering_upstream() -> Upstream {
    Upstream::replying(|_, _| json_response(200, &anthropic_message("Noted."))).await
}

/// Every stored message of every session, with its hash chain link, in order: what a
/// refused call must leave exactly as it was.
fn raw_log(db: &Path) -> Vec<(String, i64, Vec<u8>)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut statement = conn
        .prepare("SELECT session_id, ordinal, chain FROM messages ORDER BY session_id, ordinal")
        .unwrap();
    statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

fn assert_chains_verify(db: &Path, messages: u64) {
    let report = Store::open(db)
        .unwrap()
        .read(|tx| tx.verify_chains())
        .unwrap();
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.messages_checked, messages, "{report:?}");
}

/// A follow-up that needs new pages: its new message spills onto overflow pages.
fn follow_up() -> Value {
    let long = "The build log says: ".to_owned() + &"compiling crate; ".repeat(4_000);
    anthropic_request(&[user("hello"), assistant("Noted."), user(&long)])
}

#[tokio::test]
async fn a_full_store_refuses_turns_on_both_wires_and_keeps_what_it_holds() {
    let upstream = answering_upstream().await;
    let first = Proxy::over_store(
        settings(&upstream.url()),
        tempfile::tempdir().unwrap(),
        StoreOptions::default(),
    )
    .await;
    let reply = post_anthropic(&first, &anthropic_request(&[user("hello")])).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let dir = first.stop().await;
    let db = dir.path().join("context.db");
    let before = raw_log(&db);
    assert_eq!(before.len(), 1);

    // The store may not grow by a page: any turn that needs one meets SQLITE_FULL, as it
    // would on a full disk. VACUUM first, so no free page inside the file absorbs it.
    let pages: u64 = {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch("VACUUM").unwrap();
        conn.query_row("PRAGMA page_count", [], |row| row.get(0))
            .unwrap()
    };
    let full = StoreOptions {
        max_pages: Some(pages),
        ..StoreOptions::default()
    };
    let proxy = Proxy::over_store(settings(&upstream.url()), dir, full).await;
    let reply = post_anthropic(&proxy, &follow_up()).await;
    assert_eq!(
        reply.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        reply.text()
    );
    let body = reply.json();
    assert_eq!(body["type"], "error", "{body}");
    assert_eq!(body["error"]["type"], "overloaded_error", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    let named = format!("the disk holding the store at {} is full", db.display());
    assert!(message.contains(&named), "{message}");
    assert!(message.contains("free some space"), "{message}");
    assert!(message.contains("not sent unmanaged"), "{message}");

    let chat = json!({
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "compiling crate; ".repeat(4_000)}],
    });
    let reply = post_chat(&proxy, &chat).await;
    assert_eq!(
        reply.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        reply.text()
    );
    let body = reply.json();
    assert_eq!(body["error"]["type"], "server_error", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(&named), "{message}");
    assert_eq!(upstream.seen().len(), 1, "nothing went upstream unmanaged");

    let dir = proxy.stop().await;
    assert_eq!(
        raw_log(&db),
        before,
        "the refused turns changed the raw log"
    );
    assert_chains_verify(&db, 1);

    // Space freed: the same turn is managed.
    let proxy = Proxy::over_store(settings(&upstream.url()), dir, StoreOptions::default()).await;
    let reply = post_anthropic(&proxy, &follow_up()).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(upstream.seen().len(), 2);
    let _dir = proxy.stop().await;
    assert_chains_verify(&db, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_store_locked_before_the_proxy_opened_it_is_opened_once_released() {
    let upstream = answering_upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("context.db");
    drop(Store::open(&db).unwrap());
    let holder = rusqlite::Connection::open(&db).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();

    let attempts = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&attempts);
    let path = db.clone();
    let reopen: mc_proxy::Reopen = Box::new(move || {
        counted.fetch_add(1, Ordering::SeqCst);
        let store = Store::open(&path).map_err(|error| error.to_string())?;
        Ok(Engine::new(store, quiet_config()))
    });
    let proxy = Arc::new(
        Proxy::reopening(
            settings(&upstream.url()),
            dir,
            "the store stayed locked by another writer",
            reopen,
        )
        .await,
    );

    // A burst of calls while the lock is held: each is refused after a bounded wait, and
    // they share one attempt to open the store (which waits out SQLite's busy timeout).
    let started = Instant::now();
    let calls = (0..6).map(|turn| {
        let proxy = Arc::clone(&proxy);
        tokio::spawn(async move {
            let body = anthropic_request(&[user(&format!("turn {turn}"))]);
            let asked = Instant::now();
            let reply = post_anthropic(&proxy, &body).await;
            (reply, asked.elapsed())
        })
    });
    for call in calls {
        let (reply, waited) = call.await.unwrap();
        assert_eq!(
            reply.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{}",
            reply.text()
        );
        assert_eq!(reply.json()["error"]["type"], "overloaded_error");
        assert!(
            reply.text().contains("not sent unmanaged"),
            "{}",
            reply.text()
        );
        assert!(waited < mc_proxy::OPEN_WAIT * 3, "refused after {waited:?}");
    }
    assert!(started.elapsed() < mc_store::DEFAULT_BUSY_TIMEOUT);
    assert_eq!(attempts.load(Ordering::SeqCst), 1, "one attempt at a time");
    let health = send(Method::GET, &proxy.url(mc_proxy::HEALTH_PATH), &[], "").await;
    assert_eq!(health.json()["store"], "unavailable");
    assert_eq!(
        attempts.load(Ordering::SeqCst),
        1,
        "health joined the running attempt"
    );
    assert!(
        upstream.seen().is_empty(),
        "nothing went upstream unmanaged"
    );

    holder.execute_batch("ROLLBACK").unwrap();
    drop(holder);
    let reply = post_anthropic(&proxy, &anthropic_request(&[user("hello")])).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(upstream.seen().len(), 1);
    let reply = post_anthropic(
        &proxy,
        &anthropic_request(&[user("hello"), assistant("Noted."), user("more")]),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(upstream.seen().len(), 2);

    let proxy = Arc::into_inner(proxy).unwrap();
    let _dir = proxy.stop().await;
    assert_chains_verify(&db, 3);
}
