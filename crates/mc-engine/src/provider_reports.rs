//! What a provider reported back, kept for the next plan: the prompt size it counted for
//! a call, and the context limit an overflow error proved.

use mc_core::SessionId;
use mc_store::WriteTx;

use crate::error::Result;
use crate::pass::Engine;
use crate::state::{load_state, record_usage_in, store_state};

impl Engine {
    /// Records the context limit a provider proved with an overflow error ("prompt is too
    /// long: N tokens > M maximum") at `now_ms`, so later plans refuse or fold before sending
    /// over it. It binds for a day ([`crate::PROVEN_WINDOW_TTL_MS`]) or until `flush`.
    pub fn record_proven_window(
        &self,
        session: &SessionId,
        limit_tokens: u64,
        now_ms: u64,
    ) -> Result<()> {
        self.store().write_with(|tx| {
            let mut state = load_state(tx, session)?.unwrap_or_default();
            state.proven_window = Some(limit_tokens);
            state.proven_window_ms = Some(now_ms);
            store_state(tx, session, &state)
        })
    }

    /// Records what the provider reported for the call of pass `pass` (when known), for the
    /// next plan.
    pub fn record_usage(
        &self,
        session: &SessionId,
        usage_tokens: u64,
        pass: Option<u64>,
    ) -> Result<()> {
        self.store()
            .write_with(|tx| record_usage_in(tx, session, usage_tokens, pass))
    }

    /// [`Self::record_usage`] inside a caller's transaction, so the proxy writes a call's
    /// ledger row and its usage in one commit.
    pub fn record_usage_in(
        &self,
        tx: &WriteTx<'_>,
        session: &SessionId,
        usage_tokens: u64,
        pass: Option<u64>,
    ) -> Result<()> {
        record_usage_in(tx, session, usage_tokens, pass)
    }
}
