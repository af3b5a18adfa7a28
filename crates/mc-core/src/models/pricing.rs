//! List prices, and what one call costs at them.
//!
//! Every figure `replay` reports in dollars comes from here, so the prices are dated
//! ([`PRICES_AS_OF`]) and the arithmetic is one function ([`Price::cost_usd`]) that a test pins
//! to the cent.

use serde::{Deserialize, Serialize};

/// The date of the list prices in [`super::model_spec`]'s table.
///
/// Sources: Anthropic's pricing page (docs.claude.com, "Pricing": base input/output per model,
/// prompt-caching multipliers 1.25x for 5-minute writes, 2x for 1-hour writes, 0.1x for reads),
/// OpenAI's API pricing page (platform.openai.com/docs/pricing: input, cached input, output per
/// model) and Google's Gemini API pricing page (ai.google.dev/gemini-api/docs/pricing: the
/// ≤200K-token tier of Gemini 3 Pro Preview, context-cache reads at $0.20 per million, storage
/// not modelled). Standard tier, no batch discount. Prices change; update the table and this
/// date together.
pub const PRICES_AS_OF: &str = "2026-02-17";

/// One model's list price.
///
/// The cache figures are multipliers of `input_per_mtok`, as the vendors state them, so a
/// price change of the base rate carries over to cache reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Price {
    /// USD per million uncached input tokens.
    pub input_per_mtok: f64,
    /// USD per million output tokens.
    pub output_per_mtok: f64,
    /// Multiplier of the input price for tokens written with a 5-minute TTL: 1.25 on Anthropic;
    /// 1.0 where caching is automatic and writes cost nothing extra (OpenAI, Gemini).
    pub cache_write_5m: f64,
    /// Multiplier of the input price for tokens written with a 1-hour TTL: 2.0 on Anthropic.
    pub cache_write_1h: f64,
    /// Multiplier of the input price for tokens read from the cache: 0.1 on Anthropic, per
    /// model on OpenAI (0.5 for gpt-4o, 0.25 for gpt-4.1, 0.1 for gpt-5).
    pub cache_read: f64,
}

impl Price {
    /// Anthropic's price shape: `input`/`output` USD per million, writes 1.25x/2x, reads 0.1x.
    pub const fn anthropic(input_per_mtok: f64, output_per_mtok: f64) -> Self {
        Self {
            input_per_mtok,
            output_per_mtok,
            cache_write_5m: 1.25,
            cache_write_1h: 2.0,
            cache_read: 0.1,
        }
    }

    /// Automatic prefix caching (OpenAI, Gemini): writes cost plain input, reads `cache_read`x.
    pub const fn automatic(input_per_mtok: f64, output_per_mtok: f64, cache_read: f64) -> Self {
        Self {
            input_per_mtok,
            output_per_mtok,
            cache_write_5m: 1.0,
            cache_write_1h: 1.0,
            cache_read,
        }
    }

    /// What one call costs, in USD: uncached input, the two kinds of cache write, cache reads
    /// and output, each at its rate.
    pub fn cost_usd(
        &self,
        input: u64,
        write_5m: u64,
        write_1h: u64,
        read: u64,
        output: u64,
    ) -> f64 {
        // Token counts stay far below 2^53, so the conversions are exact.
        let input_rate = self.input_per_mtok;
        let input_cost = input as f64 * input_rate
            + write_5m as f64 * input_rate * self.cache_write_5m
            + write_1h as f64 * input_rate * self.cache_write_1h
            + read as f64 * input_rate * self.cache_read;
        (input_cost + output as f64 * self.output_per_mtok) / 1_000_000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cost in millionths of a dollar, so comparisons are exact integers.
    fn micro_usd(cost: f64) -> i64 {
        (cost * 1_000_000.0).round() as i64
    }

    #[test]
    fn anthropic_call_costs_each_part_at_its_rate() {
        let sonnet = Price::anthropic(3.0, 15.0);
        // 10,000 input at $3/M = $0.030; 20,000 5m writes at $3.75/M = $0.075;
        // 5,000 1h writes at $6/M = $0.030; 100,000 reads at $0.30/M = $0.030;
        // 2,000 output at $15/M = $0.030. Total $0.195.
        let cost = sonnet.cost_usd(10_000, 20_000, 5_000, 100_000, 2_000);
        assert_eq!(micro_usd(cost), 195_000);
        assert_eq!((cost * 100.0).round() as i64, 20, "20 cents, rounded");
    }

    #[test]
    fn automatic_caching_has_no_write_premium() {
        let gpt_4o = Price::automatic(2.5, 10.0, 0.5);
        // 1,000 input $0.0025 + 1,000 "written" at 1x $0.0025 + 2,048 cached at $1.25/M
        // $0.00256 + 100 output $0.001.
        let cost = gpt_4o.cost_usd(1_000, 1_000, 0, 2_048, 100);
        assert_eq!(micro_usd(cost), 8_560);
    }

    #[test]
    fn nothing_costs_nothing() {
        assert_eq!(Price::anthropic(5.0, 25.0).cost_usd(0, 0, 0, 0, 0), 0.0);
    }
}
