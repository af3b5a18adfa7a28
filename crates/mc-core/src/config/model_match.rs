//! How a per-model override finds the model a request names.
//!
//! Providers append dates and variants to model ids (`claude-sonnet-4-5-20250929`), and
//! users write the family (`claude-sonnet-4-5`). An exact key wins; otherwise the longest key
//! that is a prefix of the model id applies, so the most specific entry always decides and
//! the outcome never depends on map order.

use std::collections::BTreeMap;

/// The override in `overrides` that applies to `model`: the exact key, else the longest key
/// the model id starts with.
pub fn override_for<'a, T>(overrides: &'a BTreeMap<String, T>, model: &str) -> Option<&'a T> {
    if let Some(exact) = overrides.get(model) {
        return Some(exact);
    }
    overrides
        .iter()
        .filter(|(key, _)| !key.is_empty() && model.starts_with(key.as_str()))
        .max_by_key(|(key, _)| key.len())
        .map(|(_, value)| value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_then_longest_prefix() {
        let overrides: BTreeMap<String, u8> = [
            ("claude".to_owned(), 1),
            ("claude-opus-4".to_owned(), 2),
            ("claude-opus-4-5-20251101".to_owned(), 3),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            override_for(&overrides, "claude-opus-4-5-20251101"),
            Some(&3)
        );
        assert_eq!(override_for(&overrides, "claude-opus-4-1"), Some(&2));
        assert_eq!(override_for(&overrides, "claude-haiku-4-5"), Some(&1));
        assert_eq!(override_for(&overrides, "gpt-5"), None);
    }
}
