//! What is known of each model: its wire, window, output limit, minimum cacheable prefix
//! and list price. Pure data, shared by the simulator (which prices and limits calls by it)
//! and by the views that price what a session cost (`status`, the dashboard), so both agree
//! on every dollar.

mod min_cacheable;
mod pricing;

use serde::{Deserialize, Serialize};

pub use self::min_cacheable::min_cacheable_tokens;
pub use self::pricing::{PRICES_AS_OF, Price};

/// The shortest prefix OpenAI's automatic caching reuses, in tokens.
pub const OPENAI_MIN_CACHED_TOKENS: u64 = 1_024;

/// The API a model is called through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Wire {
    /// Anthropic Messages (`POST /v1/messages`): explicit `cache_control` breakpoints.
    Anthropic,
    /// OpenAI Chat Completions (`POST /v1/chat/completions`): automatic prefix caching. Gemini
    /// is priced here too, since the recorded Gemini sessions speak this wire.
    OpenAi,
}

/// One model as the simulator prices and limits it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSpec {
    /// The name it was asked for, unchanged.
    pub name: String,
    /// The wire its family speaks natively.
    pub wire: Wire,
    /// The context window: a prompt of more tokens is refused.
    pub window_tokens: u64,
    /// The largest `max_tokens` the model accepts.
    pub max_output_tokens: u64,
    /// The shortest prefix the provider caches.
    pub min_cacheable_tokens: u64,
    /// The list price as of [`PRICES_AS_OF`].
    pub price: Price,
}

/// A row of the table: the name fragment, then the facts.
struct Row {
    fragment: &'static str,
    wire: Wire,
    window_tokens: u64,
    max_output_tokens: u64,
    price: Price,
}

const CLAUDE_WINDOW: u64 = 200_000;

const fn claude(fragment: &'static str, max_output: u64, input: f64, output: f64) -> Row {
    Row {
        fragment,
        wire: Wire::Anthropic,
        window_tokens: CLAUDE_WINDOW,
        max_output_tokens: max_output,
        price: Price::anthropic(input, output),
    }
}

const fn chat(fragment: &'static str, window: u64, max_output: u64, price: Price) -> Row {
    Row {
        fragment,
        wire: Wire::OpenAi,
        window_tokens: window,
        max_output_tokens: max_output,
        price,
    }
}

/// Known families, matched by substring of the normalised name; the first match wins, so a
/// more specific fragment (`gpt-4o-mini`, `opus-4-5`) comes before the one it contains
/// (`gpt-4o`, `opus-4`). Claude windows are the standard 200K: Sonnet's 1M window is a beta a
/// request must opt into, and a replay that wants it says `--window`.
const TABLE: &[Row] = &[
    // Claude Code 2.1 defaults to `claude-opus-4-8`; later Opus 4.x releases are priced as
    // Opus 4.5/4.6 until a dated list price says otherwise.
    claude("opus-4-8", 128_000, 5.0, 25.0),
    claude("opus-4-7", 128_000, 5.0, 25.0),
    claude("opus-4-6", 128_000, 5.0, 25.0),
    claude("opus-4-5", 64_000, 5.0, 25.0),
    claude("opus-4-1", 32_000, 15.0, 75.0),
    claude("opus-4", 32_000, 15.0, 75.0),
    claude("3-opus", 4_096, 15.0, 75.0),
    claude("sonnet-4-6", 64_000, 3.0, 15.0),
    claude("sonnet-4-5", 64_000, 3.0, 15.0),
    claude("sonnet-4", 64_000, 3.0, 15.0),
    claude("3-7-sonnet", 64_000, 3.0, 15.0),
    claude("3-5-sonnet", 8_192, 3.0, 15.0),
    claude("haiku-4-5", 64_000, 1.0, 5.0),
    claude("3-5-haiku", 8_192, 0.8, 4.0),
    claude("3-haiku", 4_096, 0.25, 1.25),
    chat(
        "gpt-4o-mini",
        128_000,
        16_384,
        Price::automatic(0.15, 0.6, 0.5),
    ),
    chat("gpt-4o", 128_000, 16_384, Price::automatic(2.5, 10.0, 0.5)),
    chat(
        "gpt-4.1-mini",
        1_047_576,
        32_768,
        Price::automatic(0.4, 1.6, 0.25),
    ),
    chat(
        "gpt-4.1-nano",
        1_047_576,
        32_768,
        Price::automatic(0.1, 0.4, 0.25),
    ),
    chat(
        "gpt-4.1",
        1_047_576,
        32_768,
        Price::automatic(2.0, 8.0, 0.25),
    ),
    chat(
        "gpt-5-mini",
        400_000,
        128_000,
        Price::automatic(0.25, 2.0, 0.1),
    ),
    chat(
        "gpt-5-nano",
        400_000,
        128_000,
        Price::automatic(0.05, 0.4, 0.1),
    ),
    chat(
        "gpt-5.2",
        400_000,
        128_000,
        Price::automatic(1.75, 14.0, 0.1),
    ),
    chat("gpt-5", 400_000, 128_000, Price::automatic(1.25, 10.0, 0.1)),
    // The ≤200K-token tier; longer prompts cost $4/$18 on the real API.
    chat(
        "gemini-3-pro",
        1_048_576,
        65_536,
        Price::automatic(2.0, 12.0, 0.1),
    ),
];

/// What an unknown name gets: a Sonnet-class Claude model ($3/$15, 200K window, 64K output,
/// 1,024-token minimum). Sonnet is the most used family, so an unknown name is priced like
/// the common case rather than the cheapest or dearest.
const DEFAULT: Row = claude("", 64_000, 3.0, 15.0);

