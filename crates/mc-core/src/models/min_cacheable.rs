//! Per-model minimum cacheable prefix lengths.

/// Model-name fragments and their minimum, from Anthropic's prompt-caching documentation
/// (DESIGN §9). Matched by substring so dated ids (`claude-haiku-4-5-20251001`) need no row of
/// their own; the first match wins.
const MINIMUMS: &[(&str, u64)] = &[
    ("opus-4-8", 4_096),
    ("opus-4-7", 4_096),
    ("opus-4-6", 4_096),
    ("opus-4-5", 4_096),
    ("haiku-4-5", 4_096),
    ("sonnet-4-6", 2_048),
    ("3-5-haiku", 2_048),
    ("3-haiku", 2_048),
    ("haiku-3", 2_048),
];

/// The default for Sonnet/Opus 4/4.1-class models and for names we do not know: the lowest
/// documented minimum, so an unknown model never looks less cacheable than it is.
const DEFAULT_MIN_TOKENS: u64 = 1_024;

/// The shortest prefix, in tokens, that a breakpoint on `model` may cache; a shorter one is
/// processed as plain input and creates no entry.
pub fn min_cacheable_tokens(model: &str) -> u64 {
    MINIMUMS
        .iter()
        .find(|(fragment, _)| model.contains(fragment))
        .map_or(DEFAULT_MIN_TOKENS, |&(_, tokens)| tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_each_class() {
        let cases = [
            ("claude-sonnet-4-20250514", 1_024),
            ("claude-sonnet-4-5-20250929", 1_024),
            ("claude-opus-4-1-20250805", 1_024),
            ("claude-3-7-sonnet-20250219", 1_024),
            ("claude-opus-4-5-20251101", 4_096),
            ("claude-opus-4-6", 4_096),
            ("claude-opus-4-8", 4_096),
            ("claude-haiku-4-5-20251001", 4_096),
            ("claude-sonnet-4-6", 2_048),
            ("claude-3-5-haiku-20241022", 2_048),
            ("claude-3-haiku-20240307", 2_048),
            ("some-future-model", 1_024),
        ];
        let found: Vec<(&str, u64)> = cases
            .iter()
            .map(|&(model, _)| (model, min_cacheable_tokens(model)))
            .collect();
        assert_eq!(found, cases);
    }
}
