//! The config file as users write it: every key optional, unknown keys rejected.
//!
//! These types mirror `mc_core::config` section by section with the same key names. They
//! carry the schema (doc comments become descriptions, bounds come from the domain constants)
//! and nothing else: defaults and range checks are applied by `resolve`, one key at a time, so
//! one bad value never costs the user the rest of their file.

use std::collections::BTreeMap;

use mc_core::config::{
    DreamerConfig, EmbeddingsConfig, ExpandConfig, HistorianConfig, HistoryConfig, M1RefoldConfig,
    MemoryConfig, PassConfig, ProjectDocsConfig, ProxyConfig, ReductionConfig, RetentionConfig,
    ToolsConfig,
};
use schemars::JsonSchema;
use serde::Deserialize;

/// User file: `$XDG_CONFIG_HOME/magic-context/magic-context.jsonc` (else
/// `~/.config/magic-context/magic-context.jsonc`, or the file named by `MAGIC_CONTEXT_CONFIG`).
/// Project file: `<project root>/.magic-context.jsonc`, which wins key by key. Comments and
/// trailing commas are allowed. A bad value is reported and ignored; the rest still applies.
/// `null` resets a key (or a whole section) to its built-in default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "Magic Context configuration")]
pub struct RawConfig {
    /// URL or path of this schema, for editors; ignored by Magic Context.
    #[serde(rename = "$schema")]
    pub schema: Option<String>,
    /// The local HTTP proxy (`magic-context serve`).
    pub proxy: Option<RawProxy>,
    /// What is assumed about the provider's prompt cache lifetime.
    pub cache: Option<RawCache>,
    /// Usage levels (shares of the usable window: context window minus output reserve) that
    /// decide when a pass may rewrite the cached prompt.
    pub pass: Option<RawPass>,
    /// Queued drops, tool-result skeletons and nudges.
    pub reduction: Option<RawReduction>,
    /// How much of the window summarised history may take, and when `m[1]` folds into `m[0]`.
    pub history: Option<RawHistory>,
    /// Project memories injected into the prompt.
    pub memory: Option<RawMemory>,
    /// Recalling original transcript with `ctx_expand`.
    pub expand: Option<RawExpand>,
    /// The project's own docs (ARCHITECTURE.md, STRUCTURE.md) in the prompt's head.
    pub project_docs: Option<RawProjectDocs>,
    /// The background historian that summarises old history into compartments.
    pub historian: Option<RawHistorian>,
    /// Embedding similarity in search.
    pub embeddings: Option<RawEmbeddings>,
    /// The background dreamer that maintains memories, docs and notes on cron schedules.
    pub dreamer: Option<RawDreamer>,
    /// How the agent tools (ctx_reduce, ctx_expand, ctx_note, ctx_memory, ctx_search) reach
    /// the model.
    pub tools: Option<RawTools>,
    /// How long the store keeps a session after its last activity.
    pub retention: Option<RawRetention>,
    /// Whether Magic Context manages the context window or leaves it to the host's own
    /// compaction.
    pub compaction: Option<RawCompaction>,
    /// Groups of projects that read each other's memories, by workspace name (letters,
    /// digits, `-`, `_`, `.`). Each member's prompt shows the other members' memories of the
    /// shared categories, marked with the project they come from, and its search finds them;
    /// only their own project edits them. User file only: a project file cannot join other
    /// projects' memories.
    pub workspaces: Option<BTreeMap<String, RawWorkspace>>,
    /// A PostgreSQL store the team shares project knowledge through (memories and their
    /// change log): what one person's agent learns, a colleague's agent sees on its next
    /// rebuild. Raw logs, tags and the ledger stay local. User file only: a project file
    /// cannot send the user's memories elsewhere.
    pub team_store: Option<RawTeamStore>,
}

