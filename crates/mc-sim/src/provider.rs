//! The simulated provider: one object that takes a request, answers with the usage the real
//! provider would report (or its error), and writes the priced call to the ledger.
//!
//! It holds the caches (Anthropic breakpoints, OpenAI automatic prefixes), the token counter
//! and the ledger, and nothing else: no clock (time comes in as `now_ms`), no I/O, so the HTTP
//! server and the replay harness drive the same object.

use std::fmt;
use std::sync::Arc;

use mc_wire::anthropic::MessagesRequest;
use mc_wire::openai::ChatRequest;
use mc_wire::responses::ResponsesRequest;

use crate::apply::{apply, validate};
use crate::calibration::Calibration;
use crate::error::CacheError;
use crate::ledger::{CallRecord, Ledger};
use crate::openai_cache::{ChatPrompt, OpenAiCache, linearise_chat, linearise_responses};
use crate::prompt::{PromptBlock, linearise_with};
use crate::state::CacheState;
use crate::token_scale::TokenScale;
use crate::tokens::CountTokens;
use mc_core::models::{ModelSpec, Wire, model_spec};

/// A request the simulated provider refuses, worded as the provider words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderError {
    /// The prompt does not fit the model's context window.
    Overflow {
        /// Which provider's wording to use.
        wire: Wire,
        /// The prompt's (calibrated) size.
        prompt_tokens: u64,
        /// The window it had to fit.
        window_tokens: u64,
    },
    /// The request's `cache_control` markers break the provider's rules.
    Cache(CacheError),
}

impl ProviderError {
    /// The HTTP status the provider answers with.
    pub fn status(&self) -> u16 {
        match self {
            Self::Overflow { .. } => 400,
            Self::Cache(error) => error.status(),
        }
    }

    /// The provider's exact error body.
    pub fn to_body(&self) -> serde_json::Value {
        match self {
            Self::Overflow {
                wire: Wire::Anthropic,
                ..
            } => serde_json::json!({
                "type": "error",
                "error": { "type": "invalid_request_error", "message": self.to_string() },
            }),
            Self::Overflow {
                wire: Wire::OpenAi, ..
            } => serde_json::json!({
                "error": {
                    "message": self.to_string(),
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                },
            }),
            Self::Cache(error) => error.to_body(),
        }
    }
}

/// The message each provider sends: exactly the text of its error body.
impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Overflow {
                wire: Wire::Anthropic,
                prompt_tokens,
                window_tokens,
            } => write!(
                f,
                "prompt is too long: {prompt_tokens} tokens > {window_tokens} maximum"
            ),
            Self::Overflow {
                wire: Wire::OpenAi,
                prompt_tokens,
                window_tokens,
            } => write!(
                f,
                "This model's maximum context length is {window_tokens} tokens. However, your messages resulted in {prompt_tokens} tokens. Please reduce the length of the messages."
            ),
            Self::Cache(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for ProviderError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Overflow { .. } => None,
            // Transparent: the cache error's text is this error's text.
            Self::Cache(error) => std::error::Error::source(error),
        }
    }
}

impl From<CacheError> for ProviderError {
    fn from(error: CacheError) -> Self {
        Self::Cache(error)
    }
}

/// The simulated provider (both wires), its caches and its ledger.
///
/// One instance stands for one organisation: calls share caches the way one API key's calls
/// do. `Send`, so a server can keep it behind a mutex.
pub struct SimProvider {
    counter: Arc<dyn CountTokens + Send + Sync>,
    window_tokens: Option<u64>,
    token_scale: TokenScale,
    anthropic_cache: CacheState,
    openai_cache: OpenAiCache,
    ledger: Ledger,
}

impl fmt::Debug for SimProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimProvider")
            .field("window_tokens", &self.window_tokens)
            .field("token_scale", &self.token_scale)
            .field("anthropic_cache", &self.anthropic_cache.len())
            .field("openai_cache", &self.openai_cache.len())
            .field("calls", &self.ledger.rows().len())
            .finish_non_exhaustive()
    }
}

/// A call's outcome before it becomes a ledger row.
struct Usage {
    input: u64,
    write_5m: u64,
    write_1h: u64,
    read: u64,
}

/// What identifies a call in its ledger row.
struct Call<'a> {
    model: &'a str,
    wire: Wire,
    prompt_tokens: u64,
    output_tokens: u64,
    now_ms: u64,
    label: Option<String>,
}

