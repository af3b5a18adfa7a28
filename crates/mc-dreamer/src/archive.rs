//! The `archive_stale_memories` task: an active memory nothing has used or restated for
//! `dreamer.archive_after_days` is retired.
//!
//! Deterministic, no model: the store records when a search last returned each memory and
//! when its fact was last stated again ([`mc_store::MemoryUse`]); a memory whose latest touch
//! (stored, changed, returned, restated) is older than the setting goes, with a log entry
//! naming the task and saying how long it lay untouched and what touched it last. Permanent
//! memories are the operator's and never go. The read and the archiving happen in one write
//! transaction, so a search recording use meanwhile is either seen or waits for the write: a
//! memory used within the threshold is never archived, and a second run archives nothing.
//! Like every dreamer change, an archive reaches the prompt at the next natural rebuild.

use std::cell::Cell;

use chrono::DateTime;
use mc_core::config::cutoff_ms;
use mc_store::{MemoryStatus, UsedMemory};

use crate::batches::TaskContext;
use crate::error::Result;
use crate::report::{Failure, TaskReport};
use crate::task::Task;

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// Why `memory` should be archived at `now_ms` when nothing may lie untouched longer than
/// `days`, or `None` when it stays (it is not active, or something touched it since).
pub fn staleness(memory: &UsedMemory, now_ms: i64, days: u32) -> Option<String> {
    if memory.memory.record.status != MemoryStatus::Active {
        return None;
    }
    let last_ms = memory.last_touched_ms();
    if last_ms >= cutoff_ms(now_ms, days) {
        return None;
    }
    let idle_days = now_ms.saturating_sub(last_ms) / DAY_MS;
    Some(format!(
        "nothing used or restated it for {idle_days} days (last {} on {})",
        last_touch(memory),
        day_of(last_ms)
    ))
}

/// What touched `memory` last, in words, the earliest-named kind winning a tie.
fn last_touch(memory: &UsedMemory) -> &'static str {
    let record = &memory.memory.record;
    let used = &memory.used;
    let touches = [
        (Some(record.created_ms), "stored"),
        (Some(record.updated_ms), "changed"),
        (used.last_retrieved_ms, "returned by a search"),
        (used.last_restated_ms, "stated again"),
        (
            used.recorded_from_ms,
            "counted as used when use began to be recorded",
        ),
    ];
    let last_ms = memory.last_touched_ms();
    touches
        .into_iter()
        .find(|(at, _)| *at == Some(last_ms))
        .map_or("stored", |(_, what)| what)
}

/// `YYYY-MM-DD` (UTC) of `ms`.
fn day_of(ms: i64) -> String {
    DateTime::from_timestamp_millis(ms).map_or_else(
        || format!("{ms} ms"),
        |at| at.format("%Y-%m-%d").to_string(),
    )
}

/// Runs `archive_stale_memories` on the context's project.
pub fn archive_stale_memories(ctx: &TaskContext<'_>) -> Result<TaskReport> {
    let mut report = TaskReport::default();
    if !(ctx.keep_lease)()? {
        report.failure = Some(Failure::new(
            "lease_lost",
            "another dreamer took the lease before anything was archived",
        ));
        return Ok(report);
    }
    let days = ctx.settings.archive_after_days;
    let task = Task::ArchiveStaleMemories.name();
    if let Some(team) = ctx.team {
        team.refresh(ctx.project, (ctx.clock)());
    }
    let active = Cell::new(0);
    let archived = ctx.maintain(|memories, now_ms| {
        let used = memories.memories_with_use(ctx.project, &[MemoryStatus::Active])?;
        active.set(used.len());
        let mut archived = 0;
        for memory in &used {
            if let Some(reason) = staleness(memory, now_ms, days) {
                memories.archive(ctx.project, memory.memory.id, task, &reason, now_ms)?;
                archived += 1;
            }
        }
        Ok(archived)
    })?;
    let active = active.get();
    report.changes = archived;
    report.detail =
        format!("{active} active memories, {archived} untouched for {days} days or more archived");
    Ok(report)
}

