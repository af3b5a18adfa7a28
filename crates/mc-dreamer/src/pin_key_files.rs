//! The `pin_key_files` task: the files the project's agent keeps re-reading, pinned in
//! `m[0]` so it need not read them again. Deterministic; no model is asked.
//!
//! The reads come from the raw log: every tool call of the project's sessions in the last
//! 30 days that reads one file (Claude Code's `Read`, OpenCode's `read`, an editor's
//! `view`, a shell `cat`, `head` or `sed -n` of one path, as the reclaim lanes recognise
//! them), its path taken relative to the project's folder. They are ranked by
//! recency-weighted count ([`rank_reads`]); a file read fewer than
//! `dreamer.pin_key_files_min_reads` times is not a key file. The first
//! `dreamer.pin_key_files_max_files` of them that can still be read are pinned, within
//! `dreamer.pin_key_files_budget_tokens`: whole when they fit, else their first lines when
//! enough room is left, else not at all (a smaller file further down may still fit).
//!
//! Only files the project's listing holds are read (git's, so an ignored `.env` or build
//! output is never pinned), through the same read-only access the other tasks use: no
//! path out of the folder, no link out of it, nothing over the size cap. A file that is
//! gone is simply not pinned, so the next run drops it. The pins replace the project's
//! earlier ones in one transaction; the head reads them only when it is rebuilt anyway, so
//! a new pin never busts a cache.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;

use mc_core::dreamer::{FileRead, LOOKBACK_MS, RankedFile, project_relative, rank_reads};
use mc_core::head::{KEY_FILES_OPENING, KeyFile};
use mc_core::reclaim::read_path;
use mc_core::{ContentHash, Part};
use mc_store::PinnedFile;

use crate::batches::TaskContext;
use crate::error::Result;
use crate::project_folder::ProjectFolder;
use crate::report::{Failure, TaskReport};

/// Characters counted per token when fitting files to the budget: fewer than source code
/// averages, so what the dreamer stores still fits when the head counts with the real
/// tokenizer.
pub const CHARS_PER_TOKEN: usize = 3;

/// The least room, in characters, worth an excerpt: under it a file's first lines say too
/// little, and the room is left to a smaller file further down.
pub const MIN_EXCERPT_CHARS: usize = 600;

/// The characters the head adds around one file (its element and an excerpt's last line),
/// beside the path.
const FILE_FRAME_CHARS: usize = 90;

/// Runs `pin_key_files` on the context's project.
pub fn pin_key_files(ctx: &TaskContext<'_>) -> Result<TaskReport> {
    let Some(folder) = ctx.folder else {
        return Ok(TaskReport::no_folder());
    };
    let now_ms = (ctx.clock)();
    let messages = ctx.store.read(|tx| {
        tx.project_assistant_messages_since(ctx.project, now_ms.saturating_sub(LOOKBACK_MS))
    })?;
    let reads = file_reads(folder, &messages);
    let ranked = rank_reads(&reads, now_ms, ctx.settings.pin_key_files_min_reads);
    let listed: HashSet<String> = folder.list_files()?.into_iter().collect();
    let chosen = choose(folder, &listed, &ranked, ctx);
    let before = ctx.store.read(|tx| tx.key_files(ctx.project))?;
    let mut report = TaskReport::default();
    if !(ctx.keep_lease)()? {
        report.failure = Some(Failure::new(
            "lease_lost",
            "another dreamer took the lease; the pins were not written",
        ));
        return Ok(report);
    }
    let pins: Vec<PinnedFile> = chosen.pins.iter().map(|(pin, _)| pin.clone()).collect();
    ctx.store
        .write(|tx| tx.replace_key_files(ctx.project, &pins, now_ms))?;
    report.changes = changed(&before, &pins);
    report.detail = describe(&reads, &ranked, &chosen);
    Ok(report)
}

/// Every read of a project file in `messages` (stored at the time beside each), each
/// message once: a fork's copy of its parent's messages is the same reads.
fn file_reads(folder: &ProjectFolder, messages: &[(i64, mc_core::Message)]) -> Vec<FileRead> {
    let root = folder.root().to_string_lossy().into_owned();
    let mut seen = HashSet::new();
    let mut relative_of: HashMap<String, Option<String>> = HashMap::new();
    let mut reads = Vec::new();
    for (at_ms, message) in messages {
        if !seen.insert(message.content_hash()) {
            continue;
        }
        for part in &message.parts {
            let Part::ToolCall { name, input, .. } = part else {
                continue;
            };
            let Some(path) = read_path(name, input) else {
                continue;
            };
            let relative = relative_of
                .entry(path)
                .or_insert_with_key(|path| inside(path, &root))
                .clone();
            if let Some(path) = relative {
                reads.push(FileRead {
                    path,
                    at_ms: *at_ms,
                });
            }
        }
    }
    reads
}

/// `path` relative to the canonical `root`; an absolute path written through a link to
/// the folder (the agent's working directory as the user typed it) is resolved first.
fn inside(path: &str, root: &str) -> Option<String> {
    project_relative(path, root).or_else(|| {
        let real = std::fs::canonicalize(Path::new(path)).ok()?;
        project_relative(&real.to_string_lossy(), root)
    })
}

/// What a run pinned, and the ranked files it left out with why.
struct Chosen {
    pins: Vec<(PinnedFile, usize)>,
    left_out: Vec<(String, String)>,
}