/// The team store.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTeamStore {
    /// `postgres://USER:PASSWORD@HOST:PORT/DATABASE`. The password is never printed or
    /// logged (`config show` shows `<redacted>`). No TLS is built in: use a server on
    /// loopback or an SSH tunnel. Unset keeps project knowledge in the local store.
    pub url: Option<String>,
}

/// One workspace: its member projects and what they share.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawWorkspace {
    /// The member projects' root folders, absolute or from the home folder (`~/src/api`);
    /// at least two. Any folder inside a git repository names that repository.
    pub projects: Option<Vec<String>>,
    /// The memory categories the members share: PROJECT_RULES, ARCHITECTURE, CONSTRAINTS,
    /// CONFIG_VALUES, NAMING. Unset shares all five.
    pub categories: Option<Vec<String>>,
}

/// Whether Magic Context manages the context window or leaves it to the host's own
/// compaction.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCompaction {
    /// Manage the window: tag messages, drop what the agent no longer needs, summarise old
    /// history into the prompt's head. `false` keeps project memories, docs, notes, search
    /// and expand only, sends every message as the client sent it, and leaves the window to
    /// the host's own compaction (turn that back on in the host).
    pub enabled: Option<bool>,
}

/// How long the store keeps a session after its last activity.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRetention {
    /// Days a session is kept after its last request; older ones (their raw messages,
    /// compartments, ledger rows and vectors; project memories stay) are removed by
    /// `magic-context prune` and by `serve` once a day.
    #[schemars(range(min = RetentionConfig::SESSION_DAYS.min, max = RetentionConfig::SESSION_DAYS.max))]
    pub session_days: Option<u64>,
}

/// The local HTTP proxy (`magic-context serve`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawProxy {
    /// `host:port` to listen on (IPv6 hosts in brackets). Loopback by default: the proxy sees
    /// API keys and whole conversations.
    pub listen: Option<String>,
    /// Base URL of the Anthropic API that requests are forwarded to.
    pub upstream_anthropic: Option<String>,
    /// Base URL of the OpenAI API that requests are forwarded to.
    pub upstream_openai: Option<String>,
    /// Largest client request body accepted, in bytes (Anthropic rejects bodies over 32 MB).
    #[schemars(range(min = ProxyConfig::MAX_REQUEST_BYTES.min, max = ProxyConfig::MAX_REQUEST_BYTES.max))]
    pub max_request_bytes: Option<u64>,
    /// Memory the per-session caches may hold together, in MiB (rebuilt from the store on
    /// a miss: a smaller budget costs time, never data).
    #[schemars(range(min = ProxyConfig::CACHE_BUDGET_MB.min, max = ProxyConfig::CACHE_BUDGET_MB.max))]
    pub cache_budget_mb: Option<u64>,
    /// Host names, besides `localhost` and IP addresses, that requests may be addressed to
    /// (`Host`), and that browser pages may come from (`Origin`; otherwise only loopback
    /// pages may): for a proxy behind your own gateway. Any other is refused with 403.
    pub allowed_hosts: Option<Vec<String>>,
}

/// How the agent tools reach the model.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTools {
    /// Who offers the tools: `auto` (Claude Code, Codex, and clients whose tools show our MCP
    /// server, through `magic-context mcp`; every other client through the proxy), `mcp` (the
    /// MCP server only), `proxy` (the proxy adds them to each request and runs the calls
    /// itself) or `off`.
    pub mode: Option<RawToolsMode>,
    /// Days an exchange the proxy ran for its own tools (calls the client never saw, put
    /// back into later requests) is kept after a request last used it; older ones are
    /// deleted when the proxy stores a new one.
    #[schemars(range(min = ToolsConfig::HIDDEN_EXCHANGE_MAX_AGE_DAYS.min, max = ToolsConfig::HIDDEN_EXCHANGE_MAX_AGE_DAYS.max))]
    pub hidden_exchange_max_age_days: Option<u64>,
}

