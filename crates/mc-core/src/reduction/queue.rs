//! Queueing drops and deciding which of them land.
//!
//! A drop is queued, not applied: changing bytes the provider has cached costs a cache write,
//! so queued drops wait for a pass that busts anyway (DESIGN §5). Landed drops are replayed on
//! every later render from pristine content, so a drop is a fact about the session, not an edit.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use super::spec::DropSpec;
use crate::tags::{TagIndex, TagNo};

/// Why a requested drop was not (or not yet) applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropRejection {
    /// No unit has this tag.
    UnknownTag,
    /// The drop already landed.
    AlreadyDropped,
    /// The drop is already waiting in the queue.
    AlreadyQueued,
    /// The unit lies before the history boundary: it is summarised in m[0]/m[1] and no longer
    /// rendered raw, so there is nothing to drop.
    CoveredByHistory,
    /// The tag is among the newest protected ones. Not a refusal: the drop is queued anyway
    /// and lands once the tag ages out.
    Protected,
}

impl DropRejection {
    /// Whether the drop sits in the queue despite this note (only [`Self::Protected`]).
    pub fn is_queued(self) -> bool {
        match self {
            Self::Protected => true,
            Self::UnknownTag
            | Self::AlreadyDropped
            | Self::AlreadyQueued
            | Self::CoveredByHistory => false,
        }
    }
}

impl fmt::Display for DropRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::UnknownTag => "no such tag",
            Self::AlreadyDropped => "already dropped",
            Self::AlreadyQueued => "already queued",
            Self::CoveredByHistory => "already summarised into history",
            Self::Protected => {
                "queued; recent, so it waits until it is no longer among the newest tags"
            }
        })
    }
}

/// The drops of a session: waiting in the queue, or landed (replayed on every render).
///
/// A tag is never in both sets: landing moves it from `queued` to `landed`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DropState {
    /// Accepted, waiting for a busting pass (or for the tag to leave the protected window).
    pub queued: BTreeSet<TagNo>,
    /// Applied; rendered as `[dropped §N§]` from now on.
    pub landed: BTreeSet<TagNo>,
}

impl DropState {
    /// The state after `tags` land: moved from the queue to the landed set.
    pub fn with_landed(&self, tags: &BTreeSet<TagNo>) -> Self {
        Self {
            queued: self.queued.difference(tags).copied().collect(),
            landed: self.landed.union(tags).copied().collect(),
        }
    }
}

/// What [`queue_drops`] made of a request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueOutcome {
    /// Tags newly put in the queue, including protected ones that will wait.
    pub accepted: BTreeSet<TagNo>,
    /// One note per tag that was refused, or accepted but waiting ([`DropRejection::Protected`]).
    pub notes: BTreeMap<TagNo, DropRejection>,
    /// The drop state with `accepted` added to the queue; the caller persists it.
    pub state: DropState,
}

impl QueueOutcome {
    /// Accepted tags that wait because they are protected.
    pub fn waiting(&self) -> impl Iterator<Item = TagNo> + '_ {
        self.notes
            .iter()
            .filter(|(_, reason)| reason.is_queued())
            .map(|(tag, _)| *tag)
    }

    /// Refused tags and why.
    pub fn rejected(&self) -> impl Iterator<Item = (TagNo, DropRejection)> + '_ {
        self.notes
            .iter()
            .filter(|(_, reason)| !reason.is_queued())
            .map(|(tag, reason)| (*tag, *reason))
    }
}

/// Validates each tag of `spec` and queues the acceptable ones.
///
/// Checked in this order, first match wins: unknown tag, already landed, already queued,
/// unit ordinal below `boundary_ordinal` (covered by history), then protected (within the
/// newest `protected_count` tags: queued and noted as waiting).
///
/// Takes `protected_count` (one argument more than the first contract sketch) because
/// "waiting" cannot be reported without knowing the protected window.
pub fn queue_drops(
    state: &DropState,
    spec: &DropSpec,
    tags: &TagIndex,
    boundary_ordinal: u64,
    protected_count: u32,
) -> QueueOutcome {
    let mut outcome = QueueOutcome {
        state: state.clone(),
        ..QueueOutcome::default()
    };
    for &tag in spec.tags() {
        let note = match tags.unit_of(tag) {
            None => Some(DropRejection::UnknownTag),
            Some(_) if state.landed.contains(&tag) => Some(DropRejection::AlreadyDropped),
            Some(_) if state.queued.contains(&tag) => Some(DropRejection::AlreadyQueued),
            Some(unit) if unit.ordinal < boundary_ordinal => Some(DropRejection::CoveredByHistory),
            Some(_) if tags.is_protected(tag, protected_count) => Some(DropRejection::Protected),
            Some(_) => None,
        };
        if note.is_none_or(DropRejection::is_queued) {
            outcome.accepted.insert(tag);
            outcome.state.queued.insert(tag);
        }
        if let Some(note) = note {
            outcome.notes.insert(tag, note);
        }
    }
    outcome
}

