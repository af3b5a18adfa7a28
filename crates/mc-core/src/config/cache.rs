//! What the engine assumes about the provider's prompt cache lifetime.

use std::collections::BTreeMap;

use serde::Serialize;

use super::model_match::override_for;
use super::units::CacheTtl;

/// Cache TTL assumptions (DESIGN §9: 5 minutes unless a model says otherwise).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CacheConfig {
    /// TTL assumed for every model without an override. 5 minutes is Anthropic's default
    /// ephemeral cache; assuming longer would bust an already-dead cache late, shorter would
    /// bust a live one early.
    pub ttl: CacheTtl,
    /// Per-model TTL, keyed by model id or id prefix (the longest matching prefix wins), for
    /// clients that ask for the 1-hour cache or models whose cache does not expire.
    pub ttl_by_model: BTreeMap<String, CacheTtl>,
}

impl CacheConfig {
    /// The TTL assumed for `model`.
    pub fn ttl_for(&self, model: &str) -> CacheTtl {
        override_for(&self.ttl_by_model, model)
            .copied()
            .unwrap_or(self.ttl)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_model_override() {
        let mut config = CacheConfig::default();
        config
            .ttl_by_model
            .insert("claude-opus-4".to_owned(), CacheTtl::OneHour);
        assert_eq!(config.ttl_for("claude-opus-4-5"), CacheTtl::OneHour);
        assert_eq!(config.ttl_for("claude-sonnet-4-5"), CacheTtl::FiveMinutes);
    }
}