/// The spec of `model`, from its family's row, or a Sonnet-class default ($3/$15, 200K window,
/// 64K output, 1,024-token minimum) when no fragment matches.
///
/// Matching ignores case and a provider prefix (`anthropic/`, `google/`), and reads Claude
/// version dots as dashes (`claude-sonnet-4.5` is `claude-sonnet-4-5`), so dated ids, aliases
/// and router names all land on their family.
pub fn model_spec(model: &str) -> ModelSpec {
    let normalised = normalise(model);
    let row = TABLE
        .iter()
        .find(|row| normalised.contains(row.fragment))
        .unwrap_or(&DEFAULT);
    let min_cacheable_tokens = match row.wire {
        Wire::Anthropic => min_cacheable_tokens(&normalised),
        Wire::OpenAi => OPENAI_MIN_CACHED_TOKENS,
    };
    ModelSpec {
        name: model.to_owned(),
        wire: row.wire,
        window_tokens: row.window_tokens,
        max_output_tokens: row.max_output_tokens,
        min_cacheable_tokens,
        price: row.price,
    }
}

/// Lower case; Claude names with `.` read as `-` (OpenAI's own names keep their dots).
pub fn normalise(model: &str) -> String {
    let lower = model.to_ascii_lowercase();
    if lower.contains("claude") {
        lower.replace('.', "-")
    } else {
        lower
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (wire, window, max output, min cacheable, input, output, cache read) of `model`.
    fn facts(model: &str) -> (Wire, u64, u64, u64, f64, f64, f64) {
        let spec = model_spec(model);
        assert_eq!(spec.name, model);
        let price = spec.price;
        (
            spec.wire,
            spec.window_tokens,
            spec.max_output_tokens,
            spec.min_cacheable_tokens,
            price.input_per_mtok,
            price.output_per_mtok,
            price.cache_read,
        )
    }

    #[test]
    fn knows_each_family() {
        use Wire::{Anthropic, OpenAi};
        let cases = [
            (
                "claude-opus-4-6",
                (Anthropic, 200_000, 128_000, 4_096, 5.0, 25.0, 0.1),
            ),
            (
                "claude-opus-4-5-20251101",
                (Anthropic, 200_000, 64_000, 4_096, 5.0, 25.0, 0.1),
            ),
            (
                "claude-opus-4-1-20250805",
                (Anthropic, 200_000, 32_000, 1_024, 15.0, 75.0, 0.1),
            ),
            (
                "claude-opus-4-20250514",
                (Anthropic, 200_000, 32_000, 1_024, 15.0, 75.0, 0.1),
            ),
            (
                "claude-sonnet-4-20250514",
                (Anthropic, 200_000, 64_000, 1_024, 3.0, 15.0, 0.1),
            ),
            (
                "claude-sonnet-4-5-20250929",
                (Anthropic, 200_000, 64_000, 1_024, 3.0, 15.0, 0.1),
            ),
            (
                "claude-sonnet-4-6",
                (Anthropic, 200_000, 64_000, 2_048, 3.0, 15.0, 0.1),
            ),
            (
                "anthropic/claude-sonnet-4.5",
                (Anthropic, 200_000, 64_000, 1_024, 3.0, 15.0, 0.1),
            ),
            (
                "claude-haiku-4-5-20251001",
                (Anthropic, 200_000, 64_000, 4_096, 1.0, 5.0, 0.1),
            ),
            (
                "claude-haiku-4-5",
                (Anthropic, 200_000, 64_000, 4_096, 1.0, 5.0, 0.1),
            ),
            (
                "claude-3-5-haiku-20241022",
                (Anthropic, 200_000, 8_192, 2_048, 0.8, 4.0, 0.1),
            ),
            (
                "gpt-4o-2024-08-06",
                (OpenAi, 128_000, 16_384, 1_024, 2.5, 10.0, 0.5),
            ),
            (
                "gpt-4o-mini",
                (OpenAi, 128_000, 16_384, 1_024, 0.15, 0.6, 0.5),
            ),
            (
                "gpt-4.1",
                (OpenAi, 1_047_576, 32_768, 1_024, 2.0, 8.0, 0.25),
            ),
            ("gpt-5", (OpenAi, 400_000, 128_000, 1_024, 1.25, 10.0, 0.1)),
            (
                "gpt-5-mini",
                (OpenAi, 400_000, 128_000, 1_024, 0.25, 2.0, 0.1),
            ),
            (
                "gpt-5.1",
                (OpenAi, 400_000, 128_000, 1_024, 1.25, 10.0, 0.1),
            ),
            (
                "gpt-5-codex",
                (OpenAi, 400_000, 128_000, 1_024, 1.25, 10.0, 0.1),
            ),
            (
                "google/gemini-3-pro-preview",
                (OpenAi, 1_048_576, 65_536, 1_024, 2.0, 12.0, 0.1),
            ),
            (
                "some-future-model",
                (Anthropic, 200_000, 64_000, 1_024, 3.0, 15.0, 0.1),
            ),
        ];
        let found: Vec<_> = cases
            .iter()
            .map(|&(model, _)| (model, facts(model)))
            .collect();
        assert_eq!(found, cases);
    }

    #[test]
    fn claude_writes_cost_more_and_automatic_caches_do_not() {
        let opus = model_spec("claude-opus-4-5").price;
        assert_eq!((opus.cache_write_5m, opus.cache_write_1h), (1.25, 2.0));
        let gpt = model_spec("gpt-5").price;
        assert_eq!((gpt.cache_write_5m, gpt.cache_write_1h), (1.0, 1.0));
    }

    #[test]
    fn wire_names_are_lowercase() {
        let names = serde_json::to_string(&[Wire::Anthropic, Wire::OpenAi]).ok();
        assert_eq!(names.as_deref(), Some(r#"["anthropic","openai"]"#));
    }
}
