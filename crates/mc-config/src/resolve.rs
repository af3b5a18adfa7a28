//! Turns a [`RawConfig`] into a checked [`Config`], one key at a time.
//!
//! Each key that is set is checked against its domain bounds (or shape rule); a key that fails
//! keeps its default and yields an [`Issue`] naming the key and why. The loader runs this on
//! every single key of every file before layering (so a bad key falls back to the layer below,
//! not to the default), and once more on the merged result.

use std::collections::BTreeMap;

use mc_core::config::{
    Bounds, CacheConfig, CacheTtl, CompactionConfig, Config, ExecuteThreshold, ExpandConfig,
    HistoryConfig, M1RefoldConfig, MemoryConfig, PassConfig, Percent, ProjectDocsConfig,
    ProxyConfig, ReductionConfig, RetentionConfig, TeamStoreConfig, TeamStoreUrl, Tokens,
    ToolsConfig, ToolsMode, allowed_host_problem, doc_file_problem, listen_address_problem,
    upstream_url_problem,
};

mod background;
mod workspaces;

use crate::key_path::KeyPath;
use crate::raw::{
    RawCache, RawCacheTtl, RawCompaction, RawConfig, RawExpand, RawHistory, RawM1Refold, RawMemory,
    RawPass, RawProjectDocs, RawProxy, RawReduction, RawRetention, RawTeamStore, RawTools,
    RawToolsMode,
};

/// A key whose value was rejected, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    /// The key's dotted path.
    pub key: KeyPath,
    /// What is wrong, phrased for the user.
    pub reason: String,
}

/// Applies `raw` over the defaults; rejected keys keep their defaults and are listed.
pub fn resolve(raw: &RawConfig) -> (Config, Vec<Issue>) {
    let mut checker = Checker::default();
    let config = Config {
        proxy: checker.proxy(raw.proxy.clone().unwrap_or_default()),
        cache: checker.cache(raw.cache.clone().unwrap_or_default()),
        pass: checker.pass(raw.pass.clone().unwrap_or_default()),
        reduction: checker.reduction(raw.reduction.clone().unwrap_or_default()),
        history: checker.history(raw.history.clone().unwrap_or_default()),
        memory: checker.memory(raw.memory.clone().unwrap_or_default()),
        expand: checker.expand(raw.expand.clone().unwrap_or_default()),
        project_docs: checker.project_docs(raw.project_docs.clone().unwrap_or_default()),
        historian: checker.historian(raw.historian.clone().unwrap_or_default()),
        embeddings: checker.embeddings(raw.embeddings.clone().unwrap_or_default()),
        dreamer: checker.dreamer(raw.dreamer.clone().unwrap_or_default()),
        tools: checker.tools(raw.tools.clone().unwrap_or_default()),
        retention: checker.retention(raw.retention.clone().unwrap_or_default()),
        compaction: compaction(raw.compaction.clone().unwrap_or_default()),
        workspaces: checker.workspaces(raw.workspaces.clone().unwrap_or_default()),
        team_store: checker.team_store(raw.team_store.clone().unwrap_or_default()),
    };
    (config, checker.issues)
}

fn key(segments: &[&str]) -> KeyPath {
    KeyPath::new(segments.iter().copied())
}

#[derive(Default)]
struct Checker {
    issues: Vec<Issue>,
}

impl Checker {
    fn reject(&mut self, key: KeyPath, reason: impl Into<String>) {
        self.issues.push(Issue {
            key,
            reason: reason.into(),
        });
    }

    fn bounded(&mut self, key: KeyPath, raw: Option<u64>, bounds: Bounds) -> Option<u64> {
        match bounds.check(raw?) {
            Ok(value) => Some(value),
            Err(err) => {
                self.reject(key, err.to_string());
                None
            }
        }
    }

    fn percent(
        &mut self,
        key: KeyPath,
        raw: Option<u64>,
        bounds: Bounds,
        default: Percent,
    ) -> Percent {
        self.bounded(key, raw, bounds)
            .and_then(|v| Percent::new(v).ok())
            .unwrap_or(default)
    }

