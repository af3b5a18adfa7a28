//! The LLM client of Magic Context's background agents: one question, answered by one forced
//! tool call, from a chain of model endpoints.
//!
//! The historian (DESIGN §5) asks a model for structured output; this crate sends that
//! request over Anthropic Messages or OpenAI Chat Completions (the latter also covers local
//! servers such as Ollama, llama.cpp and LM Studio) as a forced tool call, or over OpenAI
//! Responses as a strict JSON-schema text format, bounds each attempt with a timeout,
//! retries rate limits and overloads with jittered exponential backoff (honouring
//! `retry-after`), and falls back to the next endpoint when one has failed for good.
//!
//! It must not: hold historian logic (prompts and validation live in `mc-core`), log or
//! return a credential (keys travel as [`mc_core::Secret`] and only into a sensitive header),
//! or retry a request the provider rejected as invalid.
//!
//! ```no_run
//! # async fn run() -> mc_llm::Result<()> {
//! use mc_llm::{LlmClient, ModelEndpoint, RetryPolicy, StructuredRequest, Wire};
//!
//! let client = LlmClient::new(RetryPolicy::default())?;
//! let endpoints = [
//!     ModelEndpoint::new(Wire::Anthropic, "https://api.anthropic.com", "claude-haiku-4-5",
//!         Some(mc_core::Secret::new("sk-ant-..."))),
//!     ModelEndpoint::new(Wire::OpenAiChat, "http://127.0.0.1:11434/v1", "qwen3:8b", None),
//! ];
//! let request = StructuredRequest {
//!     system: "Summarise.".into(),
//!     user: "1 U: hello".into(),
//!     tool: serde_json::json!({"name": "record", "description": "Record it.",
//!         "input_schema": {"type": "object"}}),
//!     max_tokens: 4096,
//! };
//! let answer = client.call_with_fallbacks(&endpoints, &request).await?;
//! let _record = answer.input; // validated by the caller (mc_core::historian::parse_answer)
//! # Ok(()) }
//! ```

mod anthropic;
mod client;
mod endpoint;
mod error;
mod openai;
mod provider_error;
mod responses;
mod retry;
mod strict_schema;
mod structured;

pub use client::LlmClient;
pub use endpoint::{EndpointLabel, ModelEndpoint, Wire};
pub use error::{LlmError, Result};
pub use provider_error::describe_error_body;
pub use retry::RetryPolicy;
pub use structured::{StructuredAnswer, StructuredRequest, Usage};
