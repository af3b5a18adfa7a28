//! What the configuration tells the tasks (`dreamer.*`), apart from the runner that holds
//! it, so a task's helpers can read it without depending on the runner.

use mc_core::config::DreamerConfig;

/// What the tasks are told by the configuration (`dreamer.*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskSettings {
    /// `archive_stale_memories` retires an active memory untouched for this many days.
    pub archive_after_days: u32,
    /// `promote_user_profile` promotes a user observation seen this many times.
    pub profile_sightings: u32,
    /// `rewrite_verbose_memories` asks for a shorter text of a memory over this many
    /// characters.
    pub rewrite_over_chars: u32,
    /// The agent loop's step cap per run.
    pub agent_max_steps: u32,
    /// The agent loop's token budget per run.
    pub agent_token_budget: u32,
    /// The agent loop's time cap per run, seconds.
    pub agent_max_seconds: u32,
    /// `pin_key_files` pins at most this many files.
    pub pin_key_files_max_files: u32,
    /// The tokens the pinned files may take in `m[0]`.
    pub pin_key_files_budget_tokens: u32,
    /// The reads within 30 days that make a file a key file.
    pub pin_key_files_min_reads: u32,
}

impl TaskSettings {
    /// The settings `config` gives.
    pub fn of(config: &DreamerConfig) -> Self {
        Self {
            archive_after_days: config.archive_after_days,
            profile_sightings: config.user_profile_promotion_sightings,
            rewrite_over_chars: config.rewrite_over_chars,
            agent_max_steps: config.agent_max_steps,
            agent_token_budget: config.agent_token_budget,
            agent_max_seconds: config.agent_max_seconds,
            pin_key_files_max_files: config.pin_key_files_max_files,
            pin_key_files_budget_tokens: config.pin_key_files_budget_tokens,
            pin_key_files_min_reads: config.pin_key_files_min_reads,
        }
    }
}

impl Default for TaskSettings {
    fn default() -> Self {
        Self::of(&DreamerConfig::default())
    }
}
