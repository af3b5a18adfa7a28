//! The dreamer's maintenance tasks and when each runs (DESIGN §5 "Dreamer").

use std::fmt;

use serde::Serialize;

use super::units::Bounds;

/// The background maintenance scheduler.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DreamerConfig {
    /// Whether the dreamer runs. Its writes never bust the cache; they appear on the next
    /// natural rebuild.
    pub enabled: bool,
    /// When each task runs.
    pub schedules: DreamerSchedules,
    /// A user observation seen this many times is promoted to the user profile; once is an
    /// anecdote, three times is a habit.
    pub user_profile_promotion_sightings: u32,
    /// `archive_stale_memories` retires an active memory nothing has used or restated for
    /// this many days (no search returned it, nobody stated it again, it was not changed).
    /// 90 days, a season: longer than a feature takes to land or a pause in work lasts, so
    /// what goes is a fact about code nobody has touched or asked about since.
    pub archive_after_days: u32,
    /// `rewrite_verbose_memories` asks for a shorter text of an active memory longer than
    /// this many characters. 400 characters, about 100 tokens: room for a rule with its
    /// reason, a path and a value or two; a memory past it is paid for in every session's
    /// `m[0]` on every call, so a terser one is worth a nightly model call.
    pub rewrite_over_chars: u32,
    /// Most model calls (steps) one run's agent loop makes while it looks at the project's
    /// code. 12: a renamed file takes two or three (its history, then a verdict); the rest
    /// is room for a model that reads before it decides, not for one that wanders.
    pub agent_max_steps: u32,
    /// Most tokens (input and output, as the provider reports them) one run's agent loop
    /// spends. 40,000: each step re-sends the transcript, so a dozen steps of a few
    /// thousand tokens fit, and a nightly run stays at cents on a small model.
    pub agent_token_budget: u32,
    /// Most seconds one run's agent loop takes, model calls and tool calls together. 180:
    /// a dozen small-model steps take well under that; a hung endpoint does not hold the
    /// project's lease all night.
    pub agent_max_seconds: u32,
    /// A task that fails this many times in a row with the same error stops until the next
    /// start, so a broken task does not spend tokens failing all night.
    pub stop_after_identical_failures: u32,
    /// `pin_key_files` pins at most this many files. 4: the few files a project's work
    /// turns around (its main module, its config, the file under change this week); more
    /// would be a listing, not a pin.
    pub pin_key_files_max_files: u32,
    /// Tokens the pinned files may take in `m[0]`, every file together. 3,000: a
    /// mid-sized source file or a few small ones, under the 4,000 the project's memories
    /// get, and cheap at the cache-read price on every call; a larger file is pinned as
    /// its first lines.
    pub pin_key_files_budget_tokens: u32,
    /// A file is pinned only when the agent read it at least this many times in the last
    /// 30 days. 3: once is finding one's way, twice can be a check after an edit; a third
    /// read is a file the agent keeps coming back to.
    pub pin_key_files_min_reads: u32,
}

impl DreamerConfig {
    /// Accepted [`Self::user_profile_promotion_sightings`].
    pub const USER_PROFILE_PROMOTION_SIGHTINGS: Bounds = Bounds::count(1, 100, "sightings");
    /// Accepted [`Self::archive_after_days`]: at least a week, so a holiday never costs the
    /// project its memory; at most a hundred years (effectively never).
    pub const ARCHIVE_AFTER_DAYS: Bounds = Bounds::count(7, 36_500, "days");
    /// Accepted [`Self::rewrite_over_chars`]: under 100 characters a rewrite has nothing to
    /// gain; over 10,000 no memory would ever be rewritten.
    pub const REWRITE_OVER_CHARS: Bounds = Bounds::count(100, 10_000, "characters");
    /// Accepted [`Self::agent_max_steps`]: one step is only a verdict without a look; past
    /// 100 a loop is wandering.
    pub const AGENT_MAX_STEPS: Bounds = Bounds::count(1, 100, "steps");
    /// Accepted [`Self::agent_token_budget`]: under 2,000 tokens not even the first step's
    /// prompt fits; 2,000,000 is far past any nightly run worth paying for.
    pub const AGENT_TOKEN_BUDGET: Bounds = Bounds::count(2_000, 2_000_000, "tokens");
    /// Accepted [`Self::agent_max_seconds`]: at least ten seconds for one model call; at
    /// most an hour.
    pub const AGENT_MAX_SECONDS: Bounds = Bounds::count(10, 3_600, "seconds");
    /// Accepted [`Self::pin_key_files_max_files`]: 0 pins nothing (the task then only
    /// clears its pins); past 20 the section is a listing.
    pub const PIN_KEY_FILES_MAX_FILES: Bounds = Bounds::count(0, 20, "files");
    /// Accepted [`Self::pin_key_files_budget_tokens`]: 0 shows none; 50,000 is past any
    /// head worth paying for on every call.
    pub const PIN_KEY_FILES_BUDGET_TOKENS: Bounds = Bounds::count(0, 50_000, "tokens");
    /// Accepted [`Self::pin_key_files_min_reads`].
    pub const PIN_KEY_FILES_MIN_READS: Bounds = Bounds::count(1, 1_000, "reads");
    /// Accepted [`Self::stop_after_identical_failures`].
    pub const STOP_AFTER_IDENTICAL_FAILURES: Bounds = Bounds::count(1, 100, "failures");
}

