//! Remembered requests of a wire whose follow-ups repeat the bytes outside their list
//! (Chat's messages, Responses' items): the part the proxy's Chat and
//! Responses decoders share.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use mc_core::{ContentHash, HashChain};

use crate::chunked_body::ChunkedBody;
use crate::list_split::Split;
use crate::recent_bodies::{KnownStart, remember_within, take_longest_prefix};

/// What a remembered request shows of itself: its body and where its list lies.
pub trait Listed {
    /// The body and its split.
    fn listed(&self) -> (&ChunkedBody, &Split);
}

/// Remembered requests, most recent last, within a byte budget.
#[derive(Debug)]
pub struct RecentLists<E> {
    recent: Mutex<VecDeque<(E, usize)>>,
    budget_bytes: usize,
}

impl<E: Listed> RecentLists<E> {
    /// Remembers requests holding at most `budget_bytes` in all.
    pub fn new(budget_bytes: usize) -> Self {
        Self {
            recent: Mutex::new(VecDeque::new()),
            budget_bytes,
        }
    }

    /// Remembers `entry`, which holds `held_bytes`; one larger than the budget is not kept.
    pub fn remember(&self, entry: E, held_bytes: usize) {
        if held_bytes > self.budget_bytes {
            return;
        }
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        remember_within(
            &mut recent,
            (entry, held_bytes),
            self.budget_bytes,
            |kept| kept.1,
        );
    }

    /// Takes out the remembered request `body` repeats through the most whole items, with
    /// `body`'s split and how many leading items the two share, when `body` has its bytes
    /// outside the list (anything else is decoded whole). `known` is what `body`'s maker
    /// vouches for of its first bytes.
    pub fn take_extended(
        &self,
        body: &ChunkedBody,
        known: Option<&KnownStart>,
    ) -> Option<(E, Split, usize)> {
        let ((entry, _), equal) = {
            let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
            take_longest_prefix(&mut recent, body, known, |(entry, _)| {
                let (body, split) = entry.listed();
                (body, &split.ranges)
            })?
        };
        let (remembered, was) = entry.listed();
        let (split, shared) = Split::extend(&was.ranges, was.open, body, equal)?;
        let same_outside = split.same_outside(body, was, remembered);
        same_outside.then_some((entry, split, shared))
    }
}

/// What a remembered request holds: its body, its decoded list (about what its neutral
/// forms hold), the neutral forms (`message_bytes`, what each holds, counted once when it
/// was decoded: summing a long session's values again on every request grew a call's cost
/// with the session) and their hashes.
pub fn held_bytes(body: &ChunkedBody, message_bytes: &[usize], chain: &HashChain) -> usize {
    body.len()
        + 2 * message_bytes.iter().sum::<usize>()
        + chain.len() * std::mem::size_of::<ContentHash>()
}