/// Who offers the agent tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RawToolsMode {
    /// `mcp` for Claude Code, Codex and clients whose tool list already shows our MCP
    /// server, `proxy` for every other client.
    Auto,
    /// The MCP server offers them; the proxy adds nothing.
    Mcp,
    /// The proxy adds them to each request and runs the calls itself.
    Proxy,
    /// The proxy adds nothing.
    Off,
}

/// A prompt cache lifetime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
pub enum RawCacheTtl {
    /// 5 minutes, refreshed on each hit (Anthropic's default).
    #[serde(rename = "5m")]
    FiveMinutes,
    /// 1 hour, refreshed on each hit (Anthropic's extended cache).
    #[serde(rename = "1h")]
    OneHour,
    /// Never expires on its own: idle time alone never permits a cache rewrite.
    #[serde(rename = "never")]
    Never,
}

/// What is assumed about the provider's prompt cache lifetime.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCache {
    /// Cache lifetime assumed for every model without an override.
    pub ttl: Option<RawCacheTtl>,
    /// Cache lifetime per model id or id prefix (the longest matching prefix wins), e.g.
    /// `{"claude-opus-4": "1h"}`.
    pub ttl_by_model: Option<BTreeMap<String, RawCacheTtl>>,
}

/// Usage levels that decide when a pass may rewrite the cached prompt.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPass {
    /// Percent of the usable window at or above which queued work may rewrite the cache. The
    /// force band, where queued work applies regardless, starts at max(85, this + 2).
    #[schemars(range(min = PassConfig::EXECUTE_THRESHOLD_PERCENT.min, max = PassConfig::EXECUTE_THRESHOLD_PERCENT.max))]
    pub execute_threshold_percent: Option<u64>,
    /// Execute threshold per model id or id prefix (the longest matching prefix wins), e.g.
    /// `{"gpt-5": {"tokens": 150000}}`.
    pub execute_threshold_by_model: Option<BTreeMap<String, RawExecuteThreshold>>,
    /// Percent of the usable window (and of a provider-proven limit) at which any work that
    /// frees tokens lands, paying or not. A request is refused only when even its minimal
    /// rendering is over the limit.
    #[schemars(range(min = PassConfig::REFUSAL_PERCENT.min, max = PassConfig::REFUSAL_PERCENT.max))]
    pub refusal_percent: Option<u64>,
    /// Plan against at most this many tokens, whatever the model's window: a smaller,
    /// cheaper working set.
    #[schemars(range(min = PassConfig::WORKING_SET_TOKENS.min, max = PassConfig::WORKING_SET_TOKENS.max))]
    pub working_set_tokens: Option<u64>,
    /// Bust below the execute threshold when what the bust removes, re-read as many more
    /// turns as the cycle since the last bust lasted (at most this many), outweighs rewriting
    /// the prefix (0 turns it off).
    #[schemars(range(min = PassConfig::WORKING_SET_HORIZON_TURNS.min, max = PassConfig::WORKING_SET_HORIZON_TURNS.max))]
    pub working_set_horizon_turns: Option<u64>,
}

/// One model's execute threshold: set `percent` or `tokens` (`tokens` wins when both are set).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawExecuteThreshold {
    /// Percent of the usable window.
    #[schemars(range(min = PassConfig::EXECUTE_THRESHOLD_PERCENT.min, max = PassConfig::EXECUTE_THRESHOLD_PERCENT.max))]
    pub percent: Option<u64>,
    /// Absolute usage in tokens.
    #[schemars(range(min = PassConfig::EXECUTE_THRESHOLD_TOKENS.min, max = PassConfig::EXECUTE_THRESHOLD_TOKENS.max))]
    pub tokens: Option<u64>,
}

