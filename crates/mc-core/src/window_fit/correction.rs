//! The learned ratio between the provider's token counts and our estimate.
//!
//! Our estimate is o200k scaled per model family; real tokenizers differ by 10–35% between
//! families and versions, and an estimate low by 25% plans every request 25% over. Every
//! response reports what the provider counted for the exact bytes it got (input, cache read
//! and cache write), and every overflow error states its count: each is one observation of
//! `provider / estimate` for the model. The first observation is taken as is; later ones
//! move the ratio a fifth of the way (an exponential average, so one odd request cannot swing
//! it), and the ratio stays within [`TokenCorrection::MIN_PERMILLE`] and
//! [`TokenCorrection::MAX_PERMILLE`]. It is kept in permille so it persists and compares
//! exactly.

use serde::{Deserialize, Serialize};

/// A model's correction: provider tokens per thousand estimated tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenCorrection {
    /// Provider tokens per 1,000 estimated tokens.
    pub permille: u32,
    /// Observations folded in (saturating).
    pub samples: u32,
}

impl Default for TokenCorrection {
    fn default() -> Self {
        Self {
            permille: 1_000,
            samples: 0,
        }
    }
}

impl TokenCorrection {
    /// The lowest ratio accepted: a provider counting under half our estimate is a mismatched
    /// observation, not a tokenizer.
    pub const MIN_PERMILLE: u32 = 500;
    /// The highest ratio accepted.
    pub const MAX_PERMILLE: u32 = 2_500;
    /// Estimates below this many tokens say too little about a tokenizer to learn from.
    pub const MIN_OBSERVED_TOKENS: u64 = 1_000;
    /// Each observation after the first moves the ratio by 1 / this.
    const SMOOTHING: u64 = 5;

    /// The correction after the provider counted `provider` tokens for a request we estimated
    /// at `estimate`. Observations too small to mean anything leave it unchanged.
    #[must_use]
    pub fn observe(self, estimate: u64, provider: u64) -> Self {
        if estimate < Self::MIN_OBSERVED_TOKENS || provider == 0 {
            return self;
        }
        let observed = (u128::from(provider) * 1_000 / u128::from(estimate)).clamp(
            u128::from(Self::MIN_PERMILLE),
            u128::from(Self::MAX_PERMILLE),
        );
        let observed = u64::try_from(observed).unwrap_or(u64::from(Self::MAX_PERMILLE));
        let permille = if self.samples == 0 {
            observed
        } else {
            let current = u64::from(self.permille);
            (current * (Self::SMOOTHING - 1) + observed + Self::SMOOTHING / 2) / Self::SMOOTHING
        };
        Self {
            permille: u32::try_from(permille).unwrap_or(Self::MAX_PERMILLE),
            samples: self.samples.saturating_add(1),
        }
    }

    /// `estimate` in the provider's tokens.
    pub fn apply(self, estimate: u64) -> u64 {
        let scaled = u128::from(estimate) * u128::from(self.permille) / 1_000;
        u64::try_from(scaled).unwrap_or(u64::MAX)
    }

    /// A limit in the provider's tokens as an estimate: what we may estimate and still fit.
    pub fn unapply(self, provider_tokens: u64) -> u64 {
        let scaled = u128::from(provider_tokens) * 1_000 / u128::from(self.permille.max(1));
        u64::try_from(scaled).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_observation_is_taken_then_smoothed_and_bounded() {
        let learned = TokenCorrection::default().observe(10_000, 12_500);
        assert_eq!(learned.permille, 1_250);
        assert_eq!(learned.apply(20_000), 25_000);
        assert_eq!(learned.unapply(25_000), 20_000);
        let again = learned.observe(10_000, 10_000);
        assert_eq!(again.permille, 1_200);
        assert_eq!(again.samples, 2);
        assert_eq!(
            TokenCorrection::default().observe(10_000, 90_000).permille,
            2_500
        );
        assert_eq!(TokenCorrection::default().observe(10_000, 1).permille, 500);
        assert_eq!(
            TokenCorrection::default().observe(999, 5_000),
            TokenCorrection::default()
        );
    }

    #[test]
    fn a_steady_ratio_converges() {
        let mut correction = TokenCorrection::default().observe(10_000, 10_000);
        for _ in 0..40 {
            correction = correction.observe(8_000, 10_000);
        }
        assert!(
            (1_245..=1_250).contains(&correction.permille),
            "{correction:?}"
        );
    }
}
