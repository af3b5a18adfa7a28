//! What calls cost at list price: the same table and arithmetic `replay` prices with
//! (`mc_core::models::Price`), so the dashboard and the replay reports agree on every dollar.
//!
//! The ledger does not record a write's TTL, so every cache write is priced as a 5-minute
//! one (1.25x on Anthropic), the TTL the engine uses unless the client asked for an hour:
//! the figure is a floor when a client used 1-hour writes.

use mc_store::{CallRow, HistorianRun};

/// The list price of one call, in USD; a figure the provider did not report counts as 0.
pub fn call_cost_usd(call: &CallRow) -> f64 {
    mc_core::models::model_spec(&call.model).price.cost_usd(
        call.uncached_tokens.unwrap_or(0),
        call.cache_write_tokens.unwrap_or(0),
        0,
        call.cache_read_tokens.unwrap_or(0),
        call.output_tokens.unwrap_or(0),
    )
}

/// The list price of `calls`, in USD.
pub fn calls_cost_usd<'a>(calls: impl IntoIterator<Item = &'a CallRow>) -> f64 {
    calls.into_iter().map(call_cost_usd).sum()
}

/// The list price of a historian run, in USD: its tokens at its model's input and output
/// prices, no caching assumed (the run records no cache figures).
pub fn historian_run_cost_usd(run: &HistorianRun) -> f64 {
    mc_core::models::model_spec(run.model.as_deref().unwrap_or_default())
        .price
        .cost_usd(run.input_tokens, 0, 0, 0, run.output_tokens)
}
