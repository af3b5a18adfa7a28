//! Checking what the historian model answered before anything reaches the store.
//!
//! Compartments must lie inside the chunk, start at its first ordinal, follow each other
//! without gap or overlap, and carry every field; facts must name one of the five memory
//! categories. A failure is reported in words the model can act on, since it is quoted back
//! in one repair round. The last compartment is held back when it ends within the lookahead
//! of the chunk end (nothing yet confirms its episode ended), and that run's facts and
//! observations with it: the next run reads those messages again and finds them again.

use std::fmt;

use super::chunk::Chunk;
use super::output::{CompartmentDraft, FactDraft, HistorianOutput};
use crate::head::MemoryCategory;

/// What survives validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validated {
    /// Compartments to publish, in order (possibly none, when the only one was held back).
    pub compartments: Vec<CompartmentDraft>,
    /// Facts to store, with their parsed categories (none when a compartment was held back).
    pub facts: Vec<(MemoryCategory, String)>,
    /// Observations about the user (none when a compartment was held back).
    pub observations: Vec<String>,
    /// Whether the last compartment was held back for the next run.
    pub held_back: bool,
}

impl Validated {
    /// The last ordinal the published compartments cover: the next chunk starts after it.
    pub fn covered_end(&self) -> Option<u64> {
        self.compartments.last().map(|last| last.end_ordinal)
    }
}

/// Why an answer was refused, in words quoted back to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValidationError {
    /// No compartment at all.
    NoCompartments,
    /// The first compartment does not start at the chunk's first ordinal.
    WrongStart {
        /// The chunk's first ordinal.
        expected: u64,
        /// Where the first compartment starts.
        found: u64,
    },
    /// A compartment ends before it starts.
    Reversed {
        /// Its position in the answer.
        index: usize,
    },
    /// A compartment does not start right after the previous one.
    NotContiguous {
        /// Its position in the answer.
        index: usize,
        /// The ordinal after the previous compartment.
        expected: u64,
        /// Where it starts.
        found: u64,
    },
    /// A compartment runs past the chunk.
    PastChunk {
        /// Its position in the answer.
        index: usize,
        /// Where it ends.
        end: u64,
        /// The chunk's last ordinal.
        chunk_end: u64,
    },
    /// An importance outside 1–100.
    Importance {
        /// Its position in the answer.
        index: usize,
        /// The importance given.
        found: u32,
    },
    /// A required text is empty.
    EmptyField {
        /// Its position in the answer.
        index: usize,
        /// The empty field.
        field: &'static str,
    },
    /// A fact names no known category.
    UnknownCategory {
        /// The fact's position in the answer.
        index: usize,
        /// The category given.
        found: String,
    },
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoCompartments => f.write_str("`compartments` is empty; write at least one"),
            Self::WrongStart { expected, found } => write!(
                f,
                "the first compartment starts at {found}; it must start at {expected}, the first ordinal of the transcript"
            ),
            Self::Reversed { index } => {
                write!(f, "compartment {index} ends before it starts")
            }
            Self::NotContiguous {
                index,
                expected,
                found,
            } => write!(
                f,
                "compartment {index} starts at {found}; it must start at {expected}, right after the previous one (no gaps, no overlaps)"
            ),
            Self::PastChunk {
                index,
                end,
                chunk_end,
            } => write!(
                f,
                "compartment {index} ends at {end}, past the last ordinal of the transcript ({chunk_end})"
            ),
            Self::Importance { index, found } => write!(
                f,
                "compartment {index} has importance {found}; use 1 to 100 (50 is neutral)"
            ),
            Self::EmptyField { index, field } => {
                write!(f, "compartment {index} has an empty `{field}`")
            }
            Self::UnknownCategory { index, found } => write!(
                f,
                "fact {index} has category `{found}`; use one of PROJECT_RULES, ARCHITECTURE, CONSTRAINTS, CONFIG_VALUES, NAMING"
            ),
        }
    }
}

/// Validates `output` for `chunk`; the last compartment is held back when it ends within
/// `lookahead` ordinals of the chunk end.
pub fn validate(
    output: &HistorianOutput,
    chunk: Chunk,
    lookahead: u32,
) -> Result<Validated, ValidationError> {
    checked(output, chunk, Some(lookahead))
}

/// Validates `output` for a chunk whose end is known to close the history it reads (an
/// operator's `wrapup` up to the kept tail, a rebuild up to where the old compartments
/// ended): nothing is held back, since no later run would read those messages again.
pub fn validate_closed(
    output: &HistorianOutput,
    chunk: Chunk,
) -> Result<Validated, ValidationError> {
    checked(output, chunk, None)
}