/// The queued drops that may land now: known tags outside the protected window.
///
/// Callers land them only on a pass the bust permission allows, then persist
/// [`DropState::with_landed`].
pub fn land_drops(state: &DropState, tags: &TagIndex, protected_count: u32) -> BTreeSet<TagNo> {
    state
        .queued
        .iter()
        .copied()
        .filter(|tag| !state.landed.contains(tag))
        .filter(|&tag| tags.unit_of(tag).is_some() && !tags.is_protected(tag, protected_count))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tags::{TagAssignment, UnitRef};

    /// Tags 1..=30, tag n on message n.
    fn index() -> TagIndex {
        TagIndex::new((1..=30).map(|n| TagAssignment {
            tag: TagNo(n),
            unit: UnitRef {
                ordinal: u64::from(n),
                part: 0,
            },
        }))
    }

    fn spec(tags: &[u32]) -> DropSpec {
        tags.iter().copied().map(TagNo).collect()
    }

    fn state(queued: &[u32], landed: &[u32]) -> DropState {
        DropState {
            queued: queued.iter().copied().map(TagNo).collect(),
            landed: landed.iter().copied().map(TagNo).collect(),
        }
    }

    fn single(state: &DropState, tag: u32, boundary: u64) -> QueueOutcome {
        queue_drops(state, &spec(&[tag]), &index(), boundary, 20)
    }

    #[test]
    fn accepts_an_old_known_tag() {
        let outcome = single(&DropState::default(), 3, 0);
        assert_eq!(outcome.accepted, [TagNo(3)].into());
        assert!(outcome.notes.is_empty());
        assert_eq!(outcome.state, state(&[3], &[]));
    }

    #[test]
    fn rejects_unknown_tag() {
        let outcome = single(&DropState::default(), 31, 0);
        assert!(outcome.accepted.is_empty());
        assert_eq!(
            outcome.notes,
            [(TagNo(31), DropRejection::UnknownTag)].into()
        );
        assert_eq!(outcome.state, DropState::default());
    }

    #[test]
    fn rejects_already_dropped() {
        let before = state(&[], &[3]);
        let outcome = single(&before, 3, 0);
        assert_eq!(
            outcome.rejected().collect::<Vec<_>>(),
            [(TagNo(3), DropRejection::AlreadyDropped)]
        );
        assert_eq!(outcome.state, before);
    }

    #[test]
    fn rejects_already_queued() {
        let before = state(&[3], &[]);
        let outcome = single(&before, 3, 0);
        assert_eq!(
            outcome.rejected().collect::<Vec<_>>(),
            [(TagNo(3), DropRejection::AlreadyQueued)]
        );
        assert!(outcome.accepted.is_empty());
        assert_eq!(outcome.state, before);
    }

    #[test]
    fn rejects_covered_by_history() {
        let outcome = single(&DropState::default(), 3, 4);
        assert_eq!(
            outcome.rejected().collect::<Vec<_>>(),
            [(TagNo(3), DropRejection::CoveredByHistory)]
        );
        // The boundary ordinal itself is still raw.
        assert!(single(&DropState::default(), 4, 4).notes.is_empty());
    }

    #[test]
    fn protected_tag_is_queued_and_waits() {
        // Tags 11..=30 are the newest 20.
        let outcome = single(&DropState::default(), 11, 0);
        assert_eq!(outcome.accepted, [TagNo(11)].into());
        assert_eq!(outcome.waiting().collect::<Vec<_>>(), [TagNo(11)]);
        assert_eq!(outcome.rejected().count(), 0);
        assert_eq!(outcome.state, state(&[11], &[]));
        assert!(single(&DropState::default(), 10, 0).notes.is_empty());
    }

    #[test]
    fn mixed_request_reports_each_tag() {
        let outcome = queue_drops(
            &state(&[2], &[1]),
            &spec(&[1, 2, 5, 25, 99]),
            &index(),
            0,
            20,
        );
        assert_eq!(outcome.accepted, [TagNo(5), TagNo(25)].into());
        assert_eq!(
            outcome.notes,
            [
                (TagNo(1), DropRejection::AlreadyDropped),
                (TagNo(2), DropRejection::AlreadyQueued),
                (TagNo(25), DropRejection::Protected),
                (TagNo(99), DropRejection::UnknownTag),
            ]
            .into()
        );
    }

    #[test]
    fn a_waiting_drop_lands_once_its_tag_ages_out() {
        let queued = single(&DropState::default(), 15, 0).state;
        assert!(land_drops(&queued, &index(), 20).is_empty());
        let grown = TagIndex::new(index().iter().chain((31..=35).map(|n| TagAssignment {
            tag: TagNo(n),
            unit: UnitRef {
                ordinal: u64::from(n),
                part: 0,
            },
        })));
        assert_eq!(land_drops(&queued, &grown, 20), [TagNo(15)].into());
    }

    #[test]
    fn only_unprotected_drops_land() {
        let queued = state(&[3, 10, 11, 29], &[1]);
        assert_eq!(
            land_drops(&queued, &index(), 20),
            [TagNo(3), TagNo(10)].into()
        );
        assert_eq!(land_drops(&queued, &index(), 0).len(), 4);
        let landed = queued.with_landed(&land_drops(&queued, &index(), 20));
        assert_eq!(landed, state(&[11, 29], &[1, 3, 10]));
    }
}
