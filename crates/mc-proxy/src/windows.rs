//! How large each model's context window is, and how much of it the prompt may use.
//!
//! The engine plans against the usable window: the context window minus what the answer
//! may need. The window comes from, in order: the operator's `--context-window`, the
//! families listed here, else nothing (the engine then plans on the provider's reported
//! usage and any overflow the provider proved).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use mc_core::pass_plan::output_reserve_tokens;

/// Known families by name fragment; the first match wins, so more specific fragments come
/// first. Claude's 1M-token window is a beta a request opts into, so 200K is assumed.
const WINDOWS: &[(&str, u64)] = &[
    ("claude", 200_000),
    ("gpt-4o", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-5", 400_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("gemini", 1_048_576),
];

/// The context window of `model`, in tokens, when known.
pub fn context_window(model: &str, override_tokens: Option<u64>) -> Option<u64> {
    if override_tokens.is_some() {
        return override_tokens;
    }
    let lower = model.to_ascii_lowercase();
    WINDOWS
        .iter()
        .find(|(fragment, _)| lower.contains(fragment))
        .map(|&(_, window)| window)
}

/// Windows the provider proved with overflow errors, per model, for every session of the
/// process: a limit one session ran into holds for the others too (each session also keeps
/// its own in the store, which survives restarts).
#[derive(Debug, Default)]
pub struct ProvenWindows {
    by_model: Mutex<HashMap<String, u64>>,
}

impl ProvenWindows {
    /// Records that `model` refused a prompt over `limit` tokens.
    pub fn record(&self, model: &str, limit: u64) {
        let mut known = self.by_model.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = known.entry(model.to_owned()).or_insert(limit);
        *entry = (*entry).min(limit);
    }

    /// The window to plan with: the smaller of what is known of `model` and what it proved.
    pub fn window(&self, model: &str, known: Option<u64>) -> Option<u64> {
        let proven = self
            .by_model
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(model)
            .copied();
        match (known, proven) {
            (Some(known), Some(proven)) => Some(known.min(proven)),
            (known, proven) => known.or(proven),
        }
    }
}

/// The usable window: the context window minus the output reserve
/// ([`output_reserve_tokens`]; a request that states no output limit gets the whole reserve).
pub fn usable_window(window: u64, max_output_tokens: Option<u64>) -> u64 {
    window.saturating_sub(output_reserve_tokens(max_output_tokens.unwrap_or(u64::MAX)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_and_override() {
        assert_eq!(context_window("claude-opus-4-8", None), Some(200_000));
        assert_eq!(context_window("gpt-4o-mini", None), Some(128_000));
        assert_eq!(context_window("my-local-model", None), None);
        assert_eq!(
            context_window("claude-opus-4-8", Some(60_000)),
            Some(60_000)
        );
        assert_eq!(usable_window(60_000, Some(32_000)), 40_000);
        assert_eq!(usable_window(60_000, Some(4_096)), 55_904);
    }

    #[test]
    fn a_proven_window_caps_the_known_one_for_its_model_only() {
        let proven = ProvenWindows::default();
        assert_eq!(proven.window("m", Some(200_000)), Some(200_000));
        proven.record("m", 150_000);
        proven.record("m", 160_000);
        assert_eq!(proven.window("m", Some(200_000)), Some(150_000));
        assert_eq!(proven.window("m", None), Some(150_000));
        assert_eq!(proven.window("other", Some(200_000)), Some(200_000));
    }
}
