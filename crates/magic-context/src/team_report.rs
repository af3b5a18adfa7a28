//! What `status` and `doctor` say about the team store: whether it answers now, how many
//! writes wait in the local queue, when the cache last synced, and who holds the team's
//! dreamer leases (the one dreamer of the team changing a project's memories: its holder,
//! the project, and when the lease lapses unless renewed, reckoned on the server's clock).
//!
//! An unreachable team store is not an error of the proxy (requests keep flowing from the
//! local cache and writes queue), so this reports, it never fails a command. The URL is
//! shown with its password redacted.

use std::time::Duration;

use mc_core::config::Config;
use mc_store::{Lease, Store};
use mc_team_store::{TEAM_SCHEMA_VERSION, TeamStore};
use serde_json::{Value, json};

use crate::status_cmd::{age, span};

/// The probe gives up after this: `status` must stay quick with the server down.
const PROBE_DEADLINE: Duration = Duration::from_secs(3);

/// The team store's state, or `None` when no team store is configured.
pub fn team_report(config: &Config, store: &Store) -> Option<Value> {
    let url = config.team_store.url.clone()?;
    let shown = url.redacted().to_owned();
    let (queued, oldest_ms, synced_ms, waiting) = store
        .read(|tx| {
            let (queued, oldest) = tx.team_queue()?;
            let waiting = (
                tx.team_note_queue()?,
                tx.team_use_queue()?,
                tx.team_commit_queue()?,
            );
            Ok((queued, oldest, tx.team_last_sync_ms()?, waiting))
        })
        .unwrap_or((0, None, None, (0, 0, 0)));
    let reached = probe(url);
    let (version, leases) = match &reached {
        Ok((version, leases)) => (Some(*version), leases.clone()),
        Err(_) => (None, Value::Null),
    };
    Some(json!({
        "url": shown,
        "reachable": reached.is_ok(),
        "schema_version": version,
        "supported_schema_version": TEAM_SCHEMA_VERSION,
        "error": reached.err(),
        "queued_writes": queued,
        "oldest_queued_ms": oldest_ms,
        "queued_note_changes": waiting.0,
        "queued_memory_uses": waiting.1,
        "unsent_commits": waiting.2,
        "last_synced_ms": synced_ms,
        "dreamer_leases": leases,
    }))
}

/// The team's dreamer leases as JSON: `domain`, `project` (for a project's memory lease),
/// `holder`, `acquired_ms`, `expires_ms` and `expires_in_ms` (negative once lapsed), both
/// on the server's clock.
fn leases_json(leases: &[Lease], server_now_ms: i64) -> Value {
    Value::from(
        leases
            .iter()
            .map(|lease| {
                json!({
                    "domain": lease.domain,
                    "project": lease.domain.strip_prefix("memories:"),
                    "holder": lease.owner,
                    "acquired_ms": lease.acquired_ms,
                    "expires_ms": lease.expires_ms,
                    "expires_in_ms": lease.expires_ms.saturating_sub(server_now_ms),
                })
            })
            .collect::<Vec<_>>(),
    )
}

/// Connects, checks (and if needed brings up) the team schema, and says its version with
/// the dreamer leases (`null` when they could not be read).
fn probe(url: mc_core::config::TeamStoreUrl) -> Result<(i32, Value), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| error.to_string())?;
    runtime.block_on(async {
        let team = TeamStore::new(url).map_err(|error| error.to_string())?;
        let asked = async {
            let version = team.migrate().await?;
            let leases = team
                .dreamer_leases()
                .await
                .map_or(Value::Null, |(leases, now_ms)| leases_json(&leases, now_ms));
            Ok::<_, mc_team_store::TeamStoreError>((version, leases))
        };
        match tokio::time::timeout(PROBE_DEADLINE, asked).await {
            Ok(Ok(found)) => Ok(found),
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
    let waiting = match report["queued_note_changes"].as_u64().unwrap_or_default() {
        0 => waiting,
        n => format!(
            "{waiting}; {n} smart note change{} queued",
            if n == 1 { "" } else { "s" }
        ),
    };
    let waiting = match report["queued_memory_uses"].as_u64().unwrap_or_default() {
        0 => waiting,
        n => format!(
            "{waiting}; the use of {n} memor{} waits to be sent",
            if n == 1 { "y" } else { "ies" }
        ),
    };
    let waiting = match report["unsent_commits"].as_u64().unwrap_or_default() {
        0 => waiting,
        n => format!(
            "{waiting}; {n} commit{} of the index wait{} to be shared",
            if n == 1 { "" } else { "s" },
            if n == 1 { "s" } else { "" }
        ),
    };
    if report["reachable"] == Value::Bool(true) {
        format!(
            "team store: {url} reachable (schema v{}); {synced}; {waiting}\n{}",
            report["schema_version"],
            lease_lines(&report["dreamer_leases"])
        )
    } else {
        format!(
            "team store: {url} UNREACHABLE ({}); requests are served from the local cache ({synced}); {waiting}\n",
            report["error"].as_str().unwrap_or("no answer")
        )
    }
}

/// One indented line per dreamer lease of the team: who holds which project's memories and
/// until when.
fn lease_lines(leases: &Value) -> String {
    let Some(leases) = leases.as_array() else {
        return "  dreamer leases: could not be read\n".to_owned();
    };
    if leases.is_empty() {
        return "  dreamer leases: none held (no dreamer is changing the team's memories)\n"
            .to_owned();
    }
    let mut lines = String::new();
    for lease in leases {
        let what = match lease["project"].as_str() {
            Some(project) => format!("the memories of {project}"),
            None => lease["domain"].as_str().unwrap_or_default().to_owned(),
        };
        let left_ms = lease["expires_in_ms"].as_i64().unwrap_or_default();
        let until = if left_ms > 0 {
            format!("expires in {} unless renewed", span(left_ms))
        } else {
            format!("lapsed {} ago; the next dreamer takes it", span(-left_ms))
        };
        lines.push_str(&format!(
            "  dreamer lease on {what}: held by {} ({until})\n",
            lease["holder"].as_str().unwrap_or_default()
        ));
    }
    lines
}
