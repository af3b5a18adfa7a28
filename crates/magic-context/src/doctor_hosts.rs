//! `doctor`'s check of each host `setup` configured: its config still points at the proxy
//! URL it was given, a Magic Context proxy answers there, the MCP server is registered
//! (where the host has MCP) and its command exists, and the host's compaction is off.
//!
//! A host whose proxy is not running is a warning, not a failure: the user may start
//! `serve` later, and `doctor`'s exit code speaks for the store (DESIGN §7).

use std::path::Path;

use serde_json::{Value, json};

use crate::config_doc::ConfigDoc;
use crate::host_config::Host;
use crate::proxy_probe::{Listener, probe_url};
use crate::setup_record::{self, FileRecord, PurposeName, SetupRecord};

/// One report per host with a setup record in `data_dir`.
pub fn check_hosts(data_dir: &Path) -> Vec<Value> {
    Host::ALL
        .into_iter()
        .filter_map(|host| match setup_record::read(data_dir, host) {
            Ok(None) => None,
            Ok(Some(record)) => Some(check_host(host, &record)),
            Err(error) => {
                Some(json!({"host": host.id(), "ok": false, "error": format!("{error:#}")}))
            }
        })
        .collect()
}

fn check_host(host: Host, record: &SetupRecord) -> Value {
    let points_at_proxy = holds_all(record, PurposeName::BaseUrl);
    let compaction_off = holds_all(record, PurposeName::Compaction);
    let mcp_registered = host
        .has_mcp()
        .then(|| holds_all(record, PurposeName::Mcp) && mcp_command_exists(record));
    let proxy = match probe_url(&record.proxy_url) {
        Some(Listener::MagicContext { store_ok: true, .. }) => "listening",
        Some(Listener::MagicContext {
            store_ok: false, ..
        }) => "store_unavailable",
        Some(Listener::Other) => "another_program",
        Some(Listener::Nothing) | None => "not_listening",
    };
    let ok = points_at_proxy && proxy == "listening" && mcp_registered != Some(false);
    json!({
        "host": host.id(),
        "ok": ok,
        "proxy_url": record.proxy_url,
        "config_points_at_proxy": points_at_proxy,
        "proxy": proxy,
        "mcp_registered": mcp_registered,
        "compaction_off": compaction_off,
        "files": record.files.iter().map(|file| file.path.display().to_string()).collect::<Vec<_>>(),
    })
}

/// Whether every key of `purpose` still holds the value `setup` wrote.
fn holds_all(record: &SetupRecord, purpose: PurposeName) -> bool {
    record.files.iter().all(|file| {
        let keys: Vec<_> = file
            .keys
            .iter()
            .filter(|key| key.purpose == purpose)
            .collect();
        if keys.is_empty() {
            return true;
        }
        let Some(doc) = read_doc(file) else {
            return false;
        };
        keys.iter()
            .all(|key| doc.get(&key.key).as_ref() == Some(&key.value))
    })
}

fn read_doc(file: &FileRecord) -> Option<ConfigDoc> {
    let text = std::fs::read_to_string(&file.path).ok()?;
    ConfigDoc::parse(file.format, &text).ok()
}

/// Whether the program each MCP entry runs still exists (the binary may have moved).
fn mcp_command_exists(record: &SetupRecord) -> bool {
    record
        .files
        .iter()
        .flat_map(|file| &file.keys)
        .filter(|key| key.purpose == PurposeName::Mcp)
        .filter_map(|key| match &key.value {
            Value::String(command) => Some(command.as_str()),
            Value::Object(entry) => match &entry.get("command")? {
                Value::String(command) => Some(command.as_str()),
                Value::Array(parts) => parts.first()?.as_str(),
                _ => None,
            },
            _ => None,
        })
        .all(|command| Path::new(command).is_file())
}

/// The text lines for the host reports.
pub fn render_hosts(hosts: &[Value]) -> String {
    let mut out = String::new();
    for host in hosts {
        let id = host["host"].as_str().unwrap_or("?");
        if let Some(error) = host["error"].as_str() {
            out.push_str(&format!("host    {id}  FAIL  {error}\n"));
            continue;
        }
        let url = host["proxy_url"].as_str().unwrap_or("?");
        let mut problems = Vec::new();
        if host["config_points_at_proxy"] != true {
            problems.push(format!(
                "its config no longer points at {url}; run `magic-context setup {id}` again"
            ));
        }
        match host["proxy"].as_str() {
            Some("listening") => {}
            Some("store_unavailable") => {
                problems.push(format!("the proxy at {url} cannot open its store"));
            }
            Some("another_program") => {
                problems.push(format!(
                    "another program listens at {url}, not magic-context"
                ));
            }
            _ => problems.push(format!(
                "no proxy listens at {url}; start one with `magic-context serve`"
            )),
        }
        if host["mcp_registered"] == false {
            problems.push(format!(
                "the MCP server is not registered (or its command moved); run `magic-context setup {id}` again"
            ));
        }
        if problems.is_empty() {
            let mcp = match host["mcp_registered"] {
                Value::Bool(true) => ", MCP server registered",
                _ => "",
            };
            out.push_str(&format!(
                "host    {id}  ok    goes through {url} (proxy listening){mcp}\n"
            ));
        } else {
            for problem in problems {
                out.push_str(&format!("host    {id}  WARN  {problem}\n"));
            }
        }
    }
    out
}
