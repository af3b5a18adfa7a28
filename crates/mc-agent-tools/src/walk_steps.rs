//! What the remembered walks of every wire ([`super::recent_walks`], [`crate::chat_walks`],
//! [`crate::responses_walks`])
//! keep alike: the queue of recent walks, the exchanges a walk put back and the anchors it
//! looked up in vain, and the prepared body assembled from encoded messages.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Mutex;
use std::sync::PoisonError;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::splice::{Used, stored};
use bytes::Bytes;
use mc_store::{ReadTx, StoreError};
use serde::Serialize;
use serde::de::DeserializeOwned;

use mc_wire::chunked_body::ChunkedBody;
use mc_wire::recent_bodies::{KnownStart, remember_within, take_longest_prefix};

/// A remembered walk, as its queue sees it.
pub trait Remembered {
    /// The client body it walked, and where each of its messages lies.
    fn body_and_ranges(&self) -> (&ChunkedBody, &[Range<usize>]);
    /// What it holds.
    fn held_bytes(&self) -> usize;
    /// Whether it looked `anchor` up where nothing was put back.
    fn looked_in_vain(&self, anchor: &str) -> bool;
}

/// Recent walks, most recent last, within a byte budget.
#[derive(Debug)]
pub struct WalkQueue<W> {
    recent: Mutex<VecDeque<(W, usize)>>,
    budget_bytes: usize,
    /// Bumped whenever an exchange is stored: a walk taken out before may have missed it.
    generation: AtomicU64,
}

impl<W: Remembered> WalkQueue<W> {
    /// Remembers walks holding at most `budget_bytes` in all.
    pub fn new(budget_bytes: usize) -> Self {
        Self {
            recent: Mutex::new(VecDeque::new()),
            budget_bytes,
            generation: AtomicU64::new(0),
        }
    }

    /// The generation now, for a walk about to be taken out.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Takes out the walk whose body `body` repeats through the most whole messages, with
    /// the bytes the two share ([`take_longest_prefix`]).
    pub fn take_longest_prefix(&self, body: &ChunkedBody) -> Option<(W, usize)> {
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        take_longest_prefix(&mut recent, body, None, |(walk, _)| walk.body_and_ranges())
            .map(|((walk, _), equal)| (walk, equal))
    }

    /// Forgets every walk that looked `anchor` up and put nothing back there: an exchange
    /// was just stored under it, and a fresh walk would now find it.
    pub fn forget_anchor(&self, anchor: &str) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        recent.retain(|(walk, _)| !walk.looked_in_vain(anchor));
    }

    /// Remembers `walk`, taken out at `generation`, unless an exchange was stored since (it
    /// may have missed it) or it alone is over the budget.
    pub fn remember(&self, walk: W, generation: u64) {
        if generation != self.generation() {
            return;
        }
        let held = walk.held_bytes();
        if held > self.budget_bytes {
            return;
        }
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        remember_within(&mut recent, (walk, held), self.budget_bytes, |(_, held)| {
            *held
        });
    }
}

/// The exchanges a walk put back, with their anchors, as read; and the anchors it looked up
/// where nothing was put back.
#[derive(Debug)]
pub struct FoundSplices<S> {
    found: Vec<(String, S)>,
    missed: Vec<String>,
}

impl<S> Default for FoundSplices<S> {
    fn default() -> Self {
        Self {
            found: Vec::new(),
            missed: Vec::new(),
        }
    }
}

impl<S: PartialEq + DeserializeOwned> FoundSplices<S> {
    /// An exchange put back at `anchor`.
    pub fn put_back(&mut self, anchor: String, splice: S) {
        self.found.push((anchor, splice));
    }

    /// An anchor looked up where nothing usable was stored.
    pub fn missed(&mut self, anchor: String) {
        self.missed.push(anchor);
    }

    /// Whether `anchor` was looked up in vain: an exchange stored there since would now be
    /// put back.
    pub fn looked_in_vain(&self, anchor: &str) -> bool {
        self.missed.iter().any(|missed| missed == anchor)
    }

    /// Whether the first `found_len` exchanges put back are still stored as read, noting
    /// their use as a fresh walk would.
    pub fn still_stored(
        &self,
        tx: &ReadTx<'_>,
        found_len: usize,
        used: &mut Used,
    ) -> Result<bool, StoreError> {
        for (anchor, splice) in self.found.get(..found_len).unwrap_or_default() {
            match stored::<S>(tx, anchor)? {
                Some(found) if &found.splice == splice => used.note(&found),
                Some(_) | None => return Ok(false),
            }
        }
        Ok(true)
    }

    /// What the missed anchors hold (the exchanges are small beside a body).
    pub fn held_bytes(&self) -> usize {
        self.missed.iter().map(|anchor| anchor.len() + 24).sum()
    }
}

/// How far a walk had got after one client message: the spliced messages it had produced,
/// the exchanges it had put back and the anchors it had looked up in vain.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    out_len: usize,
    found_len: usize,
    missed_len: usize,
}

impl Progress {
    /// Where a walk with `out` spliced messages and `found` exchanges stands now.
    pub fn of<S>(out: &[Bytes], found: &FoundSplices<S>) -> Self {
        Self {
            out_len: out.len(),
            found_len: found.found.len(),
            missed_len: found.missed.len(),
        }
    }
}

