//! Publishing a run in one transaction: its compartments, facts and observations, and the
//! run's record, together or not at all. Publishing never touches the prompt: the next pass
//! that may change bytes moves the boundary (DESIGN §5).
//!
//! A rebuild's run ([`Destination::Staging`]) stages its compartments and stores no facts or
//! observations: the history it reads was counted when it was first summarised, and
//! counting it again would inflate how often each was seen.

use mc_store::{HistorianRun, Store, WriteTx};

use crate::error::Result;
use crate::job::{Destination, Job};
use crate::run::RunReport;

/// What publishing did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published {
    /// Compartments were appended; the history now ends after `covered_end`.
    Compartments {
        /// How many.
        count: u32,
        /// The last ordinal they cover.
        covered_end: u64,
    },
    /// Compartments were staged for a rebuild; the staged set now ends after
    /// `covered_end`.
    Staged {
        /// How many.
        count: u32,
        /// The last ordinal they cover.
        covered_end: u64,
    },
    /// The answer passed but its only compartment waits for more history.
    Held,
    /// Another run published this chunk first: nothing was appended.
    Stale,
    /// The run failed; only its record was stored.
    Failed,
}

impl Published {
    /// The run record's outcome word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Compartments { .. } => "published",
            Self::Staged { .. } => "staged",
            Self::Held => "held",
            Self::Stale => "stale",
            Self::Failed => "failed",
        }
    }
}

/// Publishes `report` for `job`, run between `started_ms` and `finished_ms`.
pub fn publish(
    store: &Store,
    job: &Job,
    report: &RunReport,
    started_ms: i64,
    finished_ms: i64,
) -> Result<Published> {
    Ok(store.write(|tx| {
        let published = match &report.accepted {
            None => Published::Failed,
            Some(_) if published_until(tx, job)? != job.chunk.start => Published::Stale,
            Some(accepted) => {
                let count = u32::try_from(accepted.compartments.len()).unwrap_or(u32::MAX);
                let covered_end = accepted.compartments.last().map(|last| last.end_ordinal);
                match (job.destination, covered_end) {
                    (_, None) => Published::Held,
                    (Destination::History, Some(covered_end)) => {
                        tx.append_compartments(&job.session, &accepted.compartments, finished_ms)?;
                        tx.store_facts(
                            &job.scope,
                            &job.session,
                            &accepted.validated.facts,
                            finished_ms,
                        )?;
                        tx.store_observations(
                            &job.scope,
                            &accepted.validated.observations,
                            finished_ms,
                        )?;
                        if let Some(project) = &job.project {
                            tx.promote_historian_facts(project, finished_ms)?;
                        }
                        Published::Compartments { count, covered_end }
                    }
                    (Destination::Staging, Some(covered_end)) => {
                        tx.stage_compartments(&job.session, &accepted.compartments, finished_ms)?;
                        Published::Staged { count, covered_end }
                    }
                }
            }
        };
        let compartments = match published {
            Published::Compartments { count, .. } | Published::Staged { count, .. } => count,
            Published::Held | Published::Stale | Published::Failed => 0,
        };
        tx.record_historian_run(
            &job.session,
            &HistorianRun {
                started_ms,
                finished_ms,
                chunk_start: job.chunk.start,
                chunk_end: job.chunk.end,
                outcome: published.as_str().to_owned(),
                model: report.model.clone(),
                calls: report.calls,
                input_tokens: report.input_tokens,
                output_tokens: report.output_tokens,
                compartments,
                detail: report.failure.clone(),
            },
        )?;
        Ok(published)
    })?)
}

/// Where the job's destination ends now: a run whose chunk no longer starts there was
/// overtaken by another.
fn published_until(tx: &WriteTx<'_>, job: &Job) -> mc_store::Result<u64> {
    match job.destination {
        Destination::History => tx.summarised_until(&job.session),
        Destination::Staging => tx.staged_until(&job.session),
    }
}
