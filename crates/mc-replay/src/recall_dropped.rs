//! What `ctx_search` finds of what a request no longer held (`bench recall-dropped`).
//!
//! Replayed with `magic`, a step whose recorded answer used an identifier the request did
//! not hold ([`crate::StepReferences::missed_in`]) is a place where the agent, to go on, would
//! have had to search for it. The probe asks the session's store as it stood at that step,
//! as `ctx_search` does, twice: with the identifier alone, and with the answer's sentence
//! around it. A hit finds it when its message range covers a message of the history that
//! showed the identifier (any of them: each gives it back); the figures are recall@1,
//! recall@5 and the mean reciprocal rank within the first [`LIMIT`], with the query time's
//! 95th percentile. With a [`SemanticProbe`] every query is asked a second time with the
//! semantic signal added (hybrid), over the same store at the same step.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use mc_core::identifiers::message_identifiers;
use mc_core::{Message, Part};
use mc_engine::search::SemanticSearch;
use serde::Serialize;

use crate::magic::Magic;

/// Results asked for per query.
pub const LIMIT: usize = 10;

/// The sentence of an answer around an identifier is cut to this many characters.
const SENTENCE_CHARS: usize = 200;

/// Figures of one kind of query.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct QueryFigures {
    /// Queries asked.
    pub asked: usize,
    /// Share whose first hit holds the message.
    pub recall_at_1: f64,
    /// Share with the message among the first five hits.
    pub recall_at_5: f64,
    /// Mean reciprocal rank of the first hit holding it (0 when none of the first [`LIMIT`]).
    pub mrr: f64,
    /// 95th percentile of the query time, milliseconds.
    pub p95_ms: f64,
}

/// The probe's figures for one recording.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordingRecall {
    /// The recording.
    pub name: String,
    /// Searching for the identifier alone.
    pub by_identifier: QueryFigures,
    /// Searching for the answer's sentence around it.
    pub by_sentence: QueryFigures,
    /// The same queries with the semantic signal added, when the probe had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hybrid: Option<HybridFigures>,
}

/// The figures of the queries asked with the semantic signal added.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HybridFigures {
    /// Searching for the identifier alone.
    pub by_identifier: QueryFigures,
    /// Searching for the answer's sentence around it.
    pub by_sentence: QueryFigures,
}

/// The semantic signal over the store a replay's `magic` writes: what makes the probe's
/// second, hybrid, figures. Implemented where an embedding model is at hand (the binary).
pub trait SemanticProbe: Send {
    /// The signal over the store at `path` with every stored item embedded first; `None`
    /// when the model failed (the hybrid query then finds nothing).
    fn signal(&mut self, path: &Path) -> Option<&dyn SemanticSearch>;
}

/// A [`SemanticProbe`] carried by the replay's options; two are equal when they are the same.
#[derive(Clone)]
pub struct SharedSemanticProbe(pub Arc<Mutex<dyn SemanticProbe>>);

impl PartialEq for SharedSemanticProbe {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SharedSemanticProbe {}

impl std::fmt::Debug for SharedSemanticProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedSemanticProbe")
    }
}

/// The probe's figures over every recording.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RecallDropped {
    /// Searching for the identifier alone.
    pub by_identifier: QueryFigures,
    /// Searching for the answer's sentence around it.
    pub by_sentence: QueryFigures,
    /// The same queries with the semantic signal added, when the probe had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hybrid: Option<HybridFigures>,
    /// Per recording, in the order replayed (those with nothing missed left out).
    pub per_recording: Vec<RecordingRecall>,
}

/// The rank (from 1) of each query's first hit holding its message, and its time.
#[derive(Debug, Default)]
struct Asked {
    ranks: Vec<Option<usize>>,
    millis: Vec<f64>,
}

impl Asked {
    fn figures(&self) -> QueryFigures {
        let asked = self.ranks.len();
        let share = |hit: &dyn Fn(usize) -> f64| {
            if asked == 0 {
                0.0
            } else {
                self.ranks
                    .iter()
                    .flatten()
                    .map(|&rank| hit(rank))
                    .sum::<f64>()
                    / asked as f64
            }
        };
        let mut millis = self.millis.clone();
        millis.sort_by(f64::total_cmp);
        let p95 = millis
            .get((millis.len() * 95).div_ceil(100).saturating_sub(1))
            .copied()
            .unwrap_or(0.0);
        QueryFigures {
            asked,
            recall_at_1: share(&|rank| f64::from(u8::from(rank == 1))),
            recall_at_5: share(&|rank| f64::from(u8::from(rank <= 5))),
            mrr: share(&|rank| 1.0 / rank as f64),
            p95_ms: p95,
        }
    }

    fn extend(&mut self, other: &Self) {
        self.ranks.extend(&other.ranks);
        self.millis.extend(&other.millis);
    }
}

/// The queries of one recording, by kind: full text by identifier and by sentence, then
/// hybrid by identifier and by sentence.
#[derive(Debug, Default)]
struct RecordingAsked {
    name: String,
    kinds: [Asked; 4],
}