/// A walk's state after one client message, as [`resume`] reads it.
pub trait StepMark {
    /// Where the walk stood when the step was pushed.
    fn progress(&self) -> Progress;
}

/// Cuts a walk (its `steps`, one per client message walked, the spliced messages `out` and
/// the exchanges `found`) back to its state after its first `shared` messages, after
/// checking the exchanges it put back there are still stored as read (noting their use, as
/// a fresh walk would); `false` when one is not, or nothing is shared, and the walk must
/// start afresh.
pub fn resume<S: PartialEq + DeserializeOwned, T: StepMark>(
    tx: &ReadTx<'_>,
    shared: usize,
    steps: &mut Vec<T>,
    out: &mut Vec<Bytes>,
    found: &mut FoundSplices<S>,
    used: &mut Used,
) -> Result<bool, StoreError> {
    let Some(step) = shared.checked_sub(1).and_then(|at| steps.get(at)) else {
        return Ok(false);
    };
    let Progress {
        out_len,
        found_len,
        missed_len,
    } = step.progress();
    if !found.still_stored(tx, found_len, used)? {
        return Ok(false);
    }
    steps.truncate(shared);
    out.truncate(out_len);
    found.found.truncate(found_len);
    found.missed.truncate(missed_len);
    Ok(true)
}

/// A prepared body: `before`, the list of `messages` (each encoded), `after`; and where the
/// list (`[` … `]`) lies in it.
///
/// `known` is what [`kept_start`] said of the first `kept` encodings: the body assembled
/// last from the same `before` began with them. That start is shared as a slice of that
/// body and only the encodings after it are written, so a call costs what its new messages
/// cost, not what the conversation does (the copy of the whole body was the largest
/// per-byte cost left on the request path). A `known` whose length disagrees with the
/// encodings is not used.
pub fn assemble<'a>(
    before: &[u8],
    messages: impl Iterator<Item = &'a Bytes> + Clone,
    after: &[u8],
    known: Option<(&KnownStart, usize)>,
) -> (ChunkedBody, Range<usize>) {
    let list_start = before.len();
    let mut body = ChunkedBody::new();
    let mut written = 0;
    if let Some((known, kept)) = known
        && known.shared() == start_len(before, messages.clone().take(kept))
        && let Some(shared) = known.of().slice(0..known.shared())
    {
        body.append(shared);
        written = kept;
    }
    let new_bytes: usize = messages
        .clone()
        .skip(written)
        .map(|json| json.len() + 1)
        .sum();
    let start = if body.is_empty() { before.len() + 1 } else { 0 };
    let mut fresh = Vec::with_capacity(start + new_bytes + 1 + after.len());
    if body.is_empty() {
        fresh.extend_from_slice(before);
        fresh.push(b'[');
    }
    for (index, json) in messages.enumerate().skip(written) {
        if index > 0 {
            fresh.push(b',');
        }
        fresh.extend_from_slice(json);
    }
    fresh.push(b']');
    let list_end = body.len() + fresh.len();
    fresh.extend_from_slice(after);
    body.push(Bytes::from(fresh));
    (body.bounded(), list_start..list_end)
}

/// The length of a body's start assembled from `before` and `kept` encodings: `before`, the
/// `[` and the encodings, up to the separator after the last.
fn start_len<'a>(before: &[u8], kept: impl Iterator<Item = &'a Bytes>) -> usize {
    let (count, encodings) = kept.fold((0, 0), |(count, bytes), json| {
        (count + 1, bytes + json.len())
    });
    before.len() + 1 + encodings + usize::saturating_sub(count, 1)
}

/// What a body [`assemble`]d from `before` and `kept` (then more) shares with `last`, the
/// body assembled before from the same `before` and encodings `kept` began: `before`, the
/// `[` and every kept encoding, up to the separator after the last. `None` when nothing was
/// assembled before (`last` empty).
pub fn kept_start<'a>(
    last: &ChunkedBody,
    before: &[u8],
    kept: impl Iterator<Item = &'a Bytes>,
) -> Option<KnownStart> {
    if last.is_empty() {
        return None;
    }
    Some(KnownStart::new(last.clone(), start_len(before, kept)))
}

/// The message list `prepared` (`[` … `]`, as encoded) with the messages of `appended`
/// after its own: `appended` is a request encoded with just those messages as its list, and
/// `around` the lengths of its bytes before and after that list.
pub fn list_with(prepared: &[u8], appended: &[u8], around: (usize, usize)) -> Vec<u8> {
    let (before, after) = around;
    let appended = appended
        .get(before..appended.len().saturating_sub(after))
        .unwrap_or(b"[]");
    let mut list = Vec::with_capacity(prepared.len() + appended.len());
    list.extend_from_slice(prepared.strip_suffix(b"]").unwrap_or(prepared));
    let appended = appended.strip_prefix(b"[").unwrap_or(appended);
    if prepared.len() > 2 && appended.len() > 1 {
        list.push(b',');
    }
    list.extend_from_slice(appended);
    list
}

/// A message as the request's encoding writes it.
pub fn encode<T: Serialize>(message: &T) -> Option<Bytes> {
    serde_json::to_vec(message).ok().map(Bytes::from)
}