    fn tokens(
        &mut self,
        key: KeyPath,
        raw: Option<u64>,
        bounds: Bounds,
        default: Tokens,
    ) -> Tokens {
        self.bounded(key, raw, bounds).map_or(default, Tokens)
    }

    fn count(&mut self, key: KeyPath, raw: Option<u64>, bounds: Bounds, default: u32) -> u32 {
        self.bounded(key, raw, bounds)
            .and_then(|v| u32::try_from(v).ok())
            .unwrap_or(default)
    }

    fn text(
        &mut self,
        key: KeyPath,
        raw: Option<String>,
        problem: fn(&str) -> Option<String>,
        default: String,
    ) -> String {
        let Some(value) = raw else { return default };
        match problem(&value) {
            None => value,
            Some(reason) => {
                self.reject(key, reason);
                default
            }
        }
    }

    fn proxy(&mut self, raw: RawProxy) -> ProxyConfig {
        let d = ProxyConfig::default();
        ProxyConfig {
            listen: self.text(
                key(&["proxy", "listen"]),
                raw.listen,
                listen_address_problem,
                d.listen,
            ),
            upstream_anthropic: self.text(
                key(&["proxy", "upstream_anthropic"]),
                raw.upstream_anthropic,
                upstream_url_problem,
                d.upstream_anthropic,
            ),
            upstream_openai: self.text(
                key(&["proxy", "upstream_openai"]),
                raw.upstream_openai,
                upstream_url_problem,
                d.upstream_openai,
            ),
            max_request_bytes: self
                .bounded(
                    key(&["proxy", "max_request_bytes"]),
                    raw.max_request_bytes,
                    ProxyConfig::MAX_REQUEST_BYTES,
                )
                .unwrap_or(d.max_request_bytes),
            cache_budget_mb: self
                .bounded(
                    key(&["proxy", "cache_budget_mb"]),
                    raw.cache_budget_mb,
                    ProxyConfig::CACHE_BUDGET_MB,
                )
                .unwrap_or(d.cache_budget_mb),
            allowed_hosts: self.allowed_hosts(raw.allowed_hosts),
        }
    }

    /// The usable entries of `proxy.allowed_hosts`; each unusable one is reported and left out.
    fn allowed_hosts(&mut self, raw: Option<Vec<String>>) -> Vec<String> {
        let mut hosts = Vec::new();
        for (index, host) in raw.unwrap_or_default().into_iter().enumerate() {
            match allowed_host_problem(&host) {
                None => hosts.push(host),
                Some(reason) => self.reject(
                    key(&["proxy", "allowed_hosts"]).child(index.to_string()),
                    reason,
                ),
            }
        }
        hosts
    }

    fn cache(&mut self, raw: RawCache) -> CacheConfig {
        let d = CacheConfig::default();
        CacheConfig {
            ttl: raw.ttl.map_or(d.ttl, cache_ttl),
            ttl_by_model: raw
                .ttl_by_model
                .unwrap_or_default()
                .into_iter()
                .map(|(model, ttl)| (model, cache_ttl(ttl)))
                .collect(),
        }
    }

