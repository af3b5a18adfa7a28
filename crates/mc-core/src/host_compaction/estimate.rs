//! What the host's own compaction would have cost on a session's recorded calls.
//!
//! The ledger keeps, per call, the prompt the client sent before the engine reduced it (its
//! size, and the system prompt and tools within it), the window, the model, the output and
//! the time. Run over those, Claude Code's rule says which calls would have compacted, and a
//! prompt cache at token granularity says what each call would have read, written and sent
//! uncached; list prices ([`crate::models`]) turn that into dollars.
//!
//! It is an estimate, and is labelled so wherever it is shown: the replay's `autocompact`
//! baseline simulates the provider's cache block by block over real messages, where this sees
//! only sizes. The cache it models is the one Claude Code's markers make: the system prompt
//! and tools, and the whole previous prompt, each cached once it reaches the model's minimum,
//! alive for five minutes after its last read or write, for one model at a time. A call
//! whose prompt extends the previous one reads that prompt and writes the rest; a
//! compaction's summary call extends the conversation it summarises, and the call after it
//! shares only the system prompt and tools with anything before.

use serde::Serialize;

use super::{
    SUMMARY_INSTRUCTION_TOKENS, SUMMARY_OUTPUT_TOKENS, SUMMARY_TURN_TOKENS,
    autocompact_threshold_tokens,
};
use crate::config::CacheTtl;
use crate::models::{ModelSpec, model_spec};

/// How long a cache entry lives after its last use: the 5-minute TTL Claude Code writes with.
const TTL_MS: u64 = match CacheTtl::FiveMinutes.duration_ms() {
    Some(ttl_ms) => ttl_ms,
    None => 0,
};

/// One call of a session as the estimate reads it, in the order the calls were made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostCall<'a> {
    /// When the call started, unix milliseconds.
    pub started_ms: i64,
    /// The model it named: its price, output limit and minimum cacheable prefix.
    pub model: &'a str,
    /// The prompt the client sent, before any reduction: system, tools and every message.
    pub client_prompt_tokens: u64,
    /// The system prompt and tools within it, which a compaction keeps.
    pub fixed_tokens: u64,
    /// The context window the host compacts against.
    pub window_tokens: u64,
    /// The output the call produced, which the host's call would have produced too.
    pub output_tokens: u64,
}

/// What the host's own compaction would have cost, at list price.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HostCompactionEstimate {
    /// The client's calls priced.
    pub calls: u64,
    /// Compactions the host would have run, each one summary call more.
    pub compactions: u64,
    /// Input tokens sent uncached (prompts under the model's minimum cacheable prefix).
    pub uncached_tokens: u64,
    /// Input tokens written to the cache.
    pub cache_write_tokens: u64,
    /// Input tokens read from the cache.
    pub cache_read_tokens: u64,
    /// Output tokens: the calls' own and the summaries'.
    pub output_tokens: u64,
    /// All of it at list price, USD, every write priced as a 5-minute one.
    pub cost_usd: f64,
}

/// Prices the host's own compaction over `calls`, oldest first; `None` when there are none.
///
/// Each call's prompt under the host is what the client sent, or, once the host has
/// compacted, the system prompt and tools, the summary turn and what the client added since.
/// When that reaches the trigger for the call's window and model, a summary call (the prompt
/// plus [`super::SUMMARY_INSTRUCTION`], answering [`SUMMARY_OUTPUT_TOKENS`]) goes first and
/// the call then carries the summary alone. A client prompt smaller than the one before
/// means the client rewrote its history (it compacted by itself, or the user rewound): the
/// host starts over from what the client sends.
pub fn estimate_host_compaction(calls: &[HostCall<'_>]) -> Option<HostCompactionEstimate> {
    if calls.is_empty() {
        return None;
    }
    let mut host = Host::default();
    let mut totals = HostCompactionEstimate {
        calls: 0,
        compactions: 0,
        uncached_tokens: 0,
        cache_write_tokens: 0,
        cache_read_tokens: 0,
        output_tokens: 0,
        cost_usd: 0.0,
    };
    for call in calls {
        host.call(call, &mut totals);
    }
    Some(totals)
}

/// The host's state between calls: its summary, and the cache its last call left.
#[derive(Debug, Default)]
struct Host<'a> {
    /// The client's prompt at the last compaction, which the summary stands in for; `None`
    /// before the first (or after the client rewrote its history).
    cut_tokens: Option<u64>,
    /// The client's prompt on the previous call.
    last_client_tokens: u64,
    /// The spec of the previous call's model, looked up once while the model stays.
    model: Option<(&'a str, ModelSpec)>,
    /// What the previous prompt left in the cache.
    cache: Option<Cached<'a>>,
}

/// The cache entries of the previous prompt.
#[derive(Debug, Clone, Copy)]
struct Cached<'a> {
    model: &'a str,
    /// The system prompt and tools it carried: a prompt with others shares nothing with it.
    fixed_tokens: u64,
    /// The system prompt and tools cached (0 when under the model's minimum).
    fixed_cached: u64,
    /// The whole prompt cached (0 when under the model's minimum).
    prompt_cached: u64,
    /// When the entries were last read or written.
    used_ms: i64,
}

