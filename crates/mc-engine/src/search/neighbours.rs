//! Neighbouring messages lend each other relevance.
//!
//! A question and its answer, a tool call and its result, sit next to each other in the log,
//! and a query often matches one of them better than the other. So within one signal's list,
//! a message found next to another found message takes a share of that neighbour's score:
//! the turn that answers is lifted by the turn that asked, and the reverse.

use std::collections::HashMap;

use mc_core::SessionId;
use mc_core::search::{Signal, Source};

use super::{Found, ItemKey};

/// Adds to every message candidate of `signal` in `found` `share` times the best score among
/// the candidates of the same signal at the ordinals just before and after it in its session.
pub(crate) fn lend_to_neighbours(found: &mut Found, signal: Signal, share: f64) {
    if share <= 0.0 {
        return;
    }
    let mut by_place: HashMap<(&SessionId, u64), f64> = HashMap::new();
    for candidate in &found.candidates {
        if candidate.signal != signal || candidate.source != Source::Message {
            continue;
        }
        let ItemKey::Message(hash) = &candidate.key else {
            continue;
        };
        if let Some(place) = found.places.get(hash) {
            let best = by_place
                .entry((&place.session, place.ordinal))
                .or_insert(f64::MIN);
            *best = best.max(candidate.score);
        }
    }
    let lent: Vec<f64> = found
        .candidates
        .iter()
        .map(|candidate| {
            let ItemKey::Message(hash) = &candidate.key else {
                return 0.0;
            };
            if candidate.signal != signal || candidate.source != Source::Message {
                return 0.0;
            }
            let Some(place) = found.places.get(hash) else {
                return 0.0;
            };
            let before = place
                .ordinal
                .checked_sub(1)
                .and_then(|ordinal| by_place.get(&(&place.session, ordinal)));
            let after = by_place.get(&(&place.session, place.ordinal + 1));
            before
                .into_iter()
                .chain(after)
                .copied()
                .fold(0.0_f64, f64::max)
                * share
        })
        .collect();
    for (candidate, lent) in found.candidates.iter_mut().zip(lent) {
        candidate.score += lent;
    }
}

#[cfg(test)]
mod tests {
    use mc_core::ContentHash;
    use mc_core::search::Candidate;

    use super::super::MessagePlace;
    use super::*;

    fn session(name: &str) -> SessionId {
        SessionId::new(name.to_owned()).unwrap()
    }

    /// A found set of message candidates of `signal`: (session, ordinal, score) each.
    fn found(signal: Signal, hits: &[(&str, u64, f64)]) -> Found {
        let mut found = Found::default();
        for (index, &(name, ordinal, score)) in hits.iter().enumerate() {
            let hash = ContentHash::from_bytes([index as u8 + 1; 32]);
            found.places.insert(
                hash,
                MessagePlace {
                    session: session(name),
                    ordinal,
                    created_ms: 0,
                },
            );
            found.candidates.push(Candidate {
                key: ItemKey::Message(hash),
                source: Source::Message,
                signal,
                score,
            });
        }
        found
    }

    fn scores(found: &Found) -> Vec<f64> {
        found.candidates.iter().map(|c| c.score).collect()
    }

    #[test]
    fn adjacent_messages_take_a_share_of_their_best_neighbour() {
        let mut hits = found(
            Signal::FullText,
            &[("s", 4, 10.0), ("s", 5, 2.0), ("s", 6, 4.0), ("s", 9, 3.0)],
        );
        lend_to_neighbours(&mut hits, Signal::FullText, 0.5);
        assert_eq!(scores(&hits), [11.0, 7.0, 5.0, 3.0]);
    }

    #[test]
    fn other_sessions_and_other_signals_lend_nothing() {
        let mut hits = found(Signal::Semantic, &[("a", 1, 0.8), ("b", 2, 0.6)]);
        hits.candidates.push(Candidate {
            key: ItemKey::Memory(7),
            source: Source::Memory,
            signal: Signal::Semantic,
            score: 0.9,
        });
        lend_to_neighbours(&mut hits, Signal::Semantic, 0.5);
        assert_eq!(scores(&hits), [0.8, 0.6, 0.9]);
        let mut hits = found(Signal::Semantic, &[("a", 1, 0.8), ("a", 2, 0.6)]);
        lend_to_neighbours(&mut hits, Signal::FullText, 0.5);
        assert_eq!(scores(&hits), [0.8, 0.6]);
    }

    #[test]
    fn no_share_changes_nothing() {
        let mut hits = found(Signal::FullText, &[("s", 0, 1.0), ("s", 1, 2.0)]);
        lend_to_neighbours(&mut hits, Signal::FullText, 0.0);
        assert_eq!(scores(&hits), [1.0, 2.0]);
    }
}
