//! What a provider reported it counted for a call's prompt: the figure the session's next
//! pass plans with, and the pass whose request it counted.

use mc_core::SessionId;
use mc_store::CallRow;

/// The session and usage a successful call reported: what the next pass plans with.
///
/// A call that failed, even after its headers said 200 (a stream cut or ended by an error
/// event), reports nothing: the client will resend, and its next request must be planned
/// as if the failed call had never happened (DESIGN §7).
pub fn reported_usage(row: &CallRow) -> Option<(&SessionId, ReportedUsage)> {
    let tokens = row
        .prompt_tokens()
        .filter(|_| (200..300).contains(&row.status) && row.error.is_none())?;
    Some((
        row.session.as_ref()?,
        ReportedUsage {
            tokens,
            pass: row.pass_seq,
        },
    ))
}

/// What the provider counted for one call's prompt, and the pass that call sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportedUsage {
    /// Input + cache read + cache write.
    pub tokens: u64,
    /// The pass whose request was counted, when known.
    pub pass: Option<u64>,
}

impl mc_core::HeldBytes for ReportedUsage {
    fn held_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
    }
}
