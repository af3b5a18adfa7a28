//! Checking the settings of the background agents: the historian, embeddings for search and
//! the dreamer's schedules. Split from the foreground settings (proxy, cache, pass, head) only
//! to keep each file readable; the checks work the same way.

use mc_core::config::{
    DreamerConfig, DreamerSchedules, EmbeddingProviderChoice, EmbeddingsConfig, HistorianConfig,
    HistorianWire, TaskSchedule, upstream_url_problem,
};

use super::{Checker, key};
use crate::raw::{RawDreamer, RawDreamerSchedules, RawEmbeddings, RawHistorian};
use crate::schedule::schedule_problem;

impl Checker {
    pub(super) fn historian(&mut self, raw: RawHistorian) -> HistorianConfig {
        let d = HistorianConfig::default();
        HistorianConfig {
            enabled: raw.enabled.unwrap_or(d.enabled),
            model: raw.model.or(d.model),
            fallback_models: raw.fallback_models.unwrap_or(d.fallback_models),
            endpoint: raw.endpoint.and_then(|url| {
                let checked = self.text(
                    key(&["historian", "endpoint"]),
                    Some(url),
                    upstream_url_problem,
                    String::new(),
                );
                (!checked.is_empty()).then_some(checked)
            }),
            wire: match raw.wire {
                None => d.wire,
                Some(name) => HistorianWire::parse(&name).or_else(|| {
                    self.reject(
                        key(&["historian", "wire"]),
                        format!("`{name}` is not a wire; use `anthropic`, `openai` or `openai-responses`"),
                    );
                    d.wire
                }),
            },
            api_key_env: raw.api_key_env.and_then(|name| {
                let checked = self.text(
                    key(&["historian", "api_key_env"]),
                    Some(name),
                    env_name_problem,
                    String::new(),
                );
                (!checked.is_empty()).then_some(checked)
            }),
            trigger_budget_percent: self.percent(
                key(&["historian", "trigger_budget_percent"]),
                raw.trigger_budget_percent,
                HistorianConfig::TRIGGER_BUDGET_PERCENT,
                d.trigger_budget_percent,
            ),
            live_tail_tags: self.count(
                key(&["historian", "live_tail_tags"]),
                raw.live_tail_tags,
                HistorianConfig::LIVE_TAIL_TAGS,
                d.live_tail_tags,
            ),
            live_tail_percent: self.percent(
                key(&["historian", "live_tail_percent"]),
                raw.live_tail_percent,
                HistorianConfig::LIVE_TAIL_PERCENT,
                d.live_tail_percent,
            ),
            start_usage_percent: self.percent(
                key(&["historian", "start_usage_percent"]),
                raw.start_usage_percent,
                HistorianConfig::START_USAGE_PERCENT,
                d.start_usage_percent,
            ),
            lookahead_ordinals: self.count(
                key(&["historian", "lookahead_ordinals"]),
                raw.lookahead_ordinals,
                HistorianConfig::LOOKAHEAD_ORDINALS,
                d.lookahead_ordinals,
            ),
        }
    }

    pub(super) fn embeddings(&mut self, raw: RawEmbeddings) -> EmbeddingsConfig {
        let d = EmbeddingsConfig::default();
        let provider = match raw.provider {
            None => d.provider,
            Some(name) => EmbeddingProviderChoice::parse(&name).unwrap_or_else(|| {
                self.reject(
                    key(&["embeddings", "provider"]),
                    format!("`{name}` is not a provider; use `local` or `openai-compatible` (or set `enabled` to false)"),
                );
                d.provider
            }),
        };
        let endpoint = raw.endpoint.and_then(|url| {
            let checked = self.text(
                key(&["embeddings", "endpoint"]),
                Some(url),
                upstream_url_problem,
                String::new(),
            );
            (!checked.is_empty()).then_some(checked)
        });
        if provider == EmbeddingProviderChoice::OpenAiCompatible
            && raw.enabled.unwrap_or(d.enabled)
            && (endpoint.is_none() || raw.model.is_none())
        {
            self.reject(
                key(&["embeddings", "provider"]),
                "`openai-compatible` needs `embeddings.endpoint` and `embeddings.model`".to_owned(),
            );
        }
        EmbeddingsConfig {
            enabled: raw.enabled.unwrap_or(d.enabled),
            dimensions: self.count(
                key(&["embeddings", "dimensions"]),
                raw.dimensions,
                EmbeddingsConfig::DIMENSIONS,
                d.dimensions,
            ),
            provider,
            model_dir: raw.model_dir.filter(|dir| !dir.trim().is_empty()),
            endpoint,
            model: raw.model.filter(|model| !model.trim().is_empty()),
            api_key_env: raw.api_key_env.and_then(|name| {
                let checked = self.text(
                    key(&["embeddings", "api_key_env"]),
                    Some(name),
                    env_name_problem,
                    String::new(),
                );
                (!checked.is_empty()).then_some(checked)
            }),
        }
    }

