//! The strategies' token counter.

use mc_sim::{Calibration, CountTokens, ModelSpec};

use crate::memo::MemoCounter;

/// o200k (memoised) scaled by the model family's calibration, the way the provider scales
/// each block, so the strategies' rules see the provider's sizes. Never the provider's token
/// scale: that difference the strategies can only learn from the usage reported back.
pub(crate) struct Estimate<'c> {
    counter: &'c MemoCounter,
    calibration: Calibration,
}

impl<'c> Estimate<'c> {
    /// The estimate for calls to `spec`'s model.
    pub(crate) fn new(counter: &'c MemoCounter, spec: &ModelSpec) -> Self {
        Self {
            counter,
            calibration: Calibration::for_model(&spec.name, spec.wire),
        }
    }
}

impl CountTokens for Estimate<'_> {
    fn count_tokens(&self, text: &str) -> u64 {
        self.calibration
            .scale_tokens(self.counter.count_tokens(text))
    }
}