impl SimProvider {
    /// A provider with empty caches, counting with `counter` (o200k, say), which each wire
    /// corrects per model family (see [`crate::calibration`]).
    pub fn new(counter: Arc<dyn CountTokens + Send + Sync>) -> Self {
        Self {
            counter,
            window_tokens: None,
            token_scale: TokenScale::ONE,
            anthropic_cache: CacheState::new(),
            openai_cache: OpenAiCache::new(),
            ledger: Ledger::new(),
        }
    }

    /// Makes every model's window `window_tokens` (replay's `--window`).
    pub fn with_window(mut self, window_tokens: u64) -> Self {
        self.window_tokens = Some(window_tokens);
        self
    }

    /// Multiplies every count this provider makes by `token_scale` (see [`TokenScale`]): the
    /// prompt sizes it reports, checks against the window and caches, and the output it counts
    /// for a responder.
    pub fn with_token_scale(mut self, token_scale: TokenScale) -> Self {
        self.token_scale = token_scale;
        self
    }

    /// `model`'s spec as this provider applies it: with the window override, if any.
    pub fn model_spec(&self, model: &str) -> ModelSpec {
        let mut spec = model_spec(model);
        if let Some(window) = self.window_tokens {
            spec.window_tokens = window;
        }
        spec
    }

    /// Prices one Messages call at `now_ms`; `output_tokens` is what the responder generated.
    ///
    /// The provider's checks come in its order: breakpoints, then the window. A refused call
    /// leaves the cache untouched and still gets a ledger row (its status, no cost).
    pub fn anthropic(
        &mut self,
        request: &MessagesRequest,
        output_tokens: u64,
        now_ms: u64,
        label: Option<String>,
    ) -> Result<CallRecord, ProviderError> {
        let spec = self.model_spec(&request.model);
        let blocks = self.anthropic_blocks(request);
        let call = Call {
            model: &request.model,
            wire: Wire::Anthropic,
            prompt_tokens: blocks.iter().map(|block| block.tokens).sum(),
            output_tokens,
            now_ms,
            label,
        };
        let checked = validate(&blocks)
            .map_err(ProviderError::from)
            .and_then(|()| check_window(&call, &spec))
            .and_then(|()| {
                apply(&mut self.anthropic_cache, &blocks, &request.model, now_ms)
                    .map_err(ProviderError::from)
            });
        match checked {
            Ok(usage) => Ok(self.record_served(
                call,
                &spec,
                Usage {
                    input: usage.input_tokens,
                    write_5m: usage.cache_creation_5m,
                    write_1h: usage.cache_creation_1h,
                    read: usage.cache_read_input_tokens,
                },
            )),
            Err(error) => Err(self.record_refused(call, error)),
        }
    }

    /// Prices one Chat Completions call at `now_ms`, with automatic prefix caching.
    pub fn openai(
        &mut self,
        request: &ChatRequest,
        output_tokens: u64,
        now_ms: u64,
        label: Option<String>,
    ) -> Result<CallRecord, ProviderError> {
        let calibration = self.calibration(&request.model, Wire::OpenAi);
        let prompt = linearise_chat(request, &*self.counter, calibration);
        self.openai_prompt(&request.model, &prompt, output_tokens, now_ms, label)
    }

    /// Prices one Responses call at `now_ms`; the Responses API shares the Chat wire's
    /// automatic prefix cache and prices.
    pub fn openai_responses(
        &mut self,
        request: &ResponsesRequest,
        output_tokens: u64,
        now_ms: u64,
        label: Option<String>,
    ) -> Result<CallRecord, ProviderError> {
        let calibration = self.calibration(&request.model, Wire::OpenAi);
        let prompt = linearise_responses(request, &*self.counter, calibration);
        self.openai_prompt(&request.model, &prompt, output_tokens, now_ms, label)
    }

    fn openai_prompt(
        &mut self,
        model: &str,
        prompt: &ChatPrompt,
        output_tokens: u64,
        now_ms: u64,
        label: Option<String>,
    ) -> Result<CallRecord, ProviderError> {
        let spec = self.model_spec(model);
        let call = Call {
            model,
            wire: Wire::OpenAi,
            prompt_tokens: prompt.prompt_tokens(),
            output_tokens,
            now_ms,
            label,
        };
        if let Err(error) = check_window(&call, &spec) {
            return Err(self.record_refused(call, error));
        }
        let read = self.openai_cache.apply(prompt, now_ms);
        let usage = Usage {
            input: call.prompt_tokens.saturating_sub(read),
            write_5m: 0,
            write_1h: 0,
            read,
        };
        Ok(self.record_served(call, &spec, usage))
    }