    pub(super) fn dreamer(&mut self, raw: RawDreamer) -> DreamerConfig {
        let d = DreamerConfig::default();
        DreamerConfig {
            enabled: raw.enabled.unwrap_or(d.enabled),
            schedules: self.schedules(raw.schedules.unwrap_or_default()),
            user_profile_promotion_sightings: self.count(
                key(&["dreamer", "user_profile_promotion_sightings"]),
                raw.user_profile_promotion_sightings,
                DreamerConfig::USER_PROFILE_PROMOTION_SIGHTINGS,
                d.user_profile_promotion_sightings,
            ),
            archive_after_days: self.count(
                key(&["dreamer", "archive_after_days"]),
                raw.archive_after_days,
                DreamerConfig::ARCHIVE_AFTER_DAYS,
                d.archive_after_days,
            ),
            rewrite_over_chars: self.count(
                key(&["dreamer", "rewrite_over_chars"]),
                raw.rewrite_over_chars,
                DreamerConfig::REWRITE_OVER_CHARS,
                d.rewrite_over_chars,
            ),
            agent_max_steps: self.count(
                key(&["dreamer", "agent_max_steps"]),
                raw.agent_max_steps,
                DreamerConfig::AGENT_MAX_STEPS,
                d.agent_max_steps,
            ),
            agent_token_budget: self.count(
                key(&["dreamer", "agent_token_budget"]),
                raw.agent_token_budget,
                DreamerConfig::AGENT_TOKEN_BUDGET,
                d.agent_token_budget,
            ),
            agent_max_seconds: self.count(
                key(&["dreamer", "agent_max_seconds"]),
                raw.agent_max_seconds,
                DreamerConfig::AGENT_MAX_SECONDS,
                d.agent_max_seconds,
            ),
            stop_after_identical_failures: self.count(
                key(&["dreamer", "stop_after_identical_failures"]),
                raw.stop_after_identical_failures,
                DreamerConfig::STOP_AFTER_IDENTICAL_FAILURES,
                d.stop_after_identical_failures,
            ),
            pin_key_files_max_files: self.count(
                key(&["dreamer", "pin_key_files_max_files"]),
                raw.pin_key_files_max_files,
                DreamerConfig::PIN_KEY_FILES_MAX_FILES,
                d.pin_key_files_max_files,
            ),
            pin_key_files_budget_tokens: self.count(
                key(&["dreamer", "pin_key_files_budget_tokens"]),
                raw.pin_key_files_budget_tokens,
                DreamerConfig::PIN_KEY_FILES_BUDGET_TOKENS,
                d.pin_key_files_budget_tokens,
            ),
            pin_key_files_min_reads: self.count(
                key(&["dreamer", "pin_key_files_min_reads"]),
                raw.pin_key_files_min_reads,
                DreamerConfig::PIN_KEY_FILES_MIN_READS,
                d.pin_key_files_min_reads,
            ),
        }
    }

    fn schedules(&mut self, raw: RawDreamerSchedules) -> DreamerSchedules {
        let d = DreamerSchedules::default();
        let mut task = |name: &str, raw: Option<String>, default: TaskSchedule| match raw {
            None => default,
            Some(text) => match schedule_problem(&text) {
                None => TaskSchedule::from_config(&text),
                Some(reason) => {
                    self.reject(key(&["dreamer", "schedules", name]), reason);
                    default
                }
            },
        };
        DreamerSchedules {
            consolidate_memories: task(
                "consolidate_memories",
                raw.consolidate_memories,
                d.consolidate_memories,
            ),
            verify_memories: task("verify_memories", raw.verify_memories, d.verify_memories),
            archive_stale_memories: task(
                "archive_stale_memories",
                raw.archive_stale_memories,
                d.archive_stale_memories,
            ),
            rewrite_verbose_memories: task(
                "rewrite_verbose_memories",
                raw.rewrite_verbose_memories,
                d.rewrite_verbose_memories,
            ),
            maintain_docs: task("maintain_docs", raw.maintain_docs, d.maintain_docs),
            evaluate_smart_notes: task(
                "evaluate_smart_notes",
                raw.evaluate_smart_notes,
                d.evaluate_smart_notes,
            ),
            promote_user_profile: task(
                "promote_user_profile",
                raw.promote_user_profile,
                d.promote_user_profile,
            ),
            pin_key_files: task("pin_key_files", raw.pin_key_files, d.pin_key_files),
        }
    }
}

/// Why `name` cannot be an environment variable's name, if it cannot.
fn env_name_problem(name: &str) -> Option<String> {
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    (!valid).then(|| {
        format!("`{name}` is not an environment variable name (letters, digits and `_`); put the key in the environment and name the variable here")
    })
}
