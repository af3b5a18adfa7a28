//! Simulated providers for Magic Context: the wind tunnel of DESIGN §8.
//!
//! This first part is Anthropic's prompt cache as a pure function: given a decoded request,
//! the cache state and the simulated time, [`apply`] says what the provider would report as
//! `input_tokens`, `cache_creation_input_tokens` (split 5m/1h) and `cache_read_input_tokens`,
//! and updates the state. It follows the documented rules: prefix order tools → system →
//! messages, at most 4 breakpoints, longer TTLs first, a 20-block lookback from each
//! breakpoint, TTLs restarted on each hit, and a per-model minimum cacheable prefix.
//!
//! [`historian`] plays the model of Magic Context's background historian: from the
//! transcript in a historian call, the compartments an honest small model would record;
//! [`dreamer`] plays the dreamer's, judging memories from the evidence its prompt shows.
//!
//! It must not do I/O or read a clock: time comes in as `now_ms`, so a test can step a whole
//! session through hours of cache life in microseconds.
//!
//! Token counts are an approximation. Claude's tokenizer is not public, so each block is
//! counted with o200k_base over its canonical JSON text, which neither matches Claude's
//! vocabulary nor its prompt template (role markers, tool-schema rendering). Which prefixes
//! hit or miss is exact; how many tokens they hold is an estimate. The golden test
//! (`tests/it/golden.rs`) replays a recorded Claude Code session and measures the error.
//!
//! ```
//! use mc_sim::{CacheState, O200kCounter, apply, linearise};
//! use mc_wire::anthropic::MessagesRequest;
//!
//! let body = br#"{"model":"claude-sonnet-4-5","max_tokens":64,
//!   "messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}"#;
//! let request = MessagesRequest::decode(body, 1 << 20)?;
//! let blocks = linearise(&request, &O200kCounter::load()?);
//! let mut cache = CacheState::new();
//! let usage = apply(&mut cache, &blocks, &request.model, 0)?;
//! // Far below Sonnet's 1,024-token minimum: nothing is cached, everything is input.
//! assert_eq!(usage.input_tokens, usage.prompt_tokens);
//! assert!(cache.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod apply;
pub mod calibration;
pub mod clock;
pub mod dreamer;
mod error;
pub mod historian;
mod ledger;
pub mod openai_cache;
mod prompt;
mod provider;
pub mod recording;
pub mod script;
pub mod server;
mod state;
pub mod strategy;
mod thinking;
mod token_scale;
mod tokens;
mod ttl;

pub use apply::{CacheUsage, LOOKBACK_BLOCKS, MAX_BREAKPOINTS, apply};
pub use calibration::Calibration;
pub use error::{CacheError, InvalidTokenScale, TokenizerError};
pub use ledger::{CallRecord, Ledger};
pub use mc_core::models::{ModelSpec, PRICES_AS_OF, Price, Wire, min_cacheable_tokens, model_spec};
pub use openai_cache::{ChatPrompt, ChatSegment, OpenAiCache, linearise_chat, linearise_responses};
pub use prompt::{BlockPath, PromptBlock, linearise, linearise_with};
pub use provider::{ProviderError, SimProvider};
pub use recording::{
    RecordedUsage, Recording, RecordingError, RecordingFormat, Step, StepContext, ToolSpec,
};
pub use state::CacheState;
pub use token_scale::TokenScale;
pub use tokens::{CountTokens, O200kCounter};
pub use ttl::Ttl;
