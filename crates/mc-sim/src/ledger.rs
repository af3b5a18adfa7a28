//! What the simulated provider saw: one row per call, with its usage and its price.
//!
//! The ledger is the simulator's output. `GET /_sim/ledger` serves it, and `replay` sums it
//! per strategy, so every cost figure traces back to rows a reader can inspect one by one.

use serde::{Deserialize, Serialize};

use mc_core::models::Wire;

/// One call, as the provider would have billed it.
///
/// For a served call `input_tokens + cache_write_5m + cache_write_1h + cache_read ==
/// prompt_tokens`. A refused call (status 400) keeps its `prompt_tokens` and has every other
/// count and the cost at 0: the provider bills nothing for a request it rejects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// Position in the ledger, from 0.
    pub seq: u64,
    /// When the call arrived, in ms of the simulator's clock.
    pub at_ms: u64,
    /// The model the request named.
    pub model: String,
    /// The API it came through.
    pub wire: Wire,
    /// The HTTP status the provider answered with.
    pub status: u16,
    /// The whole prompt, calibrated (see [`crate::calibration`]).
    pub prompt_tokens: u64,
    /// Prompt tokens neither read from nor written to the cache.
    pub input_tokens: u64,
    /// Prompt tokens written to a 5-minute cache entry (Anthropic only).
    pub cache_write_5m: u64,
    /// Prompt tokens written to a 1-hour cache entry (Anthropic only).
    pub cache_write_1h: u64,
    /// Prompt tokens read from the cache (`cached_tokens` on OpenAI).
    pub cache_read: u64,
    /// Tokens the responder generated.
    pub output_tokens: u64,
    /// The call's cost at list price.
    pub cost_usd: f64,
    /// The caller's note (strategy name, step, "summary").
    pub label: Option<String>,
}

/// Every call so far, in arrival order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Ledger {
    rows: Vec<CallRecord>,
}

impl Ledger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    /// The rows, oldest first.
    pub fn rows(&self) -> &[CallRecord] {
        &self.rows
    }

    /// What every call cost together, in USD.
    pub fn total_cost_usd(&self) -> f64 {
        self.rows.iter().map(|row| row.cost_usd).sum()
    }

    /// The `seq` the next row gets.
    pub fn next_seq(&self) -> u64 {
        self.rows.len() as u64
    }

    /// Appends `row`, giving it the next `seq`, and returns the stored copy.
    pub(crate) fn push(&mut self, mut row: CallRecord) -> CallRecord {
        row.seq = self.next_seq();
        self.rows.push(row.clone());
        row
    }
}