    /// Records a call of `model` on `wire` that the provider turned away before reading it
    /// (an overload, `status` 529 or 503): a ledger row with that status and no tokens or
    /// cost. The caches are untouched.
    pub fn record_overloaded(
        &mut self,
        (model, wire): (&str, Wire),
        status: u16,
        now_ms: u64,
        label: Option<String>,
    ) {
        let call = Call {
            model,
            wire,
            prompt_tokens: 0,
            output_tokens: 0,
            now_ms,
            label,
        };
        self.record_unpaid(call, status);
    }

    /// The prompt size the provider would report for `request` (`count_tokens`); changes
    /// nothing.
    pub fn count_anthropic(&self, request: &MessagesRequest) -> u64 {
        self.anthropic_blocks(request)
            .iter()
            .map(|block| block.tokens)
            .sum()
    }

    /// The `prompt_tokens` the provider would report for `request`; changes nothing.
    pub fn count_openai(&self, request: &ChatRequest) -> u64 {
        let calibration = self.calibration(&request.model, Wire::OpenAi);
        linearise_chat(request, &*self.counter, calibration).prompt_tokens()
    }

    /// The raw (uncalibrated) count of `text` by this provider's counter.
    pub fn count_text(&self, text: &str) -> u64 {
        self.counter.count_tokens(text)
    }

    /// `text` as `model` on `wire` would count it, e.g. a responder's output: the raw count
    /// scaled by the model family's calibration and this provider's token scale.
    pub fn count_text_for(&self, model: &str, wire: Wire, text: &str) -> u64 {
        self.calibration(model, wire)
            .scale_tokens(self.counter.count_tokens(text))
    }

    /// Every call so far.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    fn anthropic_blocks(&self, request: &MessagesRequest) -> Vec<PromptBlock> {
        let calibration = self.calibration(&request.model, Wire::Anthropic);
        linearise_with(request, &*self.counter, calibration)
    }

    /// How this provider turns raw counts into `model`'s: the family's calibration, times the
    /// token scale. Every count goes through here, so none escapes the scale.
    fn calibration(&self, model: &str, wire: Wire) -> Calibration {
        self.token_scale.apply(Calibration::for_model(model, wire))
    }

    fn record_served(&mut self, call: Call<'_>, spec: &ModelSpec, usage: Usage) -> CallRecord {
        let cost_usd = spec.price.cost_usd(
            usage.input,
            usage.write_5m,
            usage.write_1h,
            usage.read,
            call.output_tokens,
        );
        self.ledger.push(CallRecord {
            seq: 0,
            at_ms: call.now_ms,
            model: call.model.to_owned(),
            wire: call.wire,
            status: 200,
            prompt_tokens: call.prompt_tokens,
            input_tokens: usage.input,
            cache_write_5m: usage.write_5m,
            cache_write_1h: usage.write_1h,
            cache_read: usage.read,
            output_tokens: call.output_tokens,
            cost_usd,
            label: call.label,
        })
    }

    fn record_refused(&mut self, call: Call<'_>, error: ProviderError) -> ProviderError {
        self.record_unpaid(call, error.status());
        error
    }

    fn record_unpaid(&mut self, call: Call<'_>, status: u16) {
        self.ledger.push(CallRecord {
            seq: 0,
            at_ms: call.now_ms,
            model: call.model.to_owned(),
            wire: call.wire,
            status,
            prompt_tokens: call.prompt_tokens,
            input_tokens: 0,
            cache_write_5m: 0,
            cache_write_1h: 0,
            cache_read: 0,
            output_tokens: 0,
            cost_usd: 0.0,
            label: call.label,
        });
    }
}

/// The window check: a prompt of more tokens than the window is refused (a prompt of exactly
/// the window is served).
fn check_window(call: &Call<'_>, spec: &ModelSpec) -> Result<(), ProviderError> {
    if call.prompt_tokens > spec.window_tokens {
        Err(ProviderError::Overflow {
            wire: call.wire,
            prompt_tokens: call.prompt_tokens,
            window_tokens: spec.window_tokens,
        })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
