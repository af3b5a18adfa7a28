//! A simulated provider whose tokenizer counts differently from the client's estimate.
//!
//! The engine estimates prompt sizes with o200k and learns a correction from the usage the
//! provider reports. With the simulator counting exactly as the estimate does, that learning
//! is never exercised; a scale (1.25 = the provider counts 25% more) makes the reported usage
//! disagree with the estimate in a known way, so a test can check that the engine follows
//! the reported figure. Only the provider's counting is scaled: whoever drives it keeps
//! estimating with the unscaled counter, as a real client cannot see the provider's tokenizer.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::calibration::Calibration;
use crate::error::InvalidTokenScale;

/// How many tokens the provider counts per token of its calibrated count; finite and above 0.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize)]
#[serde(transparent)]
pub struct TokenScale(f64);

impl TokenScale {
    /// The provider counts as calibrated: no change.
    pub const ONE: Self = Self(1.0);

    /// `factor`, if it is finite and above 0 (a count of 0 or less, or NaN, means nothing).
    pub fn new(factor: f64) -> Result<Self, InvalidTokenScale> {
        if factor.is_finite() && factor > 0.0 {
            Ok(Self(factor))
        } else {
            Err(InvalidTokenScale {
                given: factor.to_string(),
            })
        }
    }

    /// The factor.
    pub fn get(self) -> f64 {
        self.0
    }

    /// `calibration` with every count it produces multiplied by this scale: the per-token
    /// scale exactly, the template tokens rounded to the nearest token.
    pub fn apply(self, calibration: Calibration) -> Calibration {
        let template = |tokens: u64| (tokens as f64 * self.0).round() as u64;
        Calibration {
            scale: calibration.scale * self.0,
            per_tool_tokens: template(calibration.per_tool_tokens),
            per_message_tokens: template(calibration.per_message_tokens),
            per_request_tokens: template(calibration.per_request_tokens),
        }
    }
}

impl Default for TokenScale {
    fn default() -> Self {
        Self::ONE
    }
}

/// Never NaN (checked at construction), so equality is total.
impl Eq for TokenScale {}

impl fmt::Display for TokenScale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Parses a command-line factor (`1.25`).
impl FromStr for TokenScale {
    type Err = InvalidTokenScale;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || InvalidTokenScale {
            given: text.to_owned(),
        };
        let factor: f64 = text.trim().parse().map_err(|_| invalid())?;
        Self::new(factor).map_err(|_| invalid())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_finite_positive_factors_only() {
        assert_eq!("1.25".parse::<TokenScale>().map(TokenScale::get), Ok(1.25));
        assert_eq!(TokenScale::new(0.8).map(TokenScale::get), Ok(0.8));
        for bad in ["0", "-1", "NaN", "inf", "-inf", "", "x1.2"] {
            let error = bad.parse::<TokenScale>().unwrap_err();
            assert_eq!(
                error.to_string(),
                format!(
                    "the token scale must be a finite number above 0, such as 1.25; got `{bad}`"
                )
            );
        }
        assert!(TokenScale::new(f64::NAN).is_err());
        assert_eq!(TokenScale::default(), TokenScale::ONE);
        assert_eq!(TokenScale::ONE.to_string(), "1");
    }

    #[test]
    fn multiplies_every_calibrated_count() {
        let scale = TokenScale::new(1.25).unwrap();
        let claude = scale.apply(Calibration::CLAUDE);
        // A 1,000-token block: 1,064 calibrated, 1,330 scaled; a tool's 54 template tokens
        // become 68 (67.5 rounded).
        assert_eq!(claude.block_tokens(1_000, false), 1_330);
        assert_eq!(claude.block_tokens(0, true), 68);
        let openai = scale.apply(Calibration::OPENAI);
        assert_eq!(
            (openai.per_message_tokens, openai.per_request_tokens),
            (4, 4)
        );
        assert_eq!(
            TokenScale::ONE.apply(Calibration::CLAUDE),
            Calibration::CLAUDE
        );
    }
}
