//! Who plays the model: a script, or a recorded session answering with its recorded replies.
//!
//! Answering is split in two so a request the provider rejects plays nothing: [`Playing::plan`]
//! picks the answer without changing anything, [`Playing::commit`] records it once the call
//! was priced.

use mc_core::{Message, Role};

use super::reply::Reply;
use crate::recording::Recording;
use crate::script::Script;

/// What answers the requests.
#[derive(Debug, Clone)]
pub enum Responder {
    /// Plays a script's turns (see [`crate::script`] for the matching rules).
    Script(Script),
    /// Answers request k with the recorded answer of the step whose request had as many
    /// messages as the client sent (system messages not counted), else with the next unused
    /// step; once every step is used, with a short final text.
    Trajectory(Recording),
}

/// The text a trajectory answers once its steps are used up.
const TRAJECTORY_DONE: &str = "The recorded session has ended.";

/// A responder and how far it has played.
#[derive(Debug)]
pub(crate) struct Playing {
    responder: Responder,
    /// Trajectory steps already answered.
    used: Vec<bool>,
    /// The trajectory step answered last.
    last: Option<usize>,
}

/// An answer picked but not yet committed.
#[derive(Debug)]
pub(crate) struct Planned {
    /// What to answer.
    pub(crate) reply: Reply,
    /// The script turn or trajectory step it came from; `None` for the final text.
    source: Option<usize>,
}

impl Planned {
    /// An answer that is not the responder's (a historian call's): committing it plays
    /// nothing, so the script or recording goes on where it was.
    pub(crate) fn given(reply: Reply) -> Self {
        Self {
            reply,
            source: None,
        }
    }
}

impl Playing {
    pub(crate) fn new(responder: Responder) -> Self {
        let used = match &responder {
            Responder::Script(_) => Vec::new(),
            Responder::Trajectory(recording) => vec![false; recording.steps.len()],
        };
        Self {
            responder,
            used,
            last: None,
        }
    }

    /// Picks the answer to `conversation` without changing any state.
    pub(crate) fn plan(&self, conversation: &[Message]) -> Planned {
        match &self.responder {
            Responder::Script(script) => {
                let source = script.next_turn(conversation);
                let reply = match source.and_then(|index| script.turns().get(index)) {
                    Some(turn) => Reply::from_turn(turn),
                    None => Reply::final_text(script.final_text()),
                };
                Planned { reply, source }
            }
            Responder::Trajectory(recording) => {
                let sent = conversation
                    .iter()
                    .filter(|message| message.role != Role::System)
                    .count();
                let source = self.pick_step(recording, sent);
                let reply = match source.and_then(|index| recording.steps.get(index)) {
                    Some(step) => Reply::from_recorded(&step.response, step.output_tokens),
                    None => Reply::final_text(TRAJECTORY_DONE),
                };
                Planned { reply, source }
            }
        }
    }

    /// Records that `planned` was sent.
    pub(crate) fn commit(&mut self, planned: &Planned) {
        let Some(index) = planned.source else {
            return;
        };
        match &mut self.responder {
            Responder::Script(script) => script.advance(index),
            Responder::Trajectory(_) => {
                if let Some(used) = self.used.get_mut(index) {
                    *used = true;
                }
                self.last = Some(index);
            }
        }
    }

    fn pick_step(&self, recording: &Recording, sent: usize) -> Option<usize> {
        let unused = |index: &usize| !self.used.get(*index).copied().unwrap_or(true);
        let steps = 0..recording.steps.len();
        let after_last = self.last.map_or(0, |last| last + 1);
        steps
            .clone()
            .filter(unused)
            .find(|&index| recording.steps[index].len == sent)
            .or_else(|| (after_last..recording.steps.len()).find(unused))
            .or_else(|| steps.clone().find(unused))
    }
}
