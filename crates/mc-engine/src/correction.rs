//! Learning a model's token correction from what the provider reported.
//!
//! The provider counts every request it receives (input + cache read + cache write), and an
//! overflow error states its count: each report, paired with our estimate of the same
//! request, is one observation of the model's ratio ([`TokenCorrection`]). The ratio is kept
//! per model in the store, shared by every session and surviving restarts.

use mc_core::window_fit::TokenCorrection;
use mc_store::WriteTx;

use crate::error::Result;
use crate::state::EngineState;

/// The usage report a pass plans with, and the pass it answers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Report {
    /// Input + cache read + cache write the provider counted.
    pub tokens: u64,
    /// The pass whose request it counted; `None` when unknown (nothing is learned).
    pub pass: Option<u64>,
}

/// The correction to plan `model` with, after learning from `report` when it answers a pass
/// whose estimate is kept and has not been learned from yet (and the model did not change
/// since that pass: the estimate was made for its model).
pub(crate) fn learn(
    tx: &WriteTx<'_>,
    model: &str,
    state: &mut EngineState,
    report: Option<Report>,
    now_ms: i64,
) -> Result<TokenCorrection> {
    let correction = tx.token_correction(model)?.unwrap_or_default();
    let Some(report) = report else {
        return Ok(correction);
    };
    if state.model.as_deref() != Some(model) {
        return Ok(correction);
    }
    let Some(pass) = report.pass else {
        return Ok(correction);
    };
    if state.learned_pass.is_some_and(|learned| learned >= pass) {
        return Ok(correction);
    }
    let Some(&(_, estimate)) = state.sent_estimates.iter().find(|&&(seq, _)| seq == pass) else {
        return Ok(correction);
    };
    let learned = correction.observe(estimate, report.tokens);
    state.learned_pass = Some(pass);
    if learned != correction {
        tx.put_token_correction(model, learned, now_ms)?;
    }
    Ok(learned)
}