/// Collects the probe's answers over a replay.
#[derive(Debug, Default)]
pub struct RecallProbe {
    recordings: Vec<RecordingAsked>,
    semantic: Option<SharedSemanticProbe>,
}

impl RecallProbe {
    /// A probe asking with full text alone, and with `semantic` added when given.
    pub fn new(semantic: Option<SharedSemanticProbe>) -> Self {
        Self {
            recordings: Vec::new(),
            semantic,
        }
    }

    /// Asks `magic`'s store, as it stands, for each of `missed` (an identifier and the
    /// index of the message that first showed it) of a step of recording `name` whose
    /// history was `history` and whose recorded answer was `answer`.
    pub fn ask(
        &mut self,
        magic: &Magic,
        name: &str,
        missed: &[(&str, usize)],
        history: &[Message],
        answer: &Message,
    ) {
        if missed.is_empty() {
            return;
        }
        if self.recordings.last().is_none_or(|last| last.name != name) {
            self.recordings.push(RecordingAsked {
                name: name.to_owned(),
                ..RecordingAsked::default()
            });
        }
        let Some(recording) = self.recordings.last_mut() else {
            return;
        };
        let mut semantic = self
            .semantic
            .as_ref()
            .map(|probe| probe.0.lock().unwrap_or_else(PoisonError::into_inner));
        let signal = match (semantic.as_deref_mut(), magic.store_path()) {
            (Some(probe), Some(path)) => Some(probe.signal(&path)),
            _ => None,
        };
        let text = answer_text(answer);
        for &(identifier, first) in missed {
            let shown = shown_in(history, identifier, first);
            let sentence = sentence_around(&text, identifier);
            let [
                by_identifier,
                by_sentence,
                hybrid_identifier,
                hybrid_sentence,
            ] = &mut recording.kinds;
            let mut asks = vec![
                (identifier, None, by_identifier),
                (sentence, None, by_sentence),
            ];
            if let Some(signal) = signal {
                asks.push((identifier, Some(signal), hybrid_identifier));
                asks.push((sentence, Some(signal), hybrid_sentence));
            }
            for (query, with, asked) in asks {
                let started = Instant::now();
                let hits = match with {
                    Some(None) => None,
                    Some(Some(signal)) => magic.search_session(query, LIMIT, Some(signal)),
                    None => magic.search_session(query, LIMIT, None),
                };
                asked.millis.push(started.elapsed().as_secs_f64() * 1000.0);
                asked
                    .ranks
                    .push(rank_holding(&hits.unwrap_or_default(), &shown));
            }
        }
    }

    /// The figures, overall and per recording.
    pub fn figures(&self) -> RecallDropped {
        let mut all: [Asked; 4] = Default::default();
        let hybrid = |kinds: &[Asked; 4]| {
            self.semantic.is_some().then(|| HybridFigures {
                by_identifier: kinds[2].figures(),
                by_sentence: kinds[3].figures(),
            })
        };
        let per_recording = self
            .recordings
            .iter()
            .map(|recording| {
                for (total, kind) in all.iter_mut().zip(&recording.kinds) {
                    total.extend(kind);
                }
                RecordingRecall {
                    name: recording.name.clone(),
                    by_identifier: recording.kinds[0].figures(),
                    by_sentence: recording.kinds[1].figures(),
                    hybrid: hybrid(&recording.kinds),
                }
            })
            .collect();
        RecallDropped {
            by_identifier: all[0].figures(),
            by_sentence: all[1].figures(),
            hybrid: hybrid(&all),
            per_recording,
        }
    }
}

/// The indexes of the messages of `history` that show `identifier`: name it on its own or
/// inside a longer name (`old_field` in `old_field.model`, a file in its path), as a reader
/// of that message would see it. Any of them gives it back, also one before `first` (the
/// first to show it as a whole identifier, which a name inside a longer one is not);
/// `first` alone when none does.
fn shown_in(history: &[Message], identifier: &str, first: usize) -> Vec<u64> {
    let mut shown = Vec::new();
    for (index, message) in history.iter().enumerate() {
        let mut holds = false;
        message_identifiers(message, &mut |run| holds |= names(run, identifier));
        if holds {
            shown.push(index as u64);
        }
    }
    if shown.is_empty() {
        shown.push(first as u64);
    }
    shown
}

/// Whether identifier run `run` names `identifier`: holds it with no letter, digit or `_`
/// right before or after it (`self.old_field.model` names `old_field`; `old_fields` does
/// not).
fn names(run: &str, identifier: &str) -> bool {
    let is_name_byte = |byte: u8| byte.is_ascii_alphanumeric() || byte == b'_';
    run.match_indices(identifier).any(|(at, _)| {
        let before = run.as_bytes()[..at].last().copied();
        let after = run.as_bytes().get(at + identifier.len()).copied();
        !before.is_some_and(is_name_byte) && !after.is_some_and(is_name_byte)
    })
}

