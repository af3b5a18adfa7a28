//! Thresholds of the automatic reclaim lanes, each default with its reason.

use serde::Serialize;

/// Settings of the reclaim lanes and the reduction nudge.
///
/// A plain struct of checked-by-construction values; it can move into `mc_core::config` (with
/// a raw, all-`Option` twin) once users need to set it. Ages are in turns: a turn is one
/// assistant message, so a part's age is the number of assistant messages stored after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReclaimConfig {
    /// The newest this many tags are never reclaimed. Default 20, the same number as
    /// `ReductionConfig::protected_tags` (DESIGN §9): the model is working with them now.
    pub protected_count: u32,
    /// Tool output at least this many turns old is stale. Default 8: by then an agent has
    /// acted on what it read, and anything it still needs it usually reads again.
    pub stale_age_turns: u32,
    /// Stale output smaller than this many tokens stays. Default 800: small outputs cost
    /// little to keep, and a page of output is where a re-read starts to hurt.
    pub stale_min_tokens: u64,
    /// Near-duplicate detection only looks at outputs of at least this many tokens. Default
    /// 200: below that, word shingles are too few for Jaccard similarity to mean much.
    pub near_duplicate_min_tokens: u64,
    /// Two outputs are near-duplicates when the Jaccard similarity of their word shingles is
    /// at least this percentage. Default 90: a re-run test or re-listed directory with a
    /// changed line or two, not two different files that share boilerplate.
    pub near_duplicate_percent: u8,
    /// Words per shingle for near-duplicate detection. Default 5: long enough that shared
    /// vocabulary alone does not look similar, short enough that one edit spoils few shingles.
    pub shingle_words: u32,
    /// An errored tool result at least this many turns old is dropped. Default 3: the agent
    /// has reacted to the error by then, and a failed call's output rarely matters again.
    pub errored_age_turns: u32,
    /// Reasoning blocks at least this many turns old are dropped. Default 4: reasoning is
    /// the model's scratch work for the step it took; later steps rest on their results.
    pub reasoning_age_turns: u32,
    /// Treat user text that follows an assistant message (other than the task) as tool
    /// output. Default true: text-protocol agents such as mini-swe-agent send command output
    /// as user text (`<returncode>…</returncode><output>…</output>`), and it would otherwise
    /// never be reclaimed. Set false for chat-heavy clients whose user text is human prose.
    pub user_text_as_output: bool,
    /// The nudge starts once this many tokens of tool output are unreduced. Default 20,000:
    /// about a tenth of a large window, enough to be worth a sentence of the model's attention.
    pub nudge_threshold_tokens: u64,
    /// No nudge for this many turns after a reduction (the engine counts passes, and counts
    /// an earlier nudge as a reduction). Default 5: the context just shrank, and repeating
    /// the reminder each turn teaches the model to ignore it.
    pub nudge_quiet_turns: u32,
}

impl Default for ReclaimConfig {
    fn default() -> Self {
        Self {
            protected_count: 20,
            stale_age_turns: 8,
            stale_min_tokens: 800,
            near_duplicate_min_tokens: 200,
            near_duplicate_percent: 90,
            shingle_words: 5,
            errored_age_turns: 3,
            reasoning_age_turns: 4,
            user_text_as_output: true,
            nudge_threshold_tokens: 20_000,
            nudge_quiet_turns: 5,
        }
    }
}
