//! One prepared call rendered as the client would send it and priced by the simulated
//! provider: accepted with its usage, refused as over the window, or failed before it counts.

use mc_sim::strategy::{PreparedCall, render_anthropic, render_anthropic_marked, render_openai};
use mc_sim::{CallRecord, ModelSpec, Price, ProviderError, SimProvider, Wire};

use crate::error::ReplayError;
use crate::totals::CallUsage;

/// The most output a rendered Anthropic request asks for: Claude Code's `max_tokens`.
const CLIENT_MAX_TOKENS: u64 = 32_000;

/// What the provider made of one call.
pub(super) enum Priced {
    Accepted(CallRecord),
    OverWindow { prompt_tokens: u64 },
}

/// A call the provider rejected for a reason other than the window, before it is placed.
pub(super) enum CallFailure {
    Render(mc_wire::WireError),
    Rejected(ProviderError),
}

impl CallFailure {
    pub(super) fn at(self, recording: &str, step: usize) -> ReplayError {
        let recording = recording.to_owned();
        match self {
            Self::Render(source) => ReplayError::Render {
                recording,
                step,
                source,
            },
            Self::Rejected(source) => ReplayError::Rejected {
                recording,
                step,
                source,
            },
        }
    }
}

/// Renders `call` for `spec`'s model and wire, and prices it at `at_ms`.
pub(super) fn price(
    provider: &mut SimProvider,
    spec: &ModelSpec,
    call: &PreparedCall<'_>,
    output_tokens: u64,
    at_ms: u64,
) -> Result<Priced, CallFailure> {
    let label = call.label.map(str::to_owned);
    let result = match spec.wire {
        Wire::Anthropic => {
            let max_tokens = spec.max_output_tokens.min(CLIENT_MAX_TOKENS);
            let request = match &call.cache_marks {
                Some(marks) => render_anthropic_marked(
                    &spec.name,
                    max_tokens,
                    call.system,
                    call.tools,
                    &call.messages,
                    marks,
                ),
                None => render_anthropic(
                    &spec.name,
                    max_tokens,
                    call.system,
                    call.tools,
                    &call.messages,
                ),
            }
            .map_err(CallFailure::Render)?;
            provider.anthropic(&request, output_tokens, at_ms, label)
        }
        Wire::OpenAi => {
            let request = render_openai(&spec.name, call.system, call.tools, &call.messages);
            provider.openai(&request, output_tokens, at_ms, label)
        }
    };
    match result {
        Ok(record) => Ok(Priced::Accepted(record)),
        Err(ProviderError::Overflow { prompt_tokens, .. }) => {
            Ok(Priced::OverWindow { prompt_tokens })
        }
        Err(error @ ProviderError::Cache(_)) => Err(CallFailure::Rejected(error)),
    }
}

/// `record`'s usage; `price` is its model's, for the prompt side of its cost.
pub(super) fn usage_of(record: &CallRecord, price: &Price) -> CallUsage {
    let input_cost_usd = price.cost_usd(
        record.input_tokens,
        record.cache_write_5m,
        record.cache_write_1h,
        record.cache_read,
        0,
    );
    CallUsage {
        prompt_tokens: record.prompt_tokens,
        input_uncached: record.input_tokens,
        cache_write: record.cache_write_5m + record.cache_write_1h,
        cache_read: record.cache_read,
        output: record.output_tokens,
        cost_usd: record.cost_usd,
        input_cost_usd,
    }
}