    fn pass(&mut self, raw: RawPass) -> PassConfig {
        let d = PassConfig::default();
        let mut by_model = BTreeMap::new();
        for (model, threshold) in raw.execute_threshold_by_model.unwrap_or_default() {
            let at = key(&["pass", "execute_threshold_by_model"]).child(model.clone());
            let tokens = self.bounded(
                at.child("tokens"),
                threshold.tokens,
                PassConfig::EXECUTE_THRESHOLD_TOKENS,
            );
            let percent = self
                .bounded(
                    at.child("percent"),
                    threshold.percent,
                    PassConfig::EXECUTE_THRESHOLD_PERCENT,
                )
                .and_then(|v| Percent::new(v).ok());
            let chosen = match (tokens, percent) {
                (Some(tokens), _) => Some(ExecuteThreshold::Tokens(Tokens(tokens))),
                (None, Some(percent)) => Some(ExecuteThreshold::Percent(percent)),
                (None, None) if threshold.tokens.is_none() && threshold.percent.is_none() => {
                    self.reject(at, "set `percent` or `tokens`");
                    None
                }
                (None, None) => None,
            };
            if let Some(chosen) = chosen {
                by_model.insert(model, chosen);
            }
        }
        PassConfig {
            execute_threshold_percent: self.percent(
                key(&["pass", "execute_threshold_percent"]),
                raw.execute_threshold_percent,
                PassConfig::EXECUTE_THRESHOLD_PERCENT,
                d.execute_threshold_percent,
            ),
            execute_threshold_by_model: by_model,
            refusal_percent: self.percent(
                key(&["pass", "refusal_percent"]),
                raw.refusal_percent,
                PassConfig::REFUSAL_PERCENT,
                d.refusal_percent,
            ),
            working_set_tokens: self
                .bounded(
                    key(&["pass", "working_set_tokens"]),
                    raw.working_set_tokens,
                    PassConfig::WORKING_SET_TOKENS,
                )
                .map(Tokens),
            working_set_horizon_turns: self.count(
                key(&["pass", "working_set_horizon_turns"]),
                raw.working_set_horizon_turns,
                PassConfig::WORKING_SET_HORIZON_TURNS,
                d.working_set_horizon_turns,
            ),
        }
    }

    fn reduction(&mut self, raw: RawReduction) -> ReductionConfig {
        let d = ReductionConfig::default();
        ReductionConfig {
            protected_tags: self.count(
                key(&["reduction", "protected_tags"]),
                raw.protected_tags,
                ReductionConfig::PROTECTED_TAGS,
                d.protected_tags,
            ),
            drop_skeletons: self.count(
                key(&["reduction", "drop_skeletons"]),
                raw.drop_skeletons,
                ReductionConfig::DROP_SKELETONS,
                d.drop_skeletons,
            ),
            nudges: raw.nudges.unwrap_or(d.nudges),
        }
    }

    fn history(&mut self, raw: RawHistory) -> HistoryConfig {
        let d = HistoryConfig::default();
        HistoryConfig {
            budget_percent: self.percent(
                key(&["history", "budget_percent"]),
                raw.budget_percent,
                HistoryConfig::BUDGET_PERCENT,
                d.budget_percent,
            ),
            budget_tokens_unknown_window: self.tokens(
                key(&["history", "budget_tokens_unknown_window"]),
                raw.budget_tokens_unknown_window,
                HistoryConfig::BUDGET_TOKENS_UNKNOWN_WINDOW,
                d.budget_tokens_unknown_window,
            ),
            m1_refold: self.m1_refold(raw.m1_refold.unwrap_or_default()),
        }
    }

    fn m1_refold(&mut self, raw: RawM1Refold) -> M1RefoldConfig {
        let d = M1RefoldConfig::default();
        let at = |leaf: &str| key(&["history", "m1_refold", leaf]);
        M1RefoldConfig {
            history_budget_percent: self.percent(
                at("history_budget_percent"),
                raw.history_budget_percent,
                M1RefoldConfig::PERCENT,
                d.history_budget_percent,
            ),
            m0_percent: self.percent(
                at("m0_percent"),
                raw.m0_percent,
                M1RefoldConfig::PERCENT,
                d.m0_percent,
            ),
            m0_min_tokens: self.tokens(
                at("m0_min_tokens"),
                raw.m0_min_tokens,
                M1RefoldConfig::M0_MIN_TOKENS,
                d.m0_min_tokens,
            ),
            max_memory_updates: self.count(
                at("max_memory_updates"),
                raw.max_memory_updates,
                M1RefoldConfig::MAX_MEMORY_UPDATES,
                d.max_memory_updates,
            ),
        }
    }

