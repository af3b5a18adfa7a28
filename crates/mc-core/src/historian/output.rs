//! What the historian model answers: the structured output it is held to (a forced tool
//! call's input, or a JSON-schema response), as serde types.

use serde::{Deserialize, Serialize};

/// One run's answer for a chunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistorianOutput {
    /// The chunk's episodes, in order, each a contiguous ordinal range.
    pub compartments: Vec<CompartmentDraft>,
    /// Durable facts about the project, for project memory.
    #[serde(default)]
    pub facts: Vec<FactDraft>,
    /// Observations about the user (preferences, habits), for the user profile.
    #[serde(default)]
    pub observations: Vec<String>,
}

/// One compartment as the model wrote it, before validation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompartmentDraft {
    /// First ordinal covered (inclusive).
    pub start_ordinal: u64,
    /// Last ordinal covered (inclusive).
    pub end_ordinal: u64,
    /// A short title.
    pub title: String,
    /// 1–100, 50 neutral.
    pub importance: u32,
    /// What kind of work it was (debugging, feature, research, …).
    pub episode: String,
    /// The summary: what a later turn needs to go on, in few words. The stored compartment's
    /// full tier is this text too (see [`super::prompt`]).
    pub condensed: String,
    /// One line. The stored compartment's paragraph tier is this text too.
    pub line: String,
}

/// A fact in one of the five memory categories.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FactDraft {
    /// `PROJECT_RULES`, `ARCHITECTURE`, `CONSTRAINTS`, `CONFIG_VALUES` or `NAMING`.
    pub category: String,
    /// The fact, one sentence.
    pub content: String,
}
