//! The JSON lines `memory export` writes and `memory import` reads.
//!
//! One object per line, keys in this order of meaning: `category` (one of the five names),
//! `content`, `status` (`active` or `permanent`; `archived` is read too), `source`
//! (`operator`, `agent` or `historian`), `seen_count`, `created_ms`, `updated_ms`. Store ids
//! are left out: they belong to one store, and an import into another assigns its own. Only
//! `category` and `content` are required on import (a hand-written file may omit the rest);
//! an unknown key is refused rather than silently dropped.
//!
//! An import is one transaction: a bad line leaves the store as it was, and the error names
//! the line.

use std::io::Read;
use std::path::Path;

use anyhow::{Context, anyhow, bail};
use mc_core::ProjectId;
use mc_store::{Added, MemoryRecord, MemorySource, MemoryStatus, Store};
use serde_json::{Map, Value};

use crate::memory_cmd::parse_category;

/// The keys a line may carry.
const KEYS: [&str; 7] = [
    "category",
    "content",
    "status",
    "source",
    "seen_count",
    "created_ms",
    "updated_ms",
];

/// The project's live memories, one JSON line each, oldest first.
pub fn export(store: &Store, project: &ProjectId) -> anyhow::Result<String> {
    let memories = store
        .read(|tx| tx.memories(project, &[MemoryStatus::Active, MemoryStatus::Permanent]))
        .context("cannot read the project's memories")?;
    let mut lines = String::new();
    for memory in memories {
        lines.push_str(&memory.record.export_line());
        lines.push('\n');
    }
    Ok(lines)
}

/// Imports the lines of `file` (stdin when `None`) into the project; returns how many were
/// new and how many merged into memories already present.
pub fn import(
    store: &Store,
    project: &ProjectId,
    file: Option<&Path>,
    now_ms: i64,
) -> anyhow::Result<(u64, u64)> {
    let (text, name) = match file {
        Some(path) => (
            std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?,
            path.display().to_string(),
        ),
        None => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("cannot read stdin")?;
            (text, "stdin".to_owned())
        }
    };
    let mut records = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record = parse_line(line, now_ms)
            .with_context(|| format!("line {} of {name} is not a memory", index + 1))?;
        records.push(record);
    }
    store
        .write(|tx| {
            let (mut added, mut merged) = (0, 0);
            for record in &records {
                match tx.import_memory(project, record, now_ms)? {
                    Added::New(_) => added += 1,
                    Added::Merged(_) => merged += 1,
                }
            }
            Ok((added, merged))
        })
        .with_context(|| format!("cannot import memories from {name}; nothing was imported"))
}

fn parse_line(line: &str, now_ms: i64) -> anyhow::Result<MemoryRecord> {
    let value: Value = serde_json::from_str(line).context("it is not JSON")?;
    let Value::Object(object) = value else {
        bail!("it is not a JSON object");
    };
    if let Some(unknown) = object.keys().find(|key| !KEYS.contains(&key.as_str())) {
        bail!("unknown key `{unknown}`; a memory has {}", KEYS.join(", "));
    }
    let category = parse_category(
        text(&object, "category")?.ok_or_else(|| anyhow!("`category` is missing"))?,
    )?;
    let content = text(&object, "content")?
        .ok_or_else(|| anyhow!("`content` is missing"))?
        .to_owned();
    let status = match text(&object, "status")? {
        None => MemoryStatus::Active,
        Some(name) => MemoryStatus::parse(name)
            .ok_or_else(|| anyhow!("unknown status `{name}`; use active, permanent or archived"))?,
    };
    let source = match text(&object, "source")? {
        None => MemorySource::Operator,
        Some(name) => MemorySource::parse(name)
            .ok_or_else(|| anyhow!("unknown source `{name}`; use operator, agent or historian"))?,
    };
    let created_ms = number(&object, "created_ms")?.unwrap_or(now_ms);
    Ok(MemoryRecord {
        category,
        content,
        status,
        source,
        seen_count: match number(&object, "seen_count")? {
            None => 1,
            Some(count) => u64::try_from(count)
                .ok()
                .filter(|count| *count >= 1)
                .ok_or_else(|| anyhow!("`seen_count` must be 1 or more"))?,
        },
        created_ms,
        updated_ms: number(&object, "updated_ms")?.unwrap_or(created_ms),
    })
}

fn text<'a>(object: &'a Map<String, Value>, key: &str) -> anyhow::Result<Option<&'a str>> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => bail!("`{key}` must be a string"),
    }
}

fn number(object: &Map<String, Value>, key: &str) -> anyhow::Result<Option<i64>> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_i64()
            .map(Some)
            .ok_or_else(|| anyhow!("`{key}` must be a whole number")),
    }
}
