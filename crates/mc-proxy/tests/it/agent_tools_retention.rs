//! Hidden exchanges are kept by use: a request that puts one back records when, and storing
//! a new one deletes those no request used for `tools.hidden_exchange_max_age_days`.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use mc_core::config::ToolsMode;
use serde_json::json;

use crate::agent_tools::{HEADERS, message, proxy, request, scripted, text, tool_use};
use crate::support::*;

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

fn now_ms() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// The stored exchanges, anchor and last use, by anchor.
fn exchanges(db: &Path) -> Vec<(String, i64)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    conn.prepare("SELECT anchor, last_used_ms FROM hidden_exchanges ORDER BY anchor")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

/// Runs `sql` on the store file, as another process would.
fn execute(db: &Path, sql: &str) {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    conn.execute_batch(sql).unwrap();
}

#[tokio::test]
async fn exchanges_unused_for_their_age_go_when_a_new_one_is_stored() {
    let upstream = scripted(vec![
        message(
            "msg_1",
            vec![tool_use(
                "toolu_1",
                "ctx_search",
                json!({"query": "indent"}),
            )],
            "tool_use",
        ),
        message("msg_2", vec![text("Tabs.")], "end_turn"),
        message("msg_3", vec![text("You're welcome.")], "end_turn"),
        message(
            "msg_4",
            vec![tool_use("toolu_4", "ctx_search", json!({"query": "tabs"}))],
            "tool_use",
        ),
        message("msg_5", vec![text("Still tabs.")], "end_turn"),
    ])
    .await;
    let proxy = proxy(&upstream, ToolsMode::Proxy).await;
    let db = proxy.store().path().to_path_buf();
    let ask = |turns: Vec<serde_json::Value>| {
        let body = request(&turns, false);
        let proxy = &proxy;
        async move {
            let reply = post(proxy, "/v1/messages", HEADERS, &body).await;
            assert_eq!(reply.status, 200, "{}", reply.text());
            reply.json()["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        }
    };

    // One hidden round: its exchange is stored, used as of now.
    let start = now_ms();
    assert_eq!(ask(vec![user("How do we indent?")]).await, "Tabs.");
    let stored = exchanges(&db);
    assert_eq!(stored.len(), 1);
    let (first, stored_at) = stored[0].clone();
    assert!(stored_at >= start, "{stored_at} < {start}");

    // Its last use ten days back; two more exchanges of conversations nobody continued, one
    // past the 30-day default and one inside it.
    let now = now_ms();
    execute(
        &db,
        &format!(
            "UPDATE hidden_exchanges SET last_used_ms = {ten} WHERE anchor = '{first}';
             INSERT INTO hidden_exchanges (anchor, splice, created_ms, last_used_ms)
                 VALUES ('stale', '{{}}', {old}, {old}), ('recent', '{{}}', {old}, {recent});",
            ten = now - 10 * DAY_MS,
            old = now - 31 * DAY_MS,
            recent = now - 29 * DAY_MS,
        ),
    );

    // The client goes on: the exchange is put back, and its use recorded.
    let mut turns = vec![
        user("How do we indent?"),
        assistant("Tabs."),
        user("Thanks."),
    ];
    assert_eq!(ask(turns.clone()).await, "You're welcome.");
    let used = exchanges(&db);
    let first_used = used.iter().find(|(anchor, _)| *anchor == first).unwrap().1;
    assert!(first_used >= now, "the splice recorded its use: {used:?}");
    assert_eq!(
        used.len(),
        3,
        "nothing is deleted until an exchange is stored"
    );
    let session = proxy.session_ids().remove(0);
    let log = proxy.messages(&session);

    // Another hidden round stores an exchange, and the one unused past the age goes.
    turns.extend([assistant("You're welcome."), user("Check again?")]);
    assert_eq!(ask(turns).await, "Still tabs.");
    let kept: Vec<String> = exchanges(&db)
        .into_iter()
        .map(|(anchor, _)| anchor)
        .collect();
    assert_eq!(kept.len(), 3, "{kept:?}");
    assert!(!kept.contains(&"stale".to_owned()), "{kept:?}");
    assert!(kept.contains(&"recent".to_owned()), "{kept:?}");
    assert!(kept.contains(&first), "{kept:?}");
    assert_eq!(
        proxy.messages(&session)[..log.len()],
        log[..],
        "the raw log is untouched"
    );
    proxy.shutdown().await;
}
