//! The dreamer's pure parts that a model sees (DESIGN §5 "Dreamer"): how a memory under
//! suspicion and the evidence gathered about it are written into the prompt, the tool the
//! model must call to judge it, and the reading of that judgement; the same for groups of
//! memories that may say one thing twice, and the word overlap that finds them; and for
//! smart notes whose condition is written in plain words, with the commits made since; and
//! for memories over their length budget, with the paths, names and values a memory names
//! ([`mentions_of`]), which a shorter rewrite must keep; and for the small agent loop that
//! looks at the project's code step by step ([`STEP_TOOL`]); and the ranking of the files
//! the agent re-reads most ([`rank_reads`]), which needs no model.
//!
//! They live here rather than in the dreamer's own crate because the simulator reads the
//! same prompt back to play the dreamer's model, and the simulator sits below the crates
//! that call models. Finding the evidence (reading the project's files), scheduling and
//! writing the verdicts to the store happen above the store.

mod agent_step;
mod evidence;
mod key_files;
mod mentions;
mod merge;
mod note_check;
mod overlap;
mod rewrite;
mod verdict;

pub use agent_step::{
    CallShown, DOC_TOOL, FINISH, LOOK_TOOLS, MAX_CALLS_PER_STEP, MEMORY_TOOLS, Remaining,
    STEP_SYSTEM, STEP_TOOL, StepCall, parse_step, read_step_message, step_tool, step_user_message,
};
pub use evidence::{
    Candidate, Evidence, Sighting, VERIFY_SYSTEM, read_verify_message, verify_user_message,
};
pub use key_files::{
    FileRead, HALF_LIFE_MS, LOOKBACK_MS, RankedFile, project_relative, rank_reads,
};
pub use mentions::{Mention, mentions_of};
pub use merge::{
    MERGE_SYSTEM, MERGE_TOOL, Merge, MergeGroup, merge_tool, merge_user_message, parse_merges,
    read_merge_message,
};
pub use note_check::{
    COMMITS_SHOWN, CommitSeen, FILES_SHOWN, NOTES_SYSTEM, NOTES_TOOL, NoteCheck, NoteVerdict,
    notes_tool, notes_user_message, parse_note_verdicts, read_notes_message,
};
pub use overlap::{exact_words, overlap, word_set};
pub use rewrite::{
    REWRITE_SYSTEM, REWRITE_TOOL, Rewrite, VerboseMemory, parse_rewrites, read_rewrite_message,
    rewrite_tool, rewrite_user_message,
};
pub use verdict::{JUDGE_TOOL, Verdict, judge_tool, parse_verdicts};