/// The pins, in rank order: the first `pin_key_files_max_files` ranked files that can be
/// read; those that fit whole in the budget are pinned whole first, so a large file does
/// not crowd out a small one, then the others, in rank order, as their first lines in
/// what is left.
fn choose(
    folder: &ProjectFolder,
    listed: &HashSet<String>,
    ranked: &[RankedFile],
    ctx: &TaskContext<'_>,
) -> Chosen {
    let settings = ctx.settings;
    let max_files = usize::try_from(settings.pin_key_files_max_files).unwrap_or(usize::MAX);
    let budget = usize::try_from(settings.pin_key_files_budget_tokens).unwrap_or(usize::MAX);
    let mut left_out = Vec::new();
    let mut candidates: Vec<(&RankedFile, String)> = Vec::new();
    for file in ranked {
        if candidates.len() >= max_files {
            break;
        }
        let read = if listed.contains(&file.path) {
            folder
                .read_text(&file.path)
                .map_err(|error| error.to_string())
        } else {
            Err("not in the project's files".to_owned())
        };
        match read {
            Ok(text) => candidates.push((file, text)),
            Err(why) => left_out.push((file.path.clone(), why)),
        }
    }
    let frame = |file: &RankedFile| file.path.len() + FILE_FRAME_CHARS;
    let mut room = budget
        .saturating_mul(CHARS_PER_TOKEN)
        .saturating_sub(KEY_FILES_OPENING.len() + "<key-files>\n\n</key-files>".len());
    let whole: Vec<bool> = candidates
        .iter()
        .map(|(file, text)| {
            let size = text.trim_end().len() + frame(file);
            let fits = size <= room;
            if fits {
                room -= size;
            }
            fits
        })
        .collect();
    let mut pins = Vec::new();
    for ((file, text), whole) in candidates.iter().zip(whole) {
        let fitted = if whole {
            Some((text.trim_end().to_owned(), 0))
        } else {
            fit(text, room.saturating_sub(frame(file)))
        };
        let Some((shown, cut_lines)) = fitted else {
            left_out.push((file.path.clone(), "no room left in the budget".to_owned()));
            continue;
        };
        if !whole {
            room = room.saturating_sub(shown.len() + frame(file));
        }
        let pin = PinnedFile {
            file: KeyFile {
                path: file.path.clone(),
                text: shown,
                cut_lines,
            },
            reads: file.reads,
            content_hash: ContentHash::from_bytes(*blake3::hash(text.as_bytes()).as_bytes()),
        };
        pins.push((pin, text.lines().count()));
    }
    Chosen { pins, left_out }
}

/// `text` whole when it fits in `room` characters, else its first whole lines that do and
/// how many lines are left out; `None` when not even an excerpt is worth the room.
fn fit(text: &str, room: usize) -> Option<(String, u32)> {
    let text = text.trim_end();
    if text.len() <= room {
        return Some((text.to_owned(), 0));
    }
    if room < MIN_EXCERPT_CHARS {
        return None;
    }
    let mut shown = 0;
    let mut kept_lines = 0;
    for line in text.split_inclusive('\n') {
        if shown + line.len() > room {
            break;
        }
        shown += line.len();
        kept_lines += 1;
    }
    if kept_lines == 0 {
        return None;
    }
    let cut = text.lines().count().saturating_sub(kept_lines);
    let excerpt = text.get(..shown)?.trim_end().to_owned();
    Some((excerpt, u32::try_from(cut).unwrap_or(u32::MAX)))
}

/// Pins added, dropped or changed against the project's earlier ones.
fn changed(before: &[PinnedFile], after: &[PinnedFile]) -> u32 {
    let key = |pin: &PinnedFile| (pin.file.path.clone(), pin.content_hash, pin.file.cut_lines);
    let before: BTreeSet<_> = before.iter().map(key).collect();
    let after: BTreeSet<_> = after.iter().map(key).collect();
    u32::try_from(before.symmetric_difference(&after).count()).unwrap_or(u32::MAX)
}

/// The run's detail: what was read, what was pinned, what was left out and why.
fn describe(reads: &[FileRead], ranked: &[RankedFile], chosen: &Chosen) -> String {
    let files: HashSet<&str> = reads.iter().map(|read| read.path.as_str()).collect();
    let pinned: Vec<String> = chosen
        .pins
        .iter()
        .map(|(pin, total_lines)| match pin.file.cut_lines {
            0 => format!("{} ({} reads)", pin.file.path, pin.reads),
            cut => format!(
                "{} ({} reads, first {} of {total_lines} lines)",
                pin.file.path,
                pin.reads,
                total_lines.saturating_sub(cut as usize)
            ),
        })
        .collect();
    let mut detail = format!(
        "{} reads of {} files, {} read often enough; pinned {}",
        reads.len(),
        files.len(),
        ranked.len(),
        if pinned.is_empty() {
            "none".to_owned()
        } else {
            pinned.join(", ")
        }
    );
    if !chosen.left_out.is_empty() {
        let left_out: Vec<String> = chosen
            .left_out
            .iter()
            .map(|(path, why)| format!("{path} ({why})"))
            .collect();
        detail.push_str(&format!("; left out {}", left_out.join(", ")));
    }
    detail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_fits_whole_or_as_its_first_lines_or_not_at_all() {
        let text = "line one\nline two\nline three\n";
        assert_eq!(fit(text, 1_000), Some((text.trim_end().to_owned(), 0)));
        let long = format!("{}\n", "x".repeat(99)).repeat(20);
        let (excerpt, cut) = fit(&long, 700).unwrap();
        assert_eq!((excerpt.lines().count(), cut), (7, 13));
        assert!(excerpt.len() <= 700);
        assert_eq!(fit(&long, MIN_EXCERPT_CHARS - 1), None);
    }
}