/// Queued drops, tool-result skeletons and nudges.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawReduction {
    /// The newest this many tags are protected from drops until they age out.
    #[schemars(range(min = ReductionConfig::PROTECTED_TAGS.min, max = ReductionConfig::PROTECTED_TAGS.max))]
    pub protected_tags: Option<u64>,
    /// The newest this many dropped tool results keep their call as a skeleton; older ones
    /// are removed whole.
    #[schemars(range(min = ReductionConfig::DROP_SKELETONS.min, max = ReductionConfig::DROP_SKELETONS.max))]
    pub drop_skeletons: Option<u64>,
    /// Remind the model to reduce when context grows.
    pub nudges: Option<bool>,
}

/// How much of the window summarised history may take, and when `m[1]` folds into `m[0]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHistory {
    /// Percent of the usable window that rendered compartment history may fill.
    #[schemars(range(min = HistoryConfig::BUDGET_PERCENT.min, max = HistoryConfig::BUDGET_PERCENT.max))]
    pub budget_percent: Option<u64>,
    /// History budget in tokens when the model's window is unknown.
    #[schemars(range(min = HistoryConfig::BUDGET_TOKENS_UNKNOWN_WINDOW.min, max = HistoryConfig::BUDGET_TOKENS_UNKNOWN_WINDOW.max))]
    pub budget_tokens_unknown_window: Option<u64>,
    /// When a large `m[1]` is folded into `m[0]` on the next cache rewrite.
    pub m1_refold: Option<RawM1Refold>,
}

/// When a large `m[1]` is folded into `m[0]`: any one limit passed is enough.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawM1Refold {
    /// Fold when `m[1]` is over this percent of the history budget.
    #[schemars(range(min = M1RefoldConfig::PERCENT.min, max = M1RefoldConfig::PERCENT.max))]
    pub history_budget_percent: Option<u64>,
    /// Fold when `m[1]` is over this percent of `m[0]` (once `m[0]` reaches `m0_min_tokens`).
    #[schemars(range(min = M1RefoldConfig::PERCENT.min, max = M1RefoldConfig::PERCENT.max))]
    pub m0_percent: Option<u64>,
    /// Tokens `m[0]` must reach before `m0_percent` applies.
    #[schemars(range(min = M1RefoldConfig::M0_MIN_TOKENS.min, max = M1RefoldConfig::M0_MIN_TOKENS.max))]
    pub m0_min_tokens: Option<u64>,
    /// Fold when `m[1]` lists more memory updates than this.
    #[schemars(range(min = M1RefoldConfig::MAX_MEMORY_UPDATES.min, max = M1RefoldConfig::MAX_MEMORY_UPDATES.max))]
    pub max_memory_updates: Option<u64>,
}

/// Project memories injected into the prompt.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMemory {
    /// Most tokens of project memories rendered into the prompt (0 turns injection off).
    #[schemars(range(min = MemoryConfig::INJECTION_BUDGET_TOKENS.min, max = MemoryConfig::INJECTION_BUDGET_TOKENS.max))]
    pub injection_budget_tokens: Option<u64>,
}

/// The project's own docs in the prompt's head (`m[0]`), read from its root folder. An
/// edit reaches the prompt at the next natural rebuild of the head, never busting the cache
/// by itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawProjectDocs {
    /// Whether the head carries the docs.
    pub enabled: Option<bool>,
    /// File names relative to the project's root folder, shown in name order.
    #[schemars(length(max = ProjectDocsConfig::MAX_FILES))]
    pub files: Option<Vec<String>>,
    /// Share of the usable window the docs may take; a longer doc is cut at a heading.
    #[schemars(range(min = ProjectDocsConfig::BUDGET_PERCENT.min, max = ProjectDocsConfig::BUDGET_PERCENT.max))]
    pub budget_percent: Option<u64>,
}

/// Recalling original transcript with `ctx_expand`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawExpand {
    /// Most tokens one expand call returns.
    #[schemars(range(min = ExpandConfig::CAP_TOKENS.min, max = ExpandConfig::CAP_TOKENS.max))]
    pub cap_tokens: Option<u64>,
}

