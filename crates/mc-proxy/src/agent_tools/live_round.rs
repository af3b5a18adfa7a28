//! The two steps every live answer takes between rounds, the same on each wire: closing a
//! round's stream (its ledger row, and the end of the answer when the client went away or
//! the round failed) and starting the next round (unless the client left meanwhile).

use std::sync::Arc;

use bytes::Bytes;

use mc_core::SessionId;

use super::live::{ClientGone, RoundEnd, Sink};
use super::round_call::{Call, RoundFailure, record_round};
use crate::app::App;
use crate::provider::Provider;

/// How a round's stream ended for the client.
pub(super) struct Ended {
    /// How the upstream's stream ended.
    pub end: RoundEnd,
    /// Whether the client still read it.
    pub sent: Result<(), ClientGone>,
    /// Why the stream is not a whole answer by its wire's rule, if it is not.
    pub unfinished: Option<String>,
}

/// Writes the ledger row of the round that `ended`, and says whether the answer goes on
/// (`rounds` ran so far). When it ends here, the client either went away (said once in the
/// log) or got the provider's kind of error event, unless the upstream's own error already
/// reached it.
pub(super) async fn close_round(
    app: &App,
    provider: Provider,
    call: &Call,
    ended: Ended,
    sink: &mut Sink,
    rounds: usize,
) -> bool {
    let Ended {
        end,
        sent,
        unfinished,
    } = ended;
    let failed = match sent {
        // The upstream delivered its final event: the round is whole, read to the end or
        // not, and its usage counts.
        Err(ClientGone) if end.ended => end.failed.clone(),
        Err(ClientGone) => Some("client disconnected".to_owned()),
        Ok(()) => end.failed.clone().or(unfinished),
    };
    record_round(
        app,
        provider,
        call,
        end.status,
        end.usage,
        failed.clone(),
        end.first_byte_ms,
    );
    if sent.is_err() {
        note_gone(call, rounds);
        return false;
    }
    if let Some(reason) = failed {
        if !end.reported_upstream {
            let message = format!("the upstream answer broke off ({reason})");
            sink.fail(provider, message).await;
        }
        return false;
    }
    true
}

/// Sends `body` as the next round of a live answer after `hidden` rounds of our tools, or
/// `None` when the answer ends here: the client went away while the tools ran or before the
/// upstream answered (said once in the log), or the round could not be had (the client then
/// got the error as its stream's last event).
pub(super) async fn next_live_round(
    app: &Arc<App>,
    provider: Provider,
    call: &mut Call,
    body: Bytes,
    sink: &mut Sink,
    hidden: usize,
) -> Option<reqwest::Response> {
    // Running our tools took a while: a client gone meanwhile gets no next round.
    if sink.is_gone() {
        note_gone(call, hidden);
        return None;
    }
    match call.next_round(app, provider, body, Some(sink)).await {
        Ok(response) => Some(response),
        Err(RoundFailure::ClientGone) => {
            note_gone(call, hidden);
            None
        }
        Err(failure) => {
            let _ = sink.send(failure.into_event(provider)).await;
            None
        }
    }
}

/// Says, once per answer, that its client went away after `rounds` upstream rounds and that
/// no further round starts.
fn note_gone(call: &Call, rounds: usize) {
    let session = call.planned.session.as_ref().map_or("", SessionId::as_str);
    tracing::info!(
        session,
        rounds,
        "the client went away during an answer with the proxy's tools; no further round is started"
    );
}
