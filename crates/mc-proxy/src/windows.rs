//! How large each model's context window is, and how much of it the prompt may use.
//!
//! The engine plans against the usable window: the context window minus what the answer
//! may need. The window comes from, in order: the operator's `--context-window`, the
//! request itself (a Claude request that opts into the 1M-token window with the
//! `context-1m-…` beta gets it: Claude Code 2.1 sends it and shows the user a 1M window),
//! the families listed here, else nothing (the engine then plans on the provider's reported
//! usage and any overflow the provider proved). A proven limit caps all of them.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// Known families by name fragment; the first match wins, so more specific fragments come
/// first. Each figure is the most prompt the family takes, from the provider's model page:
///
/// - Claude: 200K (Anthropic's models overview); the 1M-token window is a beta a request
///   opts into ([`CLAUDE_LONG_CONTEXT`]), so 200K is assumed.
/// - gpt-4o: 128K (OpenAI's model page).
/// - gpt-4.1: 1,047,576 (OpenAI's model page).
/// - gpt-5 (gpt-5, gpt-5-codex, gpt-5.x): 272K. OpenAI lists a 400K context, but that counts
///   the answer: at most 272K of it is input and 128K output, and Codex's own model
///   catalogue (`codex debug models`) plans these models with a 272K window. Planning on
///   400K let a prompt grow past what the provider accepts as input.
/// - o3, o4-mini: 200K (OpenAI's model pages).
/// - Gemini: 1,048,576 input tokens (Google's model pages for the 1.5, 2.x and 2.5 models).
const WINDOWS: &[(&str, u64)] = &[
    ("claude", 200_000),
    ("gpt-4o", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-5", 272_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("gemini", 1_048_576),
];

/// The family `model` belongs to: the first of [`WINDOWS`]' fragments its name contains,
/// else its whole name, lowercased. A conversation that names no session keeps it across
/// models of one family (Claude Sonnet to Opus, gpt-5 to gpt-5-codex), never across
/// families ([`crate::session_resolve`]).
pub fn model_family(model: &str) -> String {
    let lower = model.to_ascii_lowercase();
    match WINDOWS
        .iter()
        .find(|(fragment, _)| lower.contains(fragment))
    {
        Some((fragment, _)) => (*fragment).to_owned(),
        None => lower,
    }
}

/// The window a Claude request gets with the long-context beta.
const CLAUDE_LONG_CONTEXT: u64 = 1_000_000;

/// The beta flag's prefix (`context-1m-2025-08-07`).
const LONG_CONTEXT_BETA: &str = "context-1m-";

/// The context window of `model`, in tokens, when known. `betas` is the request's
/// `anthropic-beta` header value (comma-separated flags), when it has one.
pub fn context_window(
    model: &str,
    override_tokens: Option<u64>,
    betas: Option<&str>,
) -> Option<u64> {
    if override_tokens.is_some() {
        return override_tokens;
    }
    let lower = model.to_ascii_lowercase();
    let long_context = betas.is_some_and(|betas| {
        betas
            .split(',')
            .any(|flag| flag.trim().starts_with(LONG_CONTEXT_BETA))
    });
    if long_context && lower.contains("claude") {
        return Some(CLAUDE_LONG_CONTEXT);
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_and_override() {
        assert_eq!(context_window("claude-opus-4-8", None, None), Some(200_000));
        assert_eq!(context_window("gpt-4o-mini", None, None), Some(128_000));
        assert_eq!(context_window("my-local-model", None, None), None);
        assert_eq!(context_window("gpt-5.5", None, None), Some(272_000));
        assert_eq!(context_window("gpt-5-codex", None, None), Some(272_000));
        assert_eq!(model_family("claude-opus-4-8"), "claude");
        assert_eq!(model_family("GPT-5.5"), "gpt-5");
        assert_eq!(model_family("fake-model"), "fake-model");
        assert_eq!(
            context_window("claude-opus-4-8", Some(60_000), None),
            Some(60_000)
        );
    }

    #[test]
    fn the_long_context_beta_opens_claude_s_million_token_window() {
        let betas = "claude-code-20250219,context-1m-2025-08-07,interleaved-thinking-2025-05-14";
        assert_eq!(
            context_window("claude-opus-4-8", None, Some(betas)),
            Some(1_000_000)
        );
        assert_eq!(
            context_window("claude-opus-4-8", None, Some("claude-code-20250219")),
            Some(200_000)
        );
        assert_eq!(context_window("gpt-5", None, Some(betas)), Some(272_000));
        assert_eq!(
            context_window("claude-opus-4-8", Some(60_000), Some(betas)),
            Some(60_000)
        );
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