/// The background historian that summarises old history into compartments.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHistorian {
    /// Run the historian.
    pub enabled: Option<bool>,
    /// Model used for summarising; unset uses the session's provider with its small model.
    pub model: Option<String>,
    /// Models tried in order when the primary one fails.
    pub fallback_models: Option<Vec<String>>,
    /// Base URL the historian's models are asked at (e.g. `http://127.0.0.1:11434/v1` for
    /// Ollama); unset uses the session's own upstream and credentials.
    pub endpoint: Option<String>,
    /// The wire `endpoint` speaks: `anthropic`, `openai` (Chat Completions) or
    /// `openai-responses` (the Responses API); unset, `openai` with an endpoint. Without an
    /// endpoint it is not read: the session's own wire is used.
    #[schemars(regex(pattern = "^(anthropic|openai|openai-responses)$"))]
    pub wire: Option<String>,
    /// Name of the environment variable holding the endpoint's API key (never the key).
    pub api_key_env: Option<String>,
    /// Unsummarised-tail size that triggers a run, as a percent of the usable window (the
    /// result is clamped to 5,000–50,000 tokens).
    #[schemars(range(min = HistorianConfig::TRIGGER_BUDGET_PERCENT.min, max = HistorianConfig::TRIGGER_BUDGET_PERCENT.max))]
    pub trigger_budget_percent: Option<u64>,
    /// The newest tags that stay raw, never summarised.
    #[schemars(range(min = HistorianConfig::LIVE_TAIL_TAGS.min, max = HistorianConfig::LIVE_TAIL_TAGS.max))]
    pub live_tail_tags: Option<u64>,
    /// The most the live tail keeps raw, as a percent of the usable window.
    #[schemars(range(min = HistorianConfig::LIVE_TAIL_PERCENT.min, max = HistorianConfig::LIVE_TAIL_PERCENT.max))]
    pub live_tail_percent: Option<u64>,
    /// Usage of the usable window (percent) below which the historian does not run.
    #[schemars(range(min = HistorianConfig::START_USAGE_PERCENT.min, max = HistorianConfig::START_USAGE_PERCENT.max))]
    pub start_usage_percent: Option<u64>,
    /// Drop a chunk's last compartment when it ends within this many ordinals of the chunk end.
    #[schemars(range(min = HistorianConfig::LOOKAHEAD_ORDINALS.min, max = HistorianConfig::LOOKAHEAD_ORDINALS.max))]
    pub lookahead_ordinals: Option<u64>,
}

/// Embedding similarity in search.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawEmbeddings {
    /// Add embedding similarity to full-text search.
    pub enabled: Option<bool>,
    /// Vector size of the embedding model.
    #[schemars(range(min = EmbeddingsConfig::DIMENSIONS.min, max = EmbeddingsConfig::DIMENSIONS.max))]
    pub dimensions: Option<u64>,
    /// Who computes vectors: `local` (all-MiniLM-L6-v2 in-process) or `openai-compatible`.
    #[schemars(regex(pattern = "^(local|openai-compatible)$"))]
    pub provider: Option<String>,
    /// The local model's directory (`model.safetensors`, `tokenizer.json`, `config.json`);
    /// unset uses `models/all-MiniLM-L6-v2` in the data directory.
    pub model_dir: Option<String>,
    /// Base URL of an OpenAI-compatible embeddings server (`openai-compatible`).
    pub endpoint: Option<String>,
    /// The embedding model name sent to `endpoint`.
    pub model: Option<String>,
    /// Name of the environment variable holding the endpoint's API key (never the key).
    pub api_key_env: Option<String>,
}

