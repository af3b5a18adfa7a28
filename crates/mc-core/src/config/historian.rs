//! When and with which model the historian summarises history (DESIGN §5 "Historian").

use serde::Serialize;

use super::units::{Bounds, Percent, Tokens};

/// The wire a configured historian endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum HistorianWire {
    /// Anthropic Messages.
    #[serde(rename = "anthropic")]
    Anthropic,
    /// OpenAI Chat Completions (also local OpenAI-compatible servers).
    #[serde(rename = "openai")]
    OpenAi,
    /// OpenAI Responses, for a backend that serves only that API (as Codex users have).
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
}

impl HistorianWire {
    /// The wire named `name` (`"anthropic"`, `"openai"`, `"openai-responses"`).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "anthropic" => Some(Self::Anthropic),
            "openai" => Some(Self::OpenAi),
            "openai-responses" => Some(Self::OpenAiResponses),
            _ => None,
        }
    }
}

/// The background historian.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HistorianConfig {
    /// Whether the historian runs. Without it history is never summarised, and only drops
    /// keep the session inside the window.
    pub enabled: bool,
    /// Model for summarising; `None` uses the session's own provider and credentials with
    /// that provider's small model.
    pub model: Option<String>,
    /// Models tried in order when the primary one fails.
    pub fallback_models: Vec<String>,
    /// Where the historian's models are asked; `None` uses the session's own upstream and
    /// credentials. Set it to run the historian on a local OpenAI-compatible server (Ollama,
    /// llama.cpp, LM Studio) or another provider.
    pub endpoint: Option<String>,
    /// The wire `endpoint` speaks: `"anthropic"`, `"openai"` (Chat Completions) or
    /// `"openai-responses"` (the Responses API). `None`: Chat Completions with an endpoint
    /// (what local servers speak, see [`Self::endpoint_wire`]); without an endpoint the wire is
    /// not read at all, since the historian then asks the session's upstream on the wire the
    /// session arrived on, so the default is no wire rather than one that would mislead.
    pub wire: Option<HistorianWire>,
    /// The environment variable holding `endpoint`'s API key (never the key itself: config
    /// files are not secret stores); unset sends no key, as local servers expect.
    pub api_key_env: Option<String>,
    /// Size of the unsummarised tail that triggers a run, as a percent of the usable window,
    /// clamped to [`Self::TRIGGER_BUDGET_CLAMP`]: large enough for meaningful compartments,
    /// small enough that one run stays cheap.
    pub trigger_budget_percent: Percent,
    /// The newest tags that stay raw, never summarised: the turns the model is working on.
    /// Fewer than the drop protection's 20: summarising is not dropping (the story stays,
    /// and the raw log keeps every byte), and on the shared swe trajectories keeping 10 tags
    /// raw instead of 20 cut the input-side cost by 6% at 200K and 12% at 64K. With indexes
    /// of 40 names (`range_index::MAX_NAMES` of the historian) the summarised ranges keep
    /// their names, and fewer raw tags cost less for the same references kept (controlled
    /// cost against autocompact / references kept, swe set at 200K and 64K): 10 tags 0.912 /
    /// 0.990 and 1.146 / 0.986; 8 tags 0.900 / 0.989 and 1.142 / 0.986; 6 tags 0.886 / 0.989
    /// and 1.136 / 0.985; 4 tags 0.872 / 0.988 and 1.129 / 0.985. 6 keeps about three tool
    /// exchanges raw, the model's work in hand, which a recorded replay cannot judge.
    pub live_tail_tags: u32,
    /// The most the live tail keeps raw, as a percent of the usable window: where tool
    /// outputs are large, ten tags can be a fifth of the window, and every bust rewrites
    /// them. Past it, older messages of the live tail may be summarised too. Chosen by
    /// replay: on the long generated session at 200K, 5% / 10% / 15% cost 0.93 / 1.01 /
    /// 1.09 times autocompact's input side; on the swe set at 64K, 5% was cheapest too.
    pub live_tail_percent: Percent,
    /// Usage of the usable window (percent, from the last response) below which the historian
    /// does not run at all: while the window has room, summarising history the model still
    /// reads is not free (a run costs its own call, and each publication a rewrite of the
    /// cached prefix once it lands), and a short session never needs it. 0 (the default)
    /// runs it from the start: waiting keeps more references but costs more wherever a session
    /// goes on. Replay (controlled cost against autocompact / references kept, at 0, 10, 20,
    /// 30, 40): swe set at 64K 1.136 / 0.985, 1.136 / 0.985, 1.144 / 0.986, 1.183 / 0.988,
    /// 1.241 / 0.993; at 200K 0.886 / 0.989, 0.905 / 0.990, 0.986 / 0.997, 1.003 / 0.999,
    /// 1.022 / 1.000; the 17-call capture at 64K 1.074 until 20, 1.050 from 30.
    pub start_usage_percent: Percent,
    /// The last compartment of a chunk is left open when it ends within this many ordinals
    /// of the chunk end, since nothing yet confirms its episode ended (unless the user's next
    /// message follows the chunk): published provisionally, and read again and replaced by
    /// the next run.
    pub lookahead_ordinals: u32,
}

impl HistorianConfig {
    /// Accepted [`Self::trigger_budget_percent`].
    pub const TRIGGER_BUDGET_PERCENT: Bounds = Bounds::percent(1, 50);
    /// The trigger budget in tokens always lies in this range (DESIGN §9: 5K to 50K).
    pub const TRIGGER_BUDGET_CLAMP: (Tokens, Tokens) = (Tokens(5_000), Tokens(50_000));
    /// Accepted [`Self::live_tail_percent`].
    pub const LIVE_TAIL_PERCENT: Bounds = Bounds::percent(1, 100);
    /// Accepted [`Self::live_tail_tags`].
    pub const LIVE_TAIL_TAGS: Bounds = Bounds::count(1, 1_000, "tags");
    /// Accepted [`Self::start_usage_percent`]: at most 60, so the historian still runs well
    /// before the default execute threshold (65%).
    pub const START_USAGE_PERCENT: Bounds = Bounds::percent(0, 60);
    /// Accepted [`Self::lookahead_ordinals`].
    pub const LOOKAHEAD_ORDINALS: Bounds = Bounds::count(0, 100, "ordinals");

    /// The wire a configured `endpoint` is asked on: `wire`, else Chat Completions.
    pub fn endpoint_wire(&self) -> HistorianWire {
        self.wire.unwrap_or(HistorianWire::OpenAi)
    }

    /// The unsummarised-tail size that triggers a run for a usable window of
    /// `usable_window` tokens.
    pub fn trigger_budget_tokens(&self, usable_window: Tokens) -> Tokens {
        let (low, high) = Self::TRIGGER_BUDGET_CLAMP;
        self.trigger_budget_percent
            .of(usable_window)
            .clamp(low, high)
    }
}

impl Default for HistorianConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            model: None,
            fallback_models: Vec::new(),
            endpoint: None,
            wire: None,
            api_key_env: None,
            trigger_budget_percent: Percent::saturating(5),
            live_tail_tags: 6,
            live_tail_percent: Percent::saturating(5),
            start_usage_percent: Percent::saturating(0),
            lookahead_ordinals: 2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigger_budget_is_clamped() {
        let config = HistorianConfig::default();
        assert_eq!(
            config.trigger_budget_tokens(Tokens(200_000)),
            Tokens(10_000)
        );
        assert_eq!(config.trigger_budget_tokens(Tokens(32_000)), Tokens(5_000));
        assert_eq!(
            config.trigger_budget_tokens(Tokens(2_000_000)),
            Tokens(50_000)
        );
    }
}
