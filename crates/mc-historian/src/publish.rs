//! Publishing a run in one transaction: its compartments, facts and observations, and the
//! run's record, together or not at all. Publishing never touches the prompt: the next pass
//! that may change bytes moves the boundary (DESIGN §5).
//!
//! A rebuild's run ([`Destination::Staging`]) stages its compartments and stores no facts or
//! observations: the history it reads was counted when it was first summarised, and
//! counting it again would inflate how often each was seen.

use mc_core::head::Compartment;
use mc_store::{HistorianRun, KnowledgeSource, Store, WriteTx};

use crate::accept::Accepted;
use crate::error::Result;
use crate::job::{Destination, Job};
use crate::run::RunReport;

/// The run record's outcome when the run's last compartment was published provisionally.
const PROVISIONAL_OUTCOME: &str = "provisional";

/// What publishing did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published {
    /// Compartments were appended; the history now ends after `covered_end`.
    Compartments {
        /// How many the history gained (a provisional compartment read again and replaced
        /// counts out).
        count: u32,
        /// The last ordinal they cover.
        covered_end: u64,
        /// The last of them is provisional: the next run reads its range again.
        provisional: bool,
    },
    /// Compartments were staged for a rebuild; the staged set now ends after
    /// `covered_end`.
    Staged {
        /// How many.
        count: u32,
        /// The last ordinal they cover.
        covered_end: u64,
    },
    /// The answer passed but its only compartment waits for more history (a rebuild's).
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
            Self::Compartments {
                provisional: true, ..
            } => PROVISIONAL_OUTCOME,
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
            Some(_) if published_until(tx, job)? != job.history_until => Published::Stale,
            Some(accepted) => match job.destination {
                Destination::History => {
                    let replaced = if job.rereads_provisional() {
                        if tx.provisional_start(&job.session)? != Some(job.chunk.start) {
                            return record(
                                tx,
                                job,
                                report,
                                Published::Stale,
                                started_ms,
                                finished_ms,
                            );
                        }
                        tx.reopen_provisional(&job.session)?;
                        1
                    } else {
                        // A job that reads on past a provisional compartment took it as
                        // final.
                        tx.settle_provisional(&job.session)?;
                        0
                    };
                    append_to_history(tx, job, accepted, finished_ms, replaced)?
                }
                Destination::Staging => match accepted.compartments.last() {
                    None => Published::Held,
                    Some(last) => {
                        tx.stage_compartments(&job.session, &accepted.compartments, finished_ms)?;
                        Published::Staged {
                            count: u32::try_from(accepted.compartments.len()).unwrap_or(u32::MAX),
                            covered_end: last.end_ordinal,
                        }
                    }
                },
            },
        };
        record(tx, job, report, published, started_ms, finished_ms)
    })?)
}

/// Appends the accepted compartments (the provisional one last, marked) with the run's facts
/// and observations; `replaced` compartments were removed for them.
fn append_to_history(
    tx: &WriteTx<'_>,
    job: &Job,
    accepted: &Accepted,
    finished_ms: i64,
    replaced: u32,
) -> mc_store::Result<Published> {
    let rows: Vec<Compartment> = accepted
        .compartments
        .iter()
        .chain(&accepted.provisional)
        .cloned()
        .collect();
    let Some(last) = rows.last() else {
        return Ok(Published::Held);
    };
    tx.append_compartments(&job.session, &rows, finished_ms)?;
    if let Some(provisional) = &accepted.provisional {
        tx.mark_provisional(&job.session, provisional.start_ordinal)?;
    }
    tx.store_facts(
        &job.scope,
        &job.session,
        &accepted.validated.facts,
        finished_ms,
    )?;
    tx.store_observations(&job.scope, &accepted.validated.observations, finished_ms)?;
    if let Some(project) = &job.project {
        match job.knowledge {
            KnowledgeSource::Local => tx.promote_historian_facts(project, finished_ms)?,
            // Queued with the compartments; the team store's sync sends them.
            KnowledgeSource::TeamCache => {
                tx.queue_historian_facts_for_team(project, finished_ms)?
            }
        };
    }
    Ok(Published::Compartments {
        count: u32::try_from(rows.len())
            .unwrap_or(u32::MAX)
            .saturating_sub(replaced),
        covered_end: last.end_ordinal,
        provisional: accepted.provisional.is_some(),
    })
}

/// Records the run and returns what it published.
fn record(
    tx: &WriteTx<'_>,
    job: &Job,
    report: &RunReport,
    published: Published,
    started_ms: i64,
    finished_ms: i64,
) -> mc_store::Result<Published> {
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
}

/// Where the job's destination ends now: a run that found it elsewhere than when it read
/// its chunk was overtaken by another.
fn published_until(tx: &WriteTx<'_>, job: &Job) -> mc_store::Result<u64> {
    match job.destination {
        Destination::History => tx.summarised_until(&job.session),
        Destination::Staging => tx.staged_until(&job.session),
    }
}
