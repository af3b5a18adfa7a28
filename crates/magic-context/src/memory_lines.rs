//! The JSON lines `memory export` writes and `memory import` reads.
//!
//! One object per line, keys in this order of meaning: `category` (one of the five names),
//! `content`, `status` (`active` or `permanent`; `archived` is read too), `source`
//! (`operator`, `agent` or `historian`), `seen_count`, `created_ms`, `updated_ms`. Store ids
//! are left out: they belong to one store, and an import into another assigns its own. Only
//! `category` and `content` are required on import (a hand-written file may omit the rest);
//! an unknown key is refused rather than silently dropped.
//!
//! Every line is read before anything is written: a bad line leaves the memories as they
//! were, and the error names the line. Into the local tables an import is one transaction.
//! Into a team store each line is its own write through the team's write path (queued
//! durably first); a line a live team memory already states is counted as present and not
//! sent, so importing twice changes nothing there either, and archived lines are left out
//! (the team keeps its own record of what it retired).

use std::io::Read;
use std::path::Path;

use anyhow::{Context, anyhow, bail};
use std::collections::HashSet;

use mc_core::ProjectId;
use mc_core::historian::fact_key;
use mc_store::{Added, MemoryRecord, MemorySource, MemoryStatus, NewMemory, StoreError};
use serde_json::{Map, Value};

use crate::memory_cmd::parse_category;
use crate::memory_place::MemoryPlace;

/// What an import did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Imported {
    /// New memories.
    pub added: u64,
    /// Lines a memory already present states.
    pub merged: u64,
    /// Lines waiting in the queue for a team store that does not answer.
    pub queued: u64,
    /// Archived lines a team store was not sent.
    pub skipped_archived: u64,
}

impl Imported {
    /// One line saying what happened.
    pub fn describe(&self) -> String {
        let mut text = format!(
            "imported {} new memories, {} already present",
            self.added, self.merged
        );
        if self.queued > 0 {
            text.push_str(&format!(
                ", {} queued for the team store, which does not answer",
                self.queued
            ));
        }
        if self.skipped_archived > 0 {
            text.push_str(&format!(
                ", {} archived lines left out",
                self.skipped_archived
            ));
        }
        text + "\n"
    }
}

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
pub fn export(place: &MemoryPlace<'_>, project: &ProjectId) -> anyhow::Result<String> {
    let memories = place
        .read(|knowledge| {
            knowledge.memories(project, &[MemoryStatus::Active, MemoryStatus::Permanent])
        })
        .context("cannot read the project's memories")?;
    let mut lines = String::new();
    for memory in memories {
        lines.push_str(&memory.record.export_line());
        lines.push('\n');
    }
    Ok(lines)
}

/// Imports the lines of `file` (stdin when `None`) into the project.
pub fn import(
    place: &MemoryPlace<'_>,
    project: &ProjectId,
    file: Option<&Path>,
    now_ms: i64,
) -> anyhow::Result<Imported> {
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
    if place.is_team() {
        return import_to_team(place, project, &records, now_ms)
            .with_context(|| format!("cannot import every memory from {name}"));
    }
    place
        .local_write(|tx| {
            let mut imported = Imported::default();
            for record in &records {
                match tx.import_memory(project, record, now_ms)? {
                    Added::New(_) => imported.added += 1,
                    Added::Merged(_) => imported.merged += 1,
                }
            }
            Ok(imported)
        })
        .with_context(|| format!("cannot import memories from {name}; nothing was imported"))
}

/// Sends each live record the team's memories do not state yet, one write each.
fn import_to_team(
    place: &MemoryPlace<'_>,
    project: &ProjectId,
    records: &[MemoryRecord],
    now_ms: i64,
) -> anyhow::Result<Imported> {
    let mut known: HashSet<String> = place
        .read(|knowledge| {
            knowledge.memories(project, &[MemoryStatus::Active, MemoryStatus::Permanent])
        })?
        .iter()
        .map(|memory| fact_key(&memory.record.content))
        .collect();
    let mut imported = Imported::default();
    for record in records {
        if record.status == MemoryStatus::Archived {
            imported.skipped_archived += 1;
            continue;
        }
        if !known.insert(fact_key(&record.content)) {
            imported.merged += 1;
            continue;
        }
        let memory = NewMemory {
            category: record.category,
            content: &record.content,
            source: record.source,
            permanent: record.status == MemoryStatus::Permanent,
        };
        match place.write(|knowledge| knowledge.add_memory(project, &memory, now_ms)) {
            Ok(Added::New(_)) => imported.added += 1,
            Ok(Added::Merged(_)) => imported.merged += 1,
            Err(StoreError::QueuedForTeam { .. }) => imported.queued += 1,
            Err(error) => return Err(error.into()),
        }
    }
    Ok(imported)
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
