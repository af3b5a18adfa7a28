//! `magic-context reduce [--session ID] "3-5,12"`: the operator's way to queue drops.
//!
//! The command only queues: the drops land on the session's next pass that may change the
//! cached prefix (DESIGN §5), so running it never costs a cache write by itself. It opens the
//! same store as `doctor` and loads the same configuration as `config show`, so the protected
//! window it reports is the one the proxy will apply.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use mc_config::{ConfigSources, find_project_root, load};
use mc_core::SessionId;
use mc_core::reduction::QueueOutcome;
use mc_engine::Engine;
use mc_store::{LocationEnv, Platform, Store, StoreOptions, resolve_data_dir};
use serde_json::{Value, json};

use crate::clock::now_ms;
use crate::output::{pretty, write_stdout};
use crate::session_choice::choose;

/// Who queued the drops, as recorded in the store.
const SOURCE: &str = "operator";

/// Arguments of `reduce`.
#[derive(Debug, Args)]
pub struct ReduceArgs {
    /// The session whose tags are dropped (its id as the client or the proxy named it)
    /// [default: the most recently seen session of the current folder's project].
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,

    /// Tags to drop: numbers and ranges, e.g. "3-5,12" (a `§` around numbers is accepted).
    #[arg(value_name = "TAGS")]
    pub spec: String,

    /// Print one JSON object: {"session", "spec", "queued", "waiting", "refused"}.
    #[arg(long)]
    pub json: bool,

    /// Project root whose .magic-context.jsonc applies [default: the git root of the current
    /// directory, else the current directory].
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

/// Queues the drops and reports what became of each tag.
pub fn run(args: &ReduceArgs) -> anyhow::Result<ExitCode> {
    let here = std::env::current_dir().context("cannot read the current directory")?;
    let root = match &args.project {
        Some(dir) => dir.clone(),
        None => find_project_root(&here),
    };
    let loaded = load(&ConfigSources::discover(Some(&root)));
    for diagnostic in &loaded.diagnostics {
        tracing::warn!(%diagnostic, "configuration value ignored");
    }
    let protected = loaded.config.reduction.protected_tags;
    let location = resolve_data_dir(&LocationEnv::from_process(), Platform::current())
        .context("cannot find the data directory")?;
    let store = Store::open_location(&location, StoreOptions::default())
        .with_context(|| format!("cannot open the store {}", location.db_path().display()))?;
    let session = choose(&store, args.session.as_deref(), &root)?;
    let engine = Engine::new(store, loaded.config);
    let outcome = engine
        .queue_drops(&session, &args.spec, SOURCE, now_ms()?)
        .with_context(|| format!("cannot queue drops \"{}\"", args.spec))?;
    let report = report_json(&session, &args.spec, &outcome);
    if args.json {
        write_stdout(&pretty(&report)?)?;
    } else {
        write_stdout(&report_text(&report, protected))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Queued tags are those accepted and landable on the next bust; waiting ones are accepted
/// but protected; refused ones carry their reason both as a stable code and as a sentence.
fn report_json(session: &SessionId, spec: &str, outcome: &QueueOutcome) -> Value {
    let waiting: Vec<u32> = outcome.waiting().map(|tag| tag.0).collect();
    let queued: Vec<u32> = outcome
        .accepted
        .iter()
        .map(|tag| tag.0)
        .filter(|tag| !waiting.contains(tag))
        .collect();
    let refused: Vec<Value> = outcome
        .rejected()
        .map(|(tag, reason)| {
            json!({
                "tag": tag.0,
                "reason": serde_json::to_value(reason).unwrap_or(Value::Null),
                "message": reason.to_string(),
            })
        })
        .collect();
    json!({
        "session": session.as_str(),
        "spec": spec,
        "queued": queued,
        "waiting": waiting,
        "refused": refused,
    })
}

/// One line per group, then what happens next.
fn report_text(report: &Value, protected: u32) -> String {
    let tags = |key: &str| -> String {
        report[key]
            .as_array()
            .map(|tags| {
                tags.iter()
                    .map(|tag| format!("§{tag}§"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default()
    };
    let mut out = String::new();
    let queued = tags("queued");
    if !queued.is_empty() {
        out.push_str(&format!(
            "queued   {queued}: they land on the next pass allowed to change the cached prefix\n"
        ));
    }
    let waiting = tags("waiting");
    if !waiting.is_empty() {
        out.push_str(&format!(
            "waiting  {waiting}: among the newest {protected} tags (protected); queued, they land once they age out\n"
        ));
    }
    for refused in report["refused"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "refused  §{}§: {}\n",
            refused["tag"],
            refused["message"].as_str().unwrap_or_default()
        ));
    }
    if out.is_empty() {
        out.push_str("nothing to queue\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use mc_core::reduction::DropRejection;
    use mc_core::tags::TagNo;

    use super::*;

    #[test]
    fn text_report_groups_tags_and_explains_refusals() {
        let outcome = QueueOutcome {
            accepted: [TagNo(3), TagNo(4), TagNo(30)].into(),
            notes: [
                (TagNo(30), DropRejection::Protected),
                (TagNo(99), DropRejection::UnknownTag),
            ]
            .into(),
            ..QueueOutcome::default()
        };
        let session = SessionId::new("s1").unwrap();
        let report = report_json(&session, "3-4,30,99", &outcome);
        assert_eq!(report["queued"], json!([3, 4]));
        assert_eq!(report["waiting"], json!([30]));
        assert_eq!(
            report["refused"],
            json!([{"tag": 99, "reason": "unknown_tag", "message": "no such tag"}])
        );
        assert_eq!(
            report_text(&report, 20),
            "queued   §3§ §4§: they land on the next pass allowed to change the cached prefix\n\
             waiting  §30§: among the newest 20 tags (protected); queued, they land once they age out\n\
             refused  §99§: no such tag\n"
        );
    }
}
