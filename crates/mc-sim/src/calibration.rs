//! From o200k counts to each provider's own token counts.
//!
//! Claude's and Gemini's tokenizers are not public, so the simulator counts with o200k_base
//! and corrects the count with a linear model fitted on usage the providers reported. Of the
//! models that met the error target, the simplest with a reason behind each term was kept.
//!
//! # Claude (fitted 2026-11-30 on `shared/data/anthropic-capture`, 17 Sonnet 4 calls)
//!
//! `claude_tokens ≈ 1.064 · o200k(block JSON) + 54 per tool definition`
//! ([`Calibration::CLAUDE`]), each block counted over its canonical JSON as
//! [`crate::linearise_with`] sees it. The per-tool term is the template Anthropic wraps tool
//! definitions in (its documented tool-use system prompt plus per-tool markup): without it,
//! tools came out 17% short and message blocks 6%. Least squares of relative error on the
//! recorded `cache_read + cache_creation` per call; error of the simulated cached prefix, in
//! call order: −0.5, −0.5, −0.4, −0.5, −0.5, −0.6, −0.6, −0.5, −0.4, −0.4, −0.3, −0.3, −0.3,
//! −1.6 (the compaction call, 1 tool), +2.4, +2.4, +2.4 % (the calls after compaction, whose
//! history is one block of code-heavy text); tools + system 13,536 vs 13,515 recorded. Every
//! call's read and write are within 2.4% of its recorded total (the issue asks 5%); uncalibrated
//! o200k was 7.7–12.2% low. Simpler and other fits, for the record: one scale (1.1146) gave
//! −2.2..+2.9% on the prefix but a write 4.2% off on call 14; one scale on the raw text plus 37
//! per block fitted the totals to 0.7% yet overcounted small message blocks 2–5x, so it was
//! dropped. One session is little data: treat ±3% as the measured error, not a guarantee.
//!
//! # Gemini 3 Pro (measured on `shared/data/swe-trajectories`, 54 runs, 3,778 calls)
//!
//! A request's count is the sum over its messages of o200k over the message's text, times
//! [`Calibration::GEMINI`]'s scale, 1.173 (least squares of relative error against the recorded
//! `prompt_tokens`). The error is −9.6%/+8.7% at worst, mean |error| 2.85%, 1st/99th percentile
//! −6.9%/+7.0%: Gemini counts 8–30% more than o200k depending on the content (digit-heavy lint
//! output high, sympy code low), while within one run the ratio holds within about ±3%. A
//! per-message overhead did not help (best fit −4 tokens per message, worse worst case), nor
//! did cl100k, nor did character-class terms (digits, punctuation, whitespace) short of
//! five-term fits. So Gemini figures carry a ±10% tokenizer error, pinned by
//! `tests/it/calibration.rs`. (OpenRouter's two Gemini backends differ by ~0.5% on the same
//! prompt, within that.)
//!
//! # OpenAI (not measured here: no OpenAI recordings in the shared data)
//!
//! o200k is gpt-4o's and gpt-5's own tokenizer; [`Calibration::OPENAI`] adds the chat
//! template's 3 tokens per message and 3 for the reply's priming, as OpenAI's cookbook counts
//! them (`num_tokens_from_messages`).

use mc_core::models::{Wire, normalise};

/// A linear correction from o200k counts to a provider's count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    /// Multiplies every o200k count (per block or per message, rounded to the nearest token).
    pub scale: f64,
    /// Template tokens added per Anthropic tool definition.
    pub per_tool_tokens: u64,
    /// Template tokens added per chat message (role markers).
    pub per_message_tokens: u64,
    /// Template tokens added once per chat request (the reply's priming).
    pub per_request_tokens: u64,
}

impl Calibration {
    /// Claude (every family shares one tokenizer up to 4.6): see the module docs.
    pub const CLAUDE: Self = Self {
        scale: 1.064,
        per_tool_tokens: 54,
        per_message_tokens: 0,
        per_request_tokens: 0,
    };

    /// Gemini 3 Pro, as reported through OpenRouter: see the module docs.
    pub const GEMINI: Self = Self {
        scale: 1.173,
        per_tool_tokens: 0,
        per_message_tokens: 0,
        per_request_tokens: 0,
    };

    /// OpenAI's gpt-4o/4.1/5 families: o200k itself plus the chat template.
    pub const OPENAI: Self = Self {
        scale: 1.0,
        per_tool_tokens: 0,
        per_message_tokens: 3,
        per_request_tokens: 3,
    };

    /// No correction: raw o200k counts.
    pub const IDENTITY: Self = Self {
        scale: 1.0,
        per_tool_tokens: 0,
        per_message_tokens: 0,
        per_request_tokens: 0,
    };

    /// The correction for `model` called over `wire`: by the name's family (`claude`,
    /// `gemini`, `gpt`/o-series), else by the wire (an unknown model on the Anthropic wire is
    /// taken for Claude, on the OpenAI wire for an OpenAI model).
    pub fn for_model(model: &str, wire: Wire) -> Self {
        let name = normalise(model);
        let is_openai = ["gpt-", "o1", "o3", "o4-", "codex"]
            .iter()
            .any(|fragment| name.contains(fragment));
        if name.contains("claude") {
            Self::CLAUDE
        } else if name.contains("gemini") {
            Self::GEMINI
        } else if is_openai {
            Self::OPENAI
        } else {
            match wire {
                Wire::Anthropic => Self::CLAUDE,
                Wire::OpenAi => Self::OPENAI,
            }
        }
    }

    /// `raw` o200k tokens as the provider would count them (without template tokens).
    pub fn scale_tokens(&self, raw: u64) -> u64 {
        // Counts stay far below 2^53, so the round trip through f64 is exact before scaling.
        (raw as f64 * self.scale).round() as u64
    }

    /// An Anthropic block of `raw` o200k tokens, with its template tokens when it is a tool
    /// definition.
    pub fn block_tokens(&self, raw: u64, is_tool: bool) -> u64 {
        let template = if is_tool { self.per_tool_tokens } else { 0 };
        self.scale_tokens(raw).saturating_add(template)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_rounds_and_adds_tool_templates() {
        let claude = Calibration::CLAUDE;
        // 1,000 × 1.064 = 1,064; 10 × 1.064 = 10.64 → 11; a tool gets 54 more.
        let counts = [
            claude.block_tokens(1_000, false),
            claude.block_tokens(10, false),
            claude.block_tokens(0, false),
            claude.block_tokens(1_000, true),
        ];
        assert_eq!(counts, [1_064, 11, 0, 1_118]);
        assert_eq!(Calibration::GEMINI.scale_tokens(1_000), 1_173);
        assert_eq!(Calibration::IDENTITY.block_tokens(7, true), 7);
    }

    #[test]
    fn picks_by_family_then_wire() {
        let cases = [
            (
                "claude-sonnet-4-20250514",
                Wire::OpenAi,
                Calibration::CLAUDE,
            ),
            (
                "anthropic/claude-opus-4.5",
                Wire::OpenAi,
                Calibration::CLAUDE,
            ),
            (
                "google/gemini-3-pro-preview",
                Wire::OpenAi,
                Calibration::GEMINI,
            ),
            ("gpt-4o", Wire::Anthropic, Calibration::OPENAI),
            ("o3-mini", Wire::OpenAi, Calibration::OPENAI),
            ("mystery", Wire::Anthropic, Calibration::CLAUDE),
            ("mystery", Wire::OpenAi, Calibration::OPENAI),
        ];
        for (model, wire, expected) in cases {
            assert_eq!(Calibration::for_model(model, wire), expected, "{model}");
        }
    }
}