/// How a prompt relates to the one sent before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prefix {
    /// It extends the previous prompt.
    Extends,
    /// It shares the system prompt and tools only.
    FixedOnly,
}

/// One prompt to price.
#[derive(Debug, Clone, Copy)]
struct Sent {
    prompt_tokens: u64,
    output_tokens: u64,
    prefix: Prefix,
}

impl<'a> Host<'a> {
    /// Prices one client call, and the summary call before it when the host compacts.
    fn call(&mut self, call: &HostCall<'a>, totals: &mut HostCompactionEstimate) {
        let client = call.client_prompt_tokens.max(call.fixed_tokens);
        let mut prefix = Prefix::Extends;
        if client < self.last_client_tokens {
            self.cut_tokens = None;
            prefix = Prefix::FixedOnly;
        }
        self.last_client_tokens = client;
        let (prompt, has_new) = match self.cut_tokens {
            None => (client, true),
            Some(cut) => (
                call.fixed_tokens
                    .saturating_add(SUMMARY_TURN_TOKENS)
                    .saturating_add(client.saturating_sub(cut)),
                client > cut,
            ),
        };
        let max_output = self.spec(call.model).max_output_tokens;
        let threshold = autocompact_threshold_tokens(call.window_tokens, max_output);
        totals.calls += 1;
        if prompt < threshold || !has_new {
            let sent = Sent {
                prompt_tokens: prompt,
                output_tokens: call.output_tokens,
                prefix,
            };
            self.send(call, sent, totals);
            return;
        }
        totals.compactions += 1;
        let summary = Sent {
            prompt_tokens: prompt.saturating_add(SUMMARY_INSTRUCTION_TOKENS),
            output_tokens: SUMMARY_OUTPUT_TOKENS,
            prefix,
        };
        self.send(call, summary, totals);
        self.cut_tokens = Some(client);
        let after = Sent {
            prompt_tokens: call.fixed_tokens.saturating_add(SUMMARY_TURN_TOKENS),
            output_tokens: call.output_tokens,
            prefix: Prefix::FixedOnly,
        };
        self.send(call, after, totals);
    }

    /// The spec of `model`.
    fn spec(&mut self, model: &'a str) -> &ModelSpec {
        if self.model.as_ref().is_some_and(|(name, _)| *name != model) {
            self.model = None;
        }
        &self
            .model
            .get_or_insert_with(|| (model, model_spec(model)))
            .1
    }

    /// Prices one prompt of `call` against the cache and leaves its entries for the next.
    fn send(&mut self, call: &HostCall<'a>, sent: Sent, totals: &mut HostCompactionEstimate) {
        let shared = self.cache.filter(|cached| {
            cached.model == call.model
                && cached.fixed_tokens == call.fixed_tokens
                && u64::try_from(call.started_ms.saturating_sub(cached.used_ms))
                    .is_ok_and(|idle_ms| idle_ms <= TTL_MS)
        });
        let read = shared
            .map_or(0, |cached| match sent.prefix {
                Prefix::Extends => cached.prompt_cached.max(cached.fixed_cached),
                Prefix::FixedOnly => cached.fixed_cached,
            })
            .min(sent.prompt_tokens);
        let spec = self.spec(call.model);
        let minimum = spec.min_cacheable_tokens;
        let rest = sent.prompt_tokens - read;
        let (uncached, written) = if sent.prompt_tokens >= minimum {
            (0, rest)
        } else {
            (rest, 0)
        };
        totals.cost_usd += spec
            .price
            .cost_usd(uncached, written, 0, read, sent.output_tokens);
        // Sums of figures read from a store: saturate rather than trust them to be sane.
        totals.uncached_tokens = totals.uncached_tokens.saturating_add(uncached);
        totals.cache_write_tokens = totals.cache_write_tokens.saturating_add(written);
        totals.cache_read_tokens = totals.cache_read_tokens.saturating_add(read);
        totals.output_tokens = totals.output_tokens.saturating_add(sent.output_tokens);
        let cacheable = |tokens: u64| if tokens >= minimum { tokens } else { 0 };
        self.cache = Some(Cached {
            model: call.model,
            fixed_tokens: call.fixed_tokens,
            fixed_cached: cacheable(call.fixed_tokens.min(sent.prompt_tokens)),
            prompt_cached: cacheable(sent.prompt_tokens),
            used_ms: call.started_ms,
        });
    }
}

#[cfg(test)]
mod tests;
