//! Turning a model's answer into what the store holds: parsed, validated against the chunk,
//! and completed with what only the raw log knows (times, the user's own words).

use mc_core::Message;
use mc_core::head::Compartment;
use mc_core::historian::{
    CompartmentDraft, Validated, parse_answer, quotes_of, range_index, validate, validate_closed,
};
use serde_json::Value;

use crate::job::Job;

/// An answer that passed: the compartments as stored rows, with what else it found.
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    /// Rows to append as final.
    pub compartments: Vec<Compartment>,
    /// The last compartment, whose episode nothing yet shows ended: published to the history
    /// provisionally (read again and replaced by the next run), or held back from a
    /// rebuild's staging area.
    pub provisional: Option<Compartment>,
    /// What validation kept of the answer (facts, observations, whether one was held back).
    pub validated: Validated,
}

/// Parses and validates `input` (the forced tool call's input) for `job`. The error is in
/// words the model can act on: it is quoted back in the repair round.
///
/// A closed job ([`Job::closed`]) takes every compartment as final, whatever the lookahead;
/// so does a job cut short by its size ([`Job::cut_short`]) whose answer is one compartment
/// (holding that back would leave the boundary where it is, and the next run would read the
/// same chunk again). Otherwise a last compartment within the lookahead of the chunk end is
/// [`Accepted::provisional`], and the facts and observations of the whole answer are kept
/// (a fact seen again when its range is read again merges by its hash).
pub fn accept(job: &Job, input: &Value, lookahead: u32) -> Result<Accepted, String> {
    let output = parse_answer(input)?;
    let whole = validate_closed(&output, job.chunk).map_err(|error| error.to_string())?;
    let validated = if job.closed {
        whole
    } else {
        let held = validate(&output, job.chunk, lookahead).map_err(|error| error.to_string())?;
        if !held.held_back || (held.compartments.is_empty() && job.cut_short) {
            whole
        } else {
            Validated {
                compartments: held.compartments,
                held_back: true,
                ..whole
            }
        }
    };
    let provisional = validated
        .held_back
        .then(|| output.compartments.last())
        .flatten()
        .map(|draft| row_of(job, draft));
    let compartments = validated
        .compartments
        .iter()
        .map(|draft| row_of(job, draft))
        .collect();
    Ok(Accepted {
        compartments,
        provisional,
        validated,
    })
}

/// A validated draft as a stored row: times of its first and last message, and the user's
/// own messages of its range (the task is pinned elsewhere). The model writes two of the four
/// tiers (see `mc_core::historian::prompt`): the condensed text is stored as the full tier
/// too and the line as the paragraph, so `m[1]`, the decay, search and the dashboard read a
/// row of any age the same way.
fn row_of(job: &Job, draft: &CompartmentDraft) -> Compartment {
    let in_range: Vec<&(u64, Message, i64)> = job
        .messages
        .iter()
        .filter(|(ordinal, _, _)| (draft.start_ordinal..=draft.end_ordinal).contains(ordinal))
        .collect();
    let time = |row: Option<&&(u64, Message, i64)>| {
        row.map_or(0, |(_, _, at)| u64::try_from(*at).unwrap_or(0))
    };
    let indexed: Vec<(u64, &Message)> = in_range
        .iter()
        .map(|(ordinal, message, _)| (*ordinal, message))
        .collect();
    let condensed = draft.condensed.trim().to_owned();
    let line = draft.line.trim().to_owned();
    Compartment {
        start_ordinal: draft.start_ordinal,
        end_ordinal: draft.end_ordinal,
        start_ms: time(in_range.first()),
        end_ms: time(in_range.last()),
        title: draft.title.trim().to_owned(),
        importance: u8::try_from(draft.importance.clamp(1, 100)).unwrap_or(50),
        episode: draft.episode.trim().to_owned(),
        tiers: [condensed.clone(), condensed, line.clone(), line],
        quotes: quotes_of(&indexed, job.task_ordinal),
        index: range_index(&indexed),
    }
}