/// The background dreamer that maintains memories, docs and notes on cron schedules.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawDreamer {
    /// Run the dreamer.
    pub enabled: Option<bool>,
    /// When each task runs.
    pub schedules: Option<RawDreamerSchedules>,
    /// Times a user observation must be seen before it joins the user profile.
    #[schemars(range(min = DreamerConfig::USER_PROFILE_PROMOTION_SIGHTINGS.min, max = DreamerConfig::USER_PROFILE_PROMOTION_SIGHTINGS.max))]
    pub user_profile_promotion_sightings: Option<u64>,
    /// Days an active memory may go unused (not returned by a search, not stated again, not
    /// changed) before `archive_stale_memories` archives it.
    #[schemars(range(min = DreamerConfig::ARCHIVE_AFTER_DAYS.min, max = DreamerConfig::ARCHIVE_AFTER_DAYS.max))]
    pub archive_after_days: Option<u64>,
    /// Characters over which `rewrite_verbose_memories` asks the model for a shorter text
    /// of an active memory.
    #[schemars(range(min = DreamerConfig::REWRITE_OVER_CHARS.min, max = DreamerConfig::REWRITE_OVER_CHARS.max))]
    pub rewrite_over_chars: Option<u64>,
    /// Most model calls (steps) one run's agent loop makes while it looks at the project's
    /// code.
    #[schemars(range(min = DreamerConfig::AGENT_MAX_STEPS.min, max = DreamerConfig::AGENT_MAX_STEPS.max))]
    pub agent_max_steps: Option<u64>,
    /// Most tokens (input and output) one run's agent loop spends.
    #[schemars(range(min = DreamerConfig::AGENT_TOKEN_BUDGET.min, max = DreamerConfig::AGENT_TOKEN_BUDGET.max))]
    pub agent_token_budget: Option<u64>,
    /// Most seconds one run's agent loop takes.
    #[schemars(range(min = DreamerConfig::AGENT_MAX_SECONDS.min, max = DreamerConfig::AGENT_MAX_SECONDS.max))]
    pub agent_max_seconds: Option<u64>,
    /// Stop a task after this many consecutive failures with the same error.
    #[schemars(range(min = DreamerConfig::STOP_AFTER_IDENTICAL_FAILURES.min, max = DreamerConfig::STOP_AFTER_IDENTICAL_FAILURES.max))]
    pub stop_after_identical_failures: Option<u64>,
    /// Most files `pin_key_files` pins in `m[0]` (0 pins none).
    #[schemars(range(min = DreamerConfig::PIN_KEY_FILES_MAX_FILES.min, max = DreamerConfig::PIN_KEY_FILES_MAX_FILES.max))]
    pub pin_key_files_max_files: Option<u64>,
    /// Tokens the pinned files may take in `m[0]`, all of them together.
    #[schemars(range(min = DreamerConfig::PIN_KEY_FILES_BUDGET_TOKENS.min, max = DreamerConfig::PIN_KEY_FILES_BUDGET_TOKENS.max))]
    pub pin_key_files_budget_tokens: Option<u64>,
    /// Reads in the last 30 days before `pin_key_files` pins a file.
    #[schemars(range(min = DreamerConfig::PIN_KEY_FILES_MIN_READS.min, max = DreamerConfig::PIN_KEY_FILES_MIN_READS.max))]
    pub pin_key_files_min_reads: Option<u64>,
}

/// When each dreamer task runs: a 5-field cron expression (minute hour day-of-month month
/// day-of-week) read in UTC, or `"off"`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawDreamerSchedules {
    /// Merge and deduplicate project memories.
    pub consolidate_memories: Option<String>,
    /// Check memories against the current code.
    pub verify_memories: Option<String>,
    /// Archive memories nothing has used for a long time.
    pub archive_stale_memories: Option<String>,
    /// Rewrite verbose memories more tersely.
    pub rewrite_verbose_memories: Option<String>,
    /// Maintain the project's ARCHITECTURE.md and STRUCTURE.md.
    pub maintain_docs: Option<String>,
    /// Evaluate smart notes' conditions and surface the ones that came true.
    pub evaluate_smart_notes: Option<String>,
    /// Promote recurring user observations to the user profile.
    pub promote_user_profile: Option<String>,
    /// Pin the files the agent re-reads most.
    pub pin_key_files: Option<String>,
}