/// The checks of [`validate`]; `lookahead: None` holds nothing back.
fn checked(
    output: &HistorianOutput,
    chunk: Chunk,
    lookahead: Option<u32>,
) -> Result<Validated, ValidationError> {
    let Some(first) = output.compartments.first() else {
        return Err(ValidationError::NoCompartments);
    };
    if first.start_ordinal != chunk.start {
        return Err(ValidationError::WrongStart {
            expected: chunk.start,
            found: first.start_ordinal,
        });
    }
    let mut expected = chunk.start;
    for (index, compartment) in output.compartments.iter().enumerate() {
        check_compartment(index, compartment, expected, chunk)?;
        expected = compartment.end_ordinal + 1;
    }
    let facts = output
        .facts
        .iter()
        .enumerate()
        .map(|(index, fact)| parse_fact(index, fact))
        .collect::<Result<Vec<_>, _>>()?;
    let mut compartments = output.compartments.clone();
    let last_end = compartments
        .last()
        .map_or(chunk.start, |last| last.end_ordinal);
    let held_back = lookahead.is_some_and(|lookahead| last_end + u64::from(lookahead) >= chunk.end);
    if held_back {
        compartments.pop();
        return Ok(Validated {
            compartments,
            facts: Vec::new(),
            observations: Vec::new(),
            held_back,
        });
    }
    Ok(Validated {
        compartments,
        facts,
        observations: output
            .observations
            .iter()
            .map(|text| text.trim().to_owned())
            .filter(|text| !text.is_empty())
            .collect(),
        held_back,
    })
}

fn check_compartment(
    index: usize,
    compartment: &CompartmentDraft,
    expected: u64,
    chunk: Chunk,
) -> Result<(), ValidationError> {
    if compartment.start_ordinal != expected {
        return Err(ValidationError::NotContiguous {
            index,
            expected,
            found: compartment.start_ordinal,
        });
    }
    if compartment.end_ordinal < compartment.start_ordinal {
        return Err(ValidationError::Reversed { index });
    }
    if compartment.end_ordinal > chunk.end {
        return Err(ValidationError::PastChunk {
            index,
            end: compartment.end_ordinal,
            chunk_end: chunk.end,
        });
    }
    if !(1..=100).contains(&compartment.importance) {
        return Err(ValidationError::Importance {
            index,
            found: compartment.importance,
        });
    }
    let fields = [
        ("title", &compartment.title),
        ("condensed", &compartment.condensed),
        ("line", &compartment.line),
    ];
    match fields.iter().find(|(_, text)| text.trim().is_empty()) {
        Some((field, _)) => Err(ValidationError::EmptyField { index, field }),
        None => Ok(()),
    }
}

