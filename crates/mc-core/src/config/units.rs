//! Units that configured numbers carry, so a percent is never read as a token count.
//!
//! Each bounded setting names its [`Bounds`] once, as a constant beside its section; the
//! loader checks values against it and the JSON Schema advertises the same numbers, so the
//! editor, the schema and the check can never disagree.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A whole percentage, 0 to 100.
///
/// Whole numbers keep config files and `config show` output readable; no DESIGN default needs
/// a fraction of a percent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "u64", into = "u64")]
pub struct Percent(u8);

impl Percent {
    /// The largest percentage.
    pub const MAX: Self = Self(100);

    /// Checks that `value` is at most 100.
    pub fn new(value: u64) -> Result<Self, OutOfRange> {
        let bounds = Bounds::percent(0, 100);
        let checked = bounds.check(value)?;
        u8::try_from(checked)
            .map(Self)
            .map_err(|_| OutOfRange { value, bounds })
    }

    /// Builds a constant; values above 100 saturate, so a typo in a default cannot escape the
    /// type's range.
    pub(crate) const fn saturating(value: u8) -> Self {
        if value > 100 { Self(100) } else { Self(value) }
    }

    /// The number of percent.
    pub const fn get(self) -> u8 {
        self.0
    }

    /// This share of `whole`, rounded down: `15%.of(200_000) = 30_000`.
    pub const fn of(self, whole: Tokens) -> Tokens {
        Tokens(whole.0.saturating_mul(self.0 as u64) / 100)
    }
}

impl TryFrom<u64> for Percent {
    type Error = OutOfRange;

    fn try_from(value: u64) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl From<Percent> for u64 {
    fn from(percent: Percent) -> Self {
        u64::from(percent.0)
    }
}

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", self.0)
    }
}

/// A count of model tokens (as the provider's tokenizer counts them).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Tokens(pub u64);

impl Tokens {
    /// The number of tokens.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} tokens", self.0)
    }
}

/// How long the provider keeps a cached prompt prefix alive after its last hit.
///
/// The pass planner uses it to tell whether an idle session's cache is already gone, in which
/// case a bust costs nothing extra (DESIGN §5). Written `"5m"`, `"1h"` or `"never"` in config.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CacheTtl {
    /// Anthropic's default ephemeral cache: 5 minutes, refreshed on each hit.
    #[default]
    #[serde(rename = "5m")]
    FiveMinutes,
    /// Anthropic's extended cache (`"ttl": "1h"`), written at 2x instead of 1.25x.
    #[serde(rename = "1h")]
    OneHour,
    /// The cache never expires on its own (a local model, a provider with no TTL): idle time
    /// alone never permits a bust.
    #[serde(rename = "never")]
    Never,
}

impl CacheTtl {
    /// The TTL in milliseconds, or `None` when the cache does not expire.
    pub const fn duration_ms(self) -> Option<u64> {
        match self {
            Self::FiveMinutes => Some(5 * 60 * 1000),
            Self::OneHour => Some(60 * 60 * 1000),
            Self::Never => None,
        }
    }

    /// The config spelling: `"5m"`, `"1h"` or `"never"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::FiveMinutes => "5m",
            Self::OneHour => "1h",
            Self::Never => "never",
        }
    }
}

impl fmt::Display for CacheTtl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The inclusive range a configured number must fall in, with its unit for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Smallest accepted value.
    pub min: u64,
    /// Largest accepted value.
    pub max: u64,
    /// What the number counts, as a plural noun ("percent", "tokens", "bytes").
    pub unit: &'static str,
}

impl Bounds {
    /// A range of whole percentages.
    pub const fn percent(min: u64, max: u64) -> Self {
        Self {
            min,
            max,
            unit: "percent",
        }
    }

    /// A range of token counts.
    pub const fn tokens(min: u64, max: u64) -> Self {
        Self {
            min,
            max,
            unit: "tokens",
        }
    }

    /// A range of plain counts of `unit`.
    pub const fn count(min: u64, max: u64, unit: &'static str) -> Self {
        Self { min, max, unit }
    }

    /// Returns `value` when it lies inside the range.
    pub fn check(self, value: u64) -> Result<u64, OutOfRange> {
        if (self.min..=self.max).contains(&value) {
            Ok(value)
        } else {
            Err(OutOfRange {
                value,
                bounds: self,
            })
        }
    }
}

/// A configured number outside its [`Bounds`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutOfRange {
    /// The rejected value.
    pub value: u64,
    /// The range it had to fall in.
    pub bounds: Bounds,
}

impl fmt::Display for OutOfRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Bounds { min, max, unit } = self.bounds;
        write!(
            f,
            "must be between {min} and {max} {unit}, got {}",
            self.value
        )
    }
}

impl std::error::Error for OutOfRange {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_is_bounded_and_scales_tokens() {
        assert_eq!(Percent::new(65).unwrap().get(), 65);
        assert_eq!(
            Percent::new(101).unwrap_err().to_string(),
            "must be between 0 and 100 percent, got 101"
        );
        assert_eq!(Percent::saturating(250), Percent::MAX);
        assert_eq!(
            Percent::new(15).unwrap().of(Tokens(200_000)),
            Tokens(30_000)
        );
        assert_eq!(
            serde_json::to_string(&Percent::new(7).unwrap()).unwrap(),
            "7"
        );
        assert!(serde_json::from_str::<Percent>("120").is_err());
    }

    #[test]
    fn cache_ttl_uses_config_spelling() {
        let all = [CacheTtl::FiveMinutes, CacheTtl::OneHour, CacheTtl::Never];
        let json = serde_json::to_string(&all).unwrap();
        assert_eq!(json, r#"["5m","1h","never"]"#);
        for ttl in all {
            assert_eq!(serde_json::to_value(ttl).unwrap(), ttl.as_str());
        }
        assert_eq!(CacheTtl::FiveMinutes.duration_ms(), Some(300_000));
        assert_eq!(CacheTtl::Never.duration_ms(), None);
    }

    #[test]
    fn bounds_name_their_unit() {
        let bounds = Bounds::tokens(1_000, 2_000);
        assert_eq!(bounds.check(1_500), Ok(1_500));
        let err = bounds.check(10).unwrap_err();
        assert_eq!(
            err.to_string(),
            "must be between 1000 and 2000 tokens, got 10"
        );
    }
}
