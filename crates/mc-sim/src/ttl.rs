//! Cache lifetimes, read off a block's `cache_control` marker.

use serde_json::Value;

/// How long a cache entry lives after its last write or hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Ttl {
    /// `{"type":"ephemeral"}` or `"ttl":"5m"`: the default.
    FiveMinutes,
    /// `"ttl":"1h"`: written at 2x instead of 1.25x.
    OneHour,
}

impl Ttl {
    /// The lifetime in milliseconds of the simulated clock.
    pub fn duration_ms(self) -> u64 {
        match self {
            Self::FiveMinutes => 5 * 60 * 1000,
            Self::OneHour => 60 * 60 * 1000,
        }
    }

    /// Reads a `cache_control` value.
    ///
    /// Any marker that is not `"ttl":"1h"` counts as 5 minutes: the provider would reject an
    /// unknown TTL or type, but the simulator models cache accounting, not schema validation.
    pub fn from_cache_control(marker: &Value) -> Self {
        match marker.get("ttl").and_then(Value::as_str) {
            Some("1h") => Self::OneHour,
            _ => Self::FiveMinutes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_ttls() {
        let five = serde_json::json!({"type": "ephemeral"});
        let explicit_five = serde_json::json!({"type": "ephemeral", "ttl": "5m"});
        let hour = serde_json::json!({"type": "ephemeral", "ttl": "1h"});
        assert_eq!(Ttl::from_cache_control(&five), Ttl::FiveMinutes);
        assert_eq!(Ttl::from_cache_control(&explicit_five), Ttl::FiveMinutes);
        assert_eq!(Ttl::from_cache_control(&hour), Ttl::OneHour);
    }
}