fn parse_fact(index: usize, fact: &FactDraft) -> Result<(MemoryCategory, String), ValidationError> {
    let category = MemoryCategory::ALL
        .into_iter()
        .find(|category| category.as_str() == fact.category.trim())
        .ok_or_else(|| ValidationError::UnknownCategory {
            index,
            found: fact.category.clone(),
        })?;
    Ok((category, fact.content.trim().to_owned()))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn draft(start: u64, end: u64) -> CompartmentDraft {
        CompartmentDraft {
            start_ordinal: start,
            end_ordinal: end,
            title: format!("episode {start}"),
            importance: 50,
            episode: "feature".into(),
            condensed: "condensed".into(),
            line: "line".into(),
        }
    }

    fn output(ranges: &[(u64, u64)]) -> HistorianOutput {
        HistorianOutput {
            compartments: ranges
                .iter()
                .map(|&(start, end)| draft(start, end))
                .collect(),
            facts: vec![FactDraft {
                category: "NAMING".into(),
                content: " Tests end in _test. ".into(),
            }],
            observations: vec!["prefers small commits".into()],
        }
    }

    const CHUNK: Chunk = Chunk { start: 10, end: 40 };

    #[test]
    fn good_output_passes_and_a_last_compartment_near_the_end_is_held_back_with_the_facts() {
        let kept = validate(&output(&[(10, 20), (21, 30)]), CHUNK, 2).unwrap();
        assert_eq!(kept.compartments.len(), 2);
        assert_eq!(kept.covered_end(), Some(30));
        assert_eq!(
            kept.facts,
            [(MemoryCategory::Naming, "Tests end in _test.".to_owned())]
        );
        assert!(!kept.held_back);
        let held = validate(&output(&[(10, 20), (21, 38)]), CHUNK, 2).unwrap();
        assert!(held.held_back);
        assert_eq!(held.covered_end(), Some(20));
        assert!(held.facts.is_empty() && held.observations.is_empty());
        let closed = validate_closed(&output(&[(10, 20), (21, 40)]), CHUNK).unwrap();
        assert!(!closed.held_back);
        assert_eq!(closed.covered_end(), Some(40));
        assert_eq!(closed.facts.len(), 1);
        assert_eq!(closed.observations, ["prefers small commits"]);
        assert!(validate_closed(&output(&[(10, 20), (22, 40)]), CHUNK).is_err());
    }

    #[test]
    fn bad_output_is_refused_with_a_reason_the_model_can_act_on() {
        let error = validate(&output(&[(10, 20), (22, 30)]), CHUNK, 2).unwrap_err();
        assert_eq!(
            error.to_string(),
            "compartment 1 starts at 22; it must start at 21, right after the previous one (no gaps, no overlaps)"
        );
        let cases = [
            (output(&[]), "`compartments` is empty; write at least one"),
            (
                output(&[(11, 20)]),
                "the first compartment starts at 11; it must start at 10, the first ordinal of the transcript",
            ),
            (
                output(&[(10, 41)]),
                "compartment 0 ends at 41, past the last ordinal of the transcript (40)",
            ),
            (
                output(&[(10, 20), (21, 19)]),
                "compartment 1 ends before it starts",
            ),
        ];
        for (output, message) in cases {
            assert_eq!(
                validate(&output, CHUNK, 2).unwrap_err().to_string(),
                message
            );
        }
        let mut bad = output(&[(10, 20)]);
        bad.compartments[0].importance = 0;
        bad.facts[0].category = "STYLE".into();
        assert!(matches!(
            validate(&bad, CHUNK, 2),
            Err(ValidationError::Importance { .. })
        ));
        bad.compartments[0].importance = 70;
        assert!(matches!(
            validate(&bad, CHUNK, 2),
            Err(ValidationError::UnknownCategory { .. })
        ));
        bad.facts.clear();
        bad.compartments[0].line = " ".into();
        assert_eq!(
            validate(&bad, CHUNK, 2).unwrap_err(),
            ValidationError::EmptyField {
                index: 0,
                field: "line"
            }
        );
    }

    proptest! {
        /// Whatever the model answers, what passes is contiguous from the chunk start, inside
        /// the chunk, and ends before the lookahead.
        #[test]
        fn what_passes_is_contiguous_inside_and_confirmed(
            cuts in prop::collection::vec(0..40u64, 0..8),
            shift in prop_oneof![4 => Just(0i64), 1 => -3..3i64],
            importance in prop_oneof![6 => 1..=100u32, 1 => 0..300u32],
            lookahead in 0..4u32,
        ) {
            let mut ends: Vec<u64> = cuts.iter().map(|cut| CHUNK.start + cut).collect();
            ends.sort_unstable();
            let mut start = CHUNK.start;
            let mut compartments = Vec::new();
            for end in ends {
                let mut compartment = draft(start.saturating_add_signed(shift), end);
                compartment.importance = importance;
                compartments.push(compartment);
                start = end + 1;
            }
            let output = HistorianOutput { compartments, facts: Vec::new(), observations: Vec::new() };
            if let Ok(kept) = validate(&output, CHUNK, lookahead) {
                let mut next = CHUNK.start;
                for compartment in &kept.compartments {
                    prop_assert_eq!(compartment.start_ordinal, next);
                    prop_assert!(compartment.end_ordinal >= compartment.start_ordinal);
                    prop_assert!(compartment.end_ordinal <= CHUNK.end);
                    prop_assert!((1..=100).contains(&compartment.importance));
                    next = compartment.end_ordinal + 1;
                }
                // A compartment another one follows is confirmed ended; the last one is
                // kept only when it ends before the lookahead.
                match (kept.held_back, output.compartments.last()) {
                    (true, Some(last)) => prop_assert!(last.end_ordinal + u64::from(lookahead) >= CHUNK.end),
                    (false, Some(last)) => prop_assert!(last.end_ordinal + u64::from(lookahead) < CHUNK.end),
                    (_, None) => prop_assert!(false, "an empty answer never passes"),
                }
                prop_assert_eq!(kept.compartments.len() + usize::from(kept.held_back), output.compartments.len());
            }
        }
    }
}
