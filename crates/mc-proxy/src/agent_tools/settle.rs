//! Settling a round on any wire: [`mc_agent_tools::hidden_rounds`] decides, and this runs
//! our calls and stores the exchange the client will not see, off the async threads.

use bytes::Bytes;
use mc_agent_tools::hidden_rounds::{AfterRun, HiddenRounds, RoundWire, Settle};
use mc_agent_tools::round_cap;
use mc_agent_tools::splice::Point;
use mc_core::{ProjectId, SessionId};
use serde::Serialize;

use super::execute::{execute, keep};
use super::round_call::Settled;
use crate::app::App;

/// Where a round's tools act and its exchanges are kept.
pub(super) struct RoundPlace<'a> {
    /// Where the conversation stands before the answer: the exchange's anchor.
    pub point: &'a Point,
    /// The project our tools act in.
    pub project: &'a Option<ProjectId>,
    /// The session of the pass.
    pub session: &'a Option<SessionId>,
    /// The wire's name, for the log.
    pub wire: &'static str,
}

/// Decides what follows the round that gave `answer`: runs our calls in it, and stores the
/// exchange the client will not see once the client's answer is settled. `next_body`
/// writes the next round's request from the hidden rounds so far, with tool calls
/// forbidden on the `last` round allowed.
pub(super) async fn settle<W>(
    rounds: &mut HiddenRounds<W>,
    app: &App,
    place: &RoundPlace<'_>,
    answer: &W::Answer,
    next_body: impl FnOnce(&[W::Turn], bool) -> Bytes,
) -> Settled
where
    W: RoundWire,
    W::Splice: Serialize + Send + 'static,
{
    let run = match rounds.settle(answer) {
        Settle::Final { keep: splice } => {
            if let Some(splice) = splice {
                keep(app, place.point.anchor(), splice).await;
            }
            return Settled::Final;
        }
        Settle::Run(run) => run,
    };
    let answers = execute(app, place.project, place.session, &run.calls).await;
    match rounds.after_run(answer, run, answers) {
        AfterRun::HandBack {
            ours,
            capped,
            keep: splice,
        } => {
            if capped {
                round_cap::warn(rounds.count(), place.wire);
            }
            if let Some(splice) = splice {
                keep(app, place.point.anchor(), splice).await;
            }
            Settled::Without { ours, capped }
        }
        AfterRun::Again { last } => Settled::Again(next_body(rounds.hidden(), last)),
    }
}
