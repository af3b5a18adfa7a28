//! What `status` and `doctor` say about the team store: whether it answers now, how many
//! writes wait in the local queue, and when the cache last synced.
//!
//! An unreachable team store is not an error of the proxy (requests keep flowing from the
//! local cache and writes queue), so this reports, it never fails a command. The URL is
//! shown with its password redacted.

use std::time::Duration;

use mc_core::config::Config;
use mc_store::Store;
use mc_team_store::{TEAM_SCHEMA_VERSION, TeamStore};
use serde_json::{Value, json};

use crate::status_cmd::age;

/// The probe gives up after this: `status` must stay quick with the server down.
const PROBE_DEADLINE: Duration = Duration::from_secs(3);

/// The team store's state, or `None` when no team store is configured.
pub fn team_report(config: &Config, store: &Store) -> Option<Value> {
    let url = config.team_store.url.clone()?;
    let shown = url.redacted().to_owned();
    let (queued, oldest_ms, synced_ms) = store
        .read(|tx| {
            let (queued, oldest) = tx.team_queue()?;
            Ok((queued, oldest, tx.team_last_sync_ms()?))
        })
        .unwrap_or((0, None, None));
    let reached = probe(url);
    Some(json!({
        "url": shown,
        "reachable": reached.is_ok(),
        "schema_version": reached.as_ref().ok(),
        "supported_schema_version": TEAM_SCHEMA_VERSION,
        "error": reached.err(),
        "queued_writes": queued,
        "oldest_queued_ms": oldest_ms,
        "last_synced_ms": synced_ms,
    }))
}

/// Connects, checks (and if needed brings up) the team schema, and says its version.
fn probe(url: mc_core::config::TeamStoreUrl) -> Result<i32, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| error.to_string())?;
    runtime.block_on(async {
        let team = TeamStore::new(url).map_err(|error| error.to_string())?;
        match tokio::time::timeout(PROBE_DEADLINE, team.migrate()).await {
            Ok(Ok(version)) => Ok(version),
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err(format!("no answer within {} s", PROBE_DEADLINE.as_secs())),
        }
    })
}

/// One line for `status` (and `doctor`, after its label).
pub fn team_line(report: &Value, now_ms: i64) -> String {
    let url = report["url"].as_str().unwrap_or_default();
    let queued = report["queued_writes"].as_u64().unwrap_or_default();
    let synced = match report["last_synced_ms"].as_i64() {
        Some(at_ms) => format!("cache synced {}", age(now_ms, at_ms)),
        None => "cache never synced".to_owned(),
    };
    let waiting = match (queued, report["oldest_queued_ms"].as_i64()) {
        (0, _) | (_, None) => "no writes queued".to_owned(),
        (n, Some(at_ms)) => format!(
            "{n} write{} queued (oldest {}), landing when it answers",
            if n == 1 { "" } else { "s" },
            age(now_ms, at_ms)
        ),
    };
    if report["reachable"] == Value::Bool(true) {
        format!(
            "team store: {url} reachable (schema v{}); {synced}; {waiting}\n",
            report["schema_version"]
        )
    } else {
        format!(
            "team store: {url} UNREACHABLE ({}); requests are served from the local cache ({synced}); {waiting}\n",
            report["error"].as_str().unwrap_or("no answer")
        )
    }
}
