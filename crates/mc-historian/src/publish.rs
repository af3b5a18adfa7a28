//! Publishing a run in one transaction: its compartments, facts and observations, and the
//! run's record, together or not at all. Publishing never touches the prompt: the next pass
//! that may change bytes moves the boundary (DESIGN §5).

use mc_store::{HistorianRun, Store};

use crate::error::Result;
use crate::job::Job;
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
            Some(_) if tx.summarised_until(&job.session)? != job.chunk.start => Published::Stale,
            Some(accepted) => {
                tx.append_compartments(&job.session, &accepted.compartments, finished_ms)?;
                tx.store_facts(
                    &job.scope,
                    &job.session,
                    &accepted.validated.facts,
                    finished_ms,
                )?;
                tx.store_observations(&job.scope, &accepted.validated.observations, finished_ms)?;
                match accepted.compartments.last() {
                    Some(last) => Published::Compartments {
                        count: u32::try_from(accepted.compartments.len()).unwrap_or(u32::MAX),
                        covered_end: last.end_ordinal,
                    },
                    None => Published::Held,
                }
            }
        };
        let compartments = match published {
            Published::Compartments { count, .. } => count,
            _ => 0,
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