#[cfg(test)]
mod tests {
    use mc_core::head::MemoryCategory;
    use mc_store::{MemoryRecord, MemorySource, MemoryUse, StoredMemory};
    use proptest::prelude::*;

    use super::*;

    /// 2026-12-05 21:00 UTC.
    const NOW_MS: i64 = 1_796_504_400_000;

    fn memory(status: MemoryStatus, stored_ms: i64, used: MemoryUse) -> UsedMemory {
        UsedMemory {
            memory: StoredMemory {
                id: 1,
                record: MemoryRecord {
                    category: MemoryCategory::Naming,
                    content: "Crates are named mc-*.".into(),
                    status,
                    source: MemorySource::Historian,
                    seen_count: 1,
                    created_ms: stored_ms,
                    updated_ms: stored_ms,
                },
                superseded_by: None,
            },
            used,
        }
    }

    #[test]
    fn the_reason_says_how_long_and_what_touched_it_last() {
        let searched = MemoryUse {
            retrievals: 3,
            last_retrieved_ms: Some(NOW_MS - 100 * DAY_MS),
            ..MemoryUse::default()
        };
        let old = memory(MemoryStatus::Active, NOW_MS - 400 * DAY_MS, searched);
        assert_eq!(
            staleness(&old, NOW_MS, 90).as_deref(),
            Some(
                "nothing used or restated it for 100 days (last returned by a search on 2026-08-27)"
            )
        );
        assert_eq!(staleness(&old, NOW_MS, 101), None);
        let never = memory(
            MemoryStatus::Active,
            NOW_MS - 91 * DAY_MS,
            MemoryUse::default(),
        );
        assert_eq!(
            staleness(&never, NOW_MS, 90).as_deref(),
            Some("nothing used or restated it for 91 days (last stored on 2026-09-05)")
        );
        let permanent = memory(MemoryStatus::Permanent, 0, MemoryUse::default());
        assert_eq!(staleness(&permanent, NOW_MS, 90), None);
    }

    #[test]
    fn a_memory_untouched_for_exactly_the_threshold_stays() {
        let edge = memory(
            MemoryStatus::Active,
            NOW_MS - 90 * DAY_MS,
            MemoryUse::default(),
        );
        assert_eq!(staleness(&edge, NOW_MS, 90), None);
        let past = memory(
            MemoryStatus::Active,
            NOW_MS - 90 * DAY_MS - 1,
            MemoryUse::default(),
        );
        assert!(staleness(&past, NOW_MS, 90).is_some());
    }

    fn arb_time() -> impl Strategy<Value = Option<i64>> {
        proptest::option::of(0..NOW_MS)
    }

    proptest! {
        /// Whatever touched a memory last, it is archived exactly when that touch is older
        /// than the threshold, and only when it is active.
        #[test]
        fn archived_exactly_when_the_last_touch_is_older_than_the_threshold(
            stored_ms in 0..NOW_MS,
            retrieved in arb_time(),
            restated in arb_time(),
            recorded in arb_time(),
            days in 7u32..400,
            permanent in any::<bool>(),
        ) {
            let used = MemoryUse {
                retrievals: u64::from(retrieved.is_some()),
                last_retrieved_ms: retrieved,
                last_restated_ms: restated,
                recorded_from_ms: recorded,
            };
            let status = if permanent { MemoryStatus::Permanent } else { MemoryStatus::Active };
            let candidate = memory(status, stored_ms, used);
            let last = [Some(stored_ms), retrieved, restated, recorded]
                .into_iter()
                .flatten()
                .max()
                .unwrap_or(stored_ms);
            let stale = !permanent && last < NOW_MS - i64::from(days) * DAY_MS;
            prop_assert_eq!(staleness(&candidate, NOW_MS, days).is_some(), stale);
        }
    }
}