    fn memory(&mut self, raw: RawMemory) -> MemoryConfig {
        let d = MemoryConfig::default();
        MemoryConfig {
            injection_budget_tokens: self.tokens(
                key(&["memory", "injection_budget_tokens"]),
                raw.injection_budget_tokens,
                MemoryConfig::INJECTION_BUDGET_TOKENS,
                d.injection_budget_tokens,
            ),
        }
    }

    fn expand(&mut self, raw: RawExpand) -> ExpandConfig {
        let d = ExpandConfig::default();
        ExpandConfig {
            cap_tokens: self.tokens(
                key(&["expand", "cap_tokens"]),
                raw.cap_tokens,
                ExpandConfig::CAP_TOKENS,
                d.cap_tokens,
            ),
        }
    }
}

impl Checker {
    fn project_docs(&mut self, raw: RawProjectDocs) -> ProjectDocsConfig {
        let d = ProjectDocsConfig::default();
        let files = match raw.files {
            None => d.files.clone(),
            Some(files) if files.len() > ProjectDocsConfig::MAX_FILES => {
                self.reject(
                    key(&["project_docs", "files"]),
                    format!(
                        "at most {} doc files; {} are listed",
                        ProjectDocsConfig::MAX_FILES,
                        files.len()
                    ),
                );
                d.files.clone()
            }
            Some(files) => match files.iter().find_map(|name| doc_file_problem(name)) {
                Some(reason) => {
                    self.reject(key(&["project_docs", "files"]), reason);
                    d.files.clone()
                }
                None => files,
            },
        };
        ProjectDocsConfig {
            enabled: raw.enabled.unwrap_or(d.enabled),
            files,
            budget_percent: self.percent(
                key(&["project_docs", "budget_percent"]),
                raw.budget_percent,
                ProjectDocsConfig::BUDGET_PERCENT,
                d.budget_percent,
            ),
        }
    }

    fn tools(&mut self, raw: RawTools) -> ToolsConfig {
        let d = ToolsConfig::default();
        ToolsConfig {
            // Every value of the enum is valid, so the mode cannot be rejected.
            mode: match raw.mode {
                None | Some(RawToolsMode::Auto) => ToolsMode::Auto,
                Some(RawToolsMode::Mcp) => ToolsMode::Mcp,
                Some(RawToolsMode::Proxy) => ToolsMode::Proxy,
                Some(RawToolsMode::Off) => ToolsMode::Off,
            },
            hidden_exchange_max_age_days: self.count(
                key(&["tools", "hidden_exchange_max_age_days"]),
                raw.hidden_exchange_max_age_days,
                ToolsConfig::HIDDEN_EXCHANGE_MAX_AGE_DAYS,
                d.hidden_exchange_max_age_days,
            ),
        }
    }

    fn team_store(&mut self, raw: RawTeamStore) -> TeamStoreConfig {
        let url = raw.url.and_then(|url| match TeamStoreUrl::parse(&url) {
            Ok(url) => Some(url),
            Err(reason) => {
                self.reject(key(&["team_store", "url"]), reason);
                None
            }
        });
        TeamStoreConfig { url }
    }

    fn retention(&mut self, raw: RawRetention) -> RetentionConfig {
        let d = RetentionConfig::default();
        RetentionConfig {
            session_days: self.count(
                key(&["retention", "session_days"]),
                raw.session_days,
                RetentionConfig::SESSION_DAYS,
                d.session_days,
            ),
        }
    }
}

/// A switch has nothing to check beyond its type, which the file's screening already did.
fn compaction(raw: RawCompaction) -> CompactionConfig {
    CompactionConfig {
        enabled: raw.enabled.unwrap_or(CompactionConfig::default().enabled),
    }
}

fn cache_ttl(raw: RawCacheTtl) -> CacheTtl {
    match raw {
        RawCacheTtl::FiveMinutes => CacheTtl::FiveMinutes,
        RawCacheTtl::OneHour => CacheTtl::OneHour,
        RawCacheTtl::Never => CacheTtl::Never,
    }
}

#[cfg(test)]
mod tests;
