//! The engine's settings as typed values with DESIGN §9 defaults.
//!
//! These types hold checked values only: reading files, layering them and reporting bad
//! values is `mc-config`'s job, which builds a [`Config`] from what users write. Field names
//! are the config file keys, so `serde_json::to_value(&config)` is the effective config in
//! file shape (`magic-context config show` prints exactly that).
//!
//! ```
//! use mc_core::config::{Config, PassConfig, Tokens};
//!
//! let config = Config::default();
//! let execute = config.pass.execute_threshold_for("claude-sonnet-4-5").percent_of(Tokens(200_000));
//! assert_eq!(execute.get(), 65);
//! assert_eq!(PassConfig::force_band_percent(execute).get(), 85);
//! assert_eq!(config.history.budget_tokens(Some(Tokens(200_000))), Tokens(10_000));
//! ```

mod cache;
mod compaction;
mod dreamer;
mod embeddings;
mod historian;
mod history;
mod model_match;
mod pass;
mod project_docs;
mod proxy;
mod recall;
mod reduction;
mod retention;
mod secret;
mod team_store;
mod tools;
mod units;
mod workspaces;

use serde::Serialize;

pub use cache::CacheConfig;
pub use compaction::CompactionConfig;
pub use dreamer::{DreamerConfig, DreamerSchedules, TaskSchedule};
pub use embeddings::{EmbeddingProviderChoice, EmbeddingsConfig};
pub use historian::{HistorianConfig, HistorianWire};
pub use history::{HistoryConfig, M1RefoldConfig};
pub use model_match::override_for;
pub use pass::{ExecuteThreshold, PassConfig};
pub use project_docs::{ProjectDocsConfig, doc_file_problem};
pub use proxy::{ProxyConfig, allowed_host_problem, listen_address_problem, upstream_url_problem};
pub use recall::{ExpandConfig, MemoryConfig};
pub use reduction::ReductionConfig;
pub use retention::{RetentionConfig, cutoff_ms};
pub use secret::Secret;
pub use team_store::{TeamStoreConfig, TeamStoreUrl, redact_url, team_store_url_problem};
pub use tools::{ToolsConfig, ToolsMode};
pub use units::{Bounds, CacheTtl, OutOfRange, Percent, Tokens};
pub use workspaces::{WorkspaceConfig, WorkspacesConfig, normalise_root, workspace_name_problem};