/// The rank (from 1) of the first of `hits` whose message range holds one of `ordinals`.
fn rank_holding(hits: &[Option<(u64, u64)>], ordinals: &[u64]) -> Option<usize> {
    hits.iter()
        .position(|hit| {
            hit.is_some_and(|(start, end)| ordinals.iter().any(|o| (start..=end).contains(o)))
        })
        .map(|at| at + 1)
}

/// An answer's words: its text and its tool calls' inputs.
fn answer_text(answer: &Message) -> String {
    let mut text = String::new();
    for part in &answer.parts {
        match part {
            Part::Text { text: said, .. } => text.push_str(said),
            Part::ToolCall { input, .. } => text.push_str(&input.to_string()),
            _ => continue,
        }
        text.push('\n');
    }
    text
}

/// The sentence (or line) of `text` that holds `identifier`, cut to [`SENTENCE_CHARS`]
/// around it; the identifier alone when the text does not hold it.
fn sentence_around<'t>(text: &'t str, identifier: &'t str) -> &'t str {
    let Some(at) = text.find(identifier) else {
        return identifier;
    };
    let after = at + identifier.len();
    let start = sentence_ends(text)
        .take_while(|&end| end < at)
        .last()
        .map_or(0, |end| end + 1);
    let stop = sentence_ends(text)
        .find(|&end| end >= after)
        .unwrap_or(text.len());
    let sentence = text[start..stop].trim();
    if sentence.chars().count() <= SENTENCE_CHARS {
        return sentence;
    }
    let from = at.saturating_sub(SENTENCE_CHARS / 2);
    let from = (0..=from)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let to = (at + SENTENCE_CHARS / 2).min(text.len());
    let to = (to..=text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    text[from.max(start)..to.min(stop)].trim()
}

/// Where sentences of `text` end: a newline, or `.`, `!` or `?` before white space or the
/// text's end (the dots inside `self.do_query` or `v2.1` end nothing).
fn sentence_ends(text: &str) -> impl Iterator<Item = usize> + '_ {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().filter_map(move |(at, &byte)| {
        let ends = byte == b'\n'
            || (matches!(byte, b'.' | b'!' | b'?')
                && bytes.get(at + 1).is_none_or(u8::is_ascii_whitespace));
        ends.then_some(at)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hit_finds_the_message_when_its_range_holds_it() {
        let hits = [Some((0, 0)), None, Some((4, 7)), Some((5, 5))];
        assert_eq!(rank_holding(&hits, &[5]), Some(3));
        assert_eq!(rank_holding(&hits, &[0]), Some(1));
        assert_eq!(rank_holding(&hits, &[9]), None);
        assert_eq!(rank_holding(&hits, &[9, 5]), Some(3));
    }

    #[test]
    fn every_message_that_showed_an_identifier_counts() {
        let history = [
            Message::new(
                mc_core::Role::User,
                vec![Part::text("fix src/card_parser.py")],
            ),
            Message::new(mc_core::Role::Assistant, vec![Part::text("reading it")]),
            Message::new(
                mc_core::Role::User,
                vec![Part::text("src/card_parser.py again")],
            ),
        ];
        assert_eq!(shown_in(&history, "card_parser.py", 0), [0, 2]);
        assert_eq!(shown_in(&history, "elsewhere.rs", 1), [1]);
        assert_eq!(shown_in(&history, "card_parser", 0), [0, 2]);
        assert_eq!(shown_in(&history, "card_parse", 0), [0]);
        // Inside a longer name before the first showing as a whole identifier.
        assert_eq!(shown_in(&history, "card_parser", 2), [0, 2]);
    }

    #[test]
    fn the_sentence_around_an_identifier_is_its_own() {
        let text = "Reading the file. Now parse_card fails on tabs! Next step.";
        assert_eq!(
            sentence_around(text, "parse_card"),
            "Now parse_card fails on tabs"
        );
        assert_eq!(sentence_around(text, "absent"), "absent");
        let dotted = "It fails. Then self.do_query(v2.1) returns None.\nNext.";
        assert_eq!(
            sentence_around(dotted, "do_query"),
            "Then self.do_query(v2.1) returns None"
        );
        let long = format!("{} parse_card {}", "a ".repeat(300), "b ".repeat(300));
        let cut = sentence_around(&long, "parse_card");
        assert!(cut.contains("parse_card") && cut.chars().count() <= SENTENCE_CHARS + 1);
    }

    #[test]
    fn figures_count_every_query_asked() {
        let asked = Asked {
            ranks: vec![Some(1), Some(3), None, Some(6)],
            millis: vec![1.0, 2.0, 3.0, 4.0],
        };
        let figures = asked.figures();
        assert_eq!(figures.asked, 4);
        assert!((figures.recall_at_1 - 0.25).abs() < 1e-12);
        assert!((figures.recall_at_5 - 0.5).abs() < 1e-12);
        assert!((figures.mrr - (1.0 + 1.0 / 3.0 + 1.0 / 6.0) / 4.0).abs() < 1e-12);
        assert!((figures.p95_ms - 4.0).abs() < 1e-12);
    }
}