impl Default for DreamerConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            schedules: DreamerSchedules::default(),
            user_profile_promotion_sightings: 3,
            archive_after_days: 90,
            rewrite_over_chars: 400,
            agent_max_steps: 12,
            agent_token_budget: 40_000,
            agent_max_seconds: 180,
            stop_after_identical_failures: 3,
            pin_key_files_max_files: 4,
            pin_key_files_budget_tokens: 3_000,
            pin_key_files_min_reads: 3,
        }
    }
}

/// Each task's schedule. Nightly defaults keep model calls away from working hours; smart
/// notes are checked often because their condition may come true any time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DreamerSchedules {
    /// Merge and deduplicate project memories.
    pub consolidate_memories: TaskSchedule,
    /// Check memories against the current code.
    pub verify_memories: TaskSchedule,
    /// Archive memories nothing has used for a long time.
    pub archive_stale_memories: TaskSchedule,
    /// Rewrite verbose memories more tersely.
    pub rewrite_verbose_memories: TaskSchedule,
    /// Maintain the project's ARCHITECTURE.md and STRUCTURE.md.
    pub maintain_docs: TaskSchedule,
    /// Evaluate the conditions of smart notes and surface the ones that came true.
    pub evaluate_smart_notes: TaskSchedule,
    /// Promote recurring user observations to the user profile.
    pub promote_user_profile: TaskSchedule,
    /// Pin the files the agent re-reads most.
    pub pin_key_files: TaskSchedule,
}

impl Default for DreamerSchedules {
    fn default() -> Self {
        let cron = |expr: &str| TaskSchedule::Cron(expr.to_owned());
        Self {
            consolidate_memories: cron("0 3 * * *"),
            verify_memories: cron("30 3 * * *"),
            archive_stale_memories: cron("0 4 * * 1"),
            rewrite_verbose_memories: cron("30 4 * * 1"),
            maintain_docs: cron("0 5 * * *"),
            evaluate_smart_notes: cron("*/30 * * * *"),
            promote_user_profile: cron("0 6 * * *"),
            pin_key_files: cron("30 6 * * *"),
        }
    }
}

/// When one dreamer task runs: a standard 5-field cron expression (minute, hour,
/// day of month, month, day of week), or `"off"`.
///
/// The expression is kept as written; the loader checks its syntax and the engine's scheduler
/// parses it, so this crate stays free of a cron dependency.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub enum TaskSchedule {
    /// Run whenever the cron expression matches.
    Cron(String),
    /// Never run this task.
    Off,
}

impl TaskSchedule {
    /// The config spelling that turns a task off.
    pub const OFF: &'static str = "off";

    /// Reads the config spelling: `"off"` (any case) or a cron expression, unchecked.
    pub fn from_config(text: &str) -> Self {
        if text.trim().eq_ignore_ascii_case(Self::OFF) {
            Self::Off
        } else {
            Self::Cron(text.trim().to_owned())
        }
    }
}

impl fmt::Display for TaskSchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cron(expr) => f.write_str(expr),
            Self::Off => f.write_str(Self::OFF),
        }
    }
}

impl From<TaskSchedule> for String {
    fn from(schedule: TaskSchedule) -> Self {
        schedule.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_read_and_write_the_config_spelling() {
        assert_eq!(TaskSchedule::from_config(" OFF "), TaskSchedule::Off);
        let nightly = TaskSchedule::from_config("0 3 * * *");
        assert_eq!(nightly, TaskSchedule::Cron("0 3 * * *".to_owned()));
        assert_eq!(serde_json::to_value(&nightly).unwrap(), "0 3 * * *");
        assert_eq!(serde_json::to_value(TaskSchedule::Off).unwrap(), "off");
    }
}