/// Every setting, one section per concern. `Config::default()` is the DESIGN §9 config.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Config {
    /// The HTTP proxy.
    pub proxy: ProxyConfig,
    /// Prompt cache lifetime assumptions.
    pub cache: CacheConfig,
    /// Usage levels that gate busting.
    pub pass: PassConfig,
    /// Drops, skeletons and nudges.
    pub reduction: ReductionConfig,
    /// History budget and the `m[1]` refold backstop.
    pub history: HistoryConfig,
    /// Project memory injection.
    pub memory: MemoryConfig,
    /// Transcript expansion.
    pub expand: ExpandConfig,
    /// The project's docs in `m[0]`.
    pub project_docs: ProjectDocsConfig,
    /// The background historian.
    pub historian: HistorianConfig,
    /// Embeddings for search.
    pub embeddings: EmbeddingsConfig,
    /// The background dreamer.
    pub dreamer: DreamerConfig,
    /// How the agent tools reach the model.
    pub tools: ToolsConfig,
    /// How long sessions are kept.
    pub retention: RetentionConfig,
    /// Whether the engine or the host manages the window.
    pub compaction: CompactionConfig,
    /// Groups of projects that read each other's memories (user file only).
    pub workspaces: WorkspacesConfig,
    /// The PostgreSQL store a team shares project knowledge through (user file only).
    pub team_store: TeamStoreConfig,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The defaults are the DESIGN §9 reference numbers; this pins them in one place.
    #[test]
    fn defaults_are_design_numbers() {
        let c = Config::default();
        assert_eq!(c.proxy.listen, "127.0.0.1:4141");
        assert_eq!(c.cache.ttl, CacheTtl::FiveMinutes);
        assert_eq!(c.pass.execute_threshold_percent.get(), 65);
        assert_eq!(c.pass.refusal_percent.get(), 95);
        assert_eq!(
            (c.reduction.protected_tags, c.reduction.drop_skeletons),
            (20, 20)
        );
        assert_eq!(c.history.budget_percent.get(), 5);
        assert_eq!(c.history.budget_tokens_unknown_window, Tokens(20_000));
        let m1 = &c.history.m1_refold;
        assert_eq!(m1.history_budget_percent.get(), 20);
        assert_eq!(
            (m1.m0_percent.get(), m1.m0_min_tokens, m1.max_memory_updates),
            (15, Tokens(500), 40)
        );
        assert_eq!(c.memory.injection_budget_tokens, Tokens(4_000));
        assert_eq!(c.expand.cap_tokens, Tokens(15_000));
        assert_eq!(c.historian.trigger_budget_percent.get(), 5);
        assert_eq!(c.historian.lookahead_ordinals, 2);
        assert_eq!(c.embeddings.dimensions, 384);
        assert_eq!(c.dreamer.user_profile_promotion_sightings, 3);
        assert_eq!(c.dreamer.stop_after_identical_failures, 3);
        assert_eq!(c.dreamer.archive_after_days, 90);
        assert_eq!(c.dreamer.rewrite_over_chars, 400);
        assert_eq!(c.dreamer.agent_max_steps, 12);
        assert_eq!(c.dreamer.agent_token_budget, 40_000);
        assert_eq!(c.dreamer.agent_max_seconds, 180);
        assert_eq!(
            (
                c.dreamer.pin_key_files_max_files,
                c.dreamer.pin_key_files_budget_tokens,
                c.dreamer.pin_key_files_min_reads
            ),
            (4, 3_000, 3)
        );
        assert_eq!(c.tools.hidden_exchange_max_age_days, 30);
        assert_eq!(c.retention.session_days, 90);
        assert!(c.compaction.enabled);
        assert!(c.workspaces.is_empty());
    }

    /// Every bounded default lies inside its own bounds.
    #[test]
    fn defaults_respect_their_bounds() {
        let c = Config::default();
        let checks = [
            (
                PassConfig::EXECUTE_THRESHOLD_PERCENT,
                u64::from(c.pass.execute_threshold_percent),
            ),
            (
                PassConfig::REFUSAL_PERCENT,
                u64::from(c.pass.refusal_percent),
            ),
            (ProxyConfig::MAX_REQUEST_BYTES, c.proxy.max_request_bytes),
            (ProxyConfig::CACHE_BUDGET_MB, c.proxy.cache_budget_mb),
            (
                ToolsConfig::HIDDEN_EXCHANGE_MAX_AGE_DAYS,
                u64::from(c.tools.hidden_exchange_max_age_days),
            ),
            (
                RetentionConfig::SESSION_DAYS,
                u64::from(c.retention.session_days),
            ),
            (
                ReductionConfig::PROTECTED_TAGS,
                u64::from(c.reduction.protected_tags),
            ),
            (
                ReductionConfig::DROP_SKELETONS,
                u64::from(c.reduction.drop_skeletons),
            ),
            (
                HistoryConfig::BUDGET_PERCENT,
                u64::from(c.history.budget_percent),
            ),
            (
                HistoryConfig::BUDGET_TOKENS_UNKNOWN_WINDOW,
                c.history.budget_tokens_unknown_window.get(),
            ),
            (
                M1RefoldConfig::PERCENT,
                u64::from(c.history.m1_refold.history_budget_percent),
            ),
            (
                M1RefoldConfig::PERCENT,
                u64::from(c.history.m1_refold.m0_percent),
            ),
            (
                M1RefoldConfig::M0_MIN_TOKENS,
                c.history.m1_refold.m0_min_tokens.get(),
            ),
            (
                M1RefoldConfig::MAX_MEMORY_UPDATES,
                u64::from(c.history.m1_refold.max_memory_updates),
            ),
            (
                MemoryConfig::INJECTION_BUDGET_TOKENS,
                c.memory.injection_budget_tokens.get(),
            ),
            (ExpandConfig::CAP_TOKENS, c.expand.cap_tokens.get()),
            (
                HistorianConfig::TRIGGER_BUDGET_PERCENT,
                u64::from(c.historian.trigger_budget_percent),
            ),
            (
                HistorianConfig::LOOKAHEAD_ORDINALS,
                u64::from(c.historian.lookahead_ordinals),
            ),
            (
                EmbeddingsConfig::DIMENSIONS,
                u64::from(c.embeddings.dimensions),
            ),
            (
                DreamerConfig::USER_PROFILE_PROMOTION_SIGHTINGS,
                u64::from(c.dreamer.user_profile_promotion_sightings),
            ),
            (
                DreamerConfig::ARCHIVE_AFTER_DAYS,
                u64::from(c.dreamer.archive_after_days),
            ),
            (
                DreamerConfig::REWRITE_OVER_CHARS,
                u64::from(c.dreamer.rewrite_over_chars),
            ),
            (
                DreamerConfig::AGENT_MAX_STEPS,
                u64::from(c.dreamer.agent_max_steps),
            ),
            (
                DreamerConfig::AGENT_TOKEN_BUDGET,
                u64::from(c.dreamer.agent_token_budget),
            ),
            (
                DreamerConfig::AGENT_MAX_SECONDS,
                u64::from(c.dreamer.agent_max_seconds),
            ),
            (
                DreamerConfig::STOP_AFTER_IDENTICAL_FAILURES,
                u64::from(c.dreamer.stop_after_identical_failures),
            ),
            (
                DreamerConfig::PIN_KEY_FILES_MAX_FILES,
                u64::from(c.dreamer.pin_key_files_max_files),
            ),
            (
                DreamerConfig::PIN_KEY_FILES_BUDGET_TOKENS,
                u64::from(c.dreamer.pin_key_files_budget_tokens),
            ),
            (
                DreamerConfig::PIN_KEY_FILES_MIN_READS,
                u64::from(c.dreamer.pin_key_files_min_reads),
            ),
        ];
        for (bounds, value) in checks {
            assert_eq!(bounds.check(value), Ok(value));
        }
    }
}
