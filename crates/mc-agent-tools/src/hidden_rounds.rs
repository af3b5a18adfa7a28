//! The rounds of one client request that the client does not see, the same on every wire:
//! what the model's answer in a round leads to, which of its calls the proxy runs, what the
//! conversation upstream gains, what the client was shown of it, and which exchange is
//! stored for the client's next request ([`crate::splice`]).
//!
//! A wire's adapter ([`RoundWire`]) says what an answer holds and how its turns, results and
//! stored exchange are written; running the calls and storing the exchange are the caller's
//! (they block on the store), between [`HiddenRounds::settle`] and
//! [`HiddenRounds::after_run`].

use mc_engine::tools::ToolAnswer;
use serde_json::Value;

use crate::round_driver::{Next, RoundDriver};

/// One call of the model to one of our tools.
#[derive(Debug, Clone, PartialEq)]
pub struct OurCall {
    /// The call's id, which its result names.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its arguments.
    pub arguments: Value,
}

/// What the client's answer is made of, for the exchange stored under it: what it was shown
/// of the hidden rounds, then the answer without our calls, and the round limit's notice
/// when the limit ended it.
#[derive(Debug)]
pub struct ClientAnswer<'a, W: RoundWire + ?Sized> {
    /// What the client was shown of the hidden rounds.
    pub shown: &'a W::Shown,
    /// The round's answer.
    pub answer: &'a W::Answer,
    /// The positions of our calls in it, which the client's copy leaves out.
    pub ours: &'a [usize],
    /// Whether the round limit ended the answer.
    pub capped: bool,
}

/// A wire's part in the rounds.
pub trait RoundWire {
    /// The model's answer in one round.
    type Answer: ?Sized;
    /// One entry of the conversation upstream.
    type Turn: Clone;
    /// What the client was shown of the hidden rounds (a live client sees each round).
    type Shown: Default;
    /// An exchange stored for the client's next request.
    type Splice;

    /// The positions of the calls to our tools in `answer` (what the client's copy leaves
    /// out), and how many calls are the client's.
    fn calls(answer: &Self::Answer) -> (Vec<usize>, usize);

    /// Our calls at `ours`, in order.
    fn our_calls(answer: &Self::Answer, ours: &[usize]) -> Vec<OurCall>;

    /// The turns that answer `calls`, each with its answer.
    fn results(calls: Vec<OurCall>, answers: Vec<ToolAnswer>) -> Vec<Self::Turn>;

    /// The answer as the model gave it, as turns of the conversation upstream.
    fn answer_turns(answer: &Self::Answer) -> Vec<Self::Turn>;

    /// What the client is shown of a round that continues (with our calls at `ours`).
    fn show(shown: &mut Self::Shown, answer: &Self::Answer, ours: &[usize]);

    /// Whether the client was shown nothing of the hidden rounds.
    fn shown_nothing(shown: &Self::Shown) -> bool;

    /// The exchange to store: the hidden rounds `before` the answer, the answer as the model
    /// gave it when the client's copy differs (`full_answer`), our `results` after it, under
    /// the key of the answer the client gets (`client`); `None` when that answer has no key
    /// (the pass refuses such a message anyway).
    fn splice(
        before: Vec<Self::Turn>,
        full_answer: Option<Vec<Self::Turn>>,
        client: ClientAnswer<'_, Self>,
        results: Vec<Self::Turn>,
    ) -> Option<Self::Splice>;
}

/// What the caller does after [`HiddenRounds::settle`].
#[derive(Debug)]
pub enum Settle<S> {
    /// The model called none of our tools: the client gets the answer as it is, and `keep`
    /// is stored first when rounds were hidden before it.
    Final {
        /// The exchange to store.
        keep: Option<S>,
    },
    /// The model called our tools: run these, then [`HiddenRounds::after_run`] with `run`.
    Run(Run),
}

/// Our calls of a round, to run before the round is settled.
#[derive(Debug)]
pub struct Run {
    /// The calls, in order.
    pub calls: Vec<OurCall>,
    ours: Vec<usize>,
    next: Next,
}

/// What follows a round whose calls ran.
#[derive(Debug)]
pub enum AfterRun<S> {
    /// The client gets the answer without our calls (at `ours`), as its turn's end: it has
    /// calls of its own, or the round limit stopped a model that called only ours
    /// (`capped`); `keep` is stored first.
    HandBack {
        /// The positions of our calls in the answer.
        ours: Vec<usize>,
        /// Whether the round limit ended it.
        capped: bool,
        /// The exchange to store.
        keep: Option<S>,
    },
    /// The model called only ours: the conversation with the hidden rounds
    /// ([`HiddenRounds::hidden`]) goes upstream again; on the `last` round allowed it may
    /// not call tools.
    Again {
        /// Whether the round asked next is the last one allowed.
        last: bool,
    },
}

/// The hidden rounds of one client request on one wire so far.
#[derive(Debug)]
pub struct HiddenRounds<W: RoundWire> {
    hidden: Vec<W::Turn>,
    driver: RoundDriver,
    /// Whether the client sees each round as it streams, not only the last one.
    live: bool,
    shown: W::Shown,
}

impl<W: RoundWire> HiddenRounds<W> {
    /// The first round of an answer; `live` when the client sees each round as it streams.
    pub fn new(live: bool) -> Self {
        Self {
            hidden: Vec::new(),
            driver: RoundDriver::first(),
            live,
            shown: W::Shown::default(),
        }
    }

    /// How many rounds ran, the one in flight included.
    pub fn count(&self) -> usize {
        self.driver.count()
    }

    /// What the client was shown of the hidden rounds.
    pub fn shown(&self) -> &W::Shown {
        &self.shown
    }

    /// The hidden rounds so far: what follows the client's conversation upstream.
    pub fn hidden(&self) -> &[W::Turn] {
        &self.hidden
    }

    /// Decides what follows the round that gave `answer`.
    pub fn settle(&mut self, answer: &W::Answer) -> Settle<W::Splice> {
        let (ours, theirs) = W::calls(answer);
        let next = self.driver.next(ours.len(), theirs);
        if next != Next::Final {
            let calls = W::our_calls(answer, &ours);
            return Settle::Run(Run { calls, ours, next });
        }
        if self.hidden.is_empty() {
            return Settle::Final { keep: None };
        }
        // A client that saw parts of the hidden rounds sends them back in this answer;
        // upstream, they stay in the rounds that wrote them.
        let full = (!W::shown_nothing(&self.shown)).then(|| W::answer_turns(answer));
        let client = ClientAnswer {
            shown: &self.shown,
            answer,
            ours: &[],
            capped: false,
        };
        let keep = W::splice(std::mem::take(&mut self.hidden), full, client, Vec::new());
        Settle::Final { keep }
    }

    /// Settles the round that gave `answer` once its calls (`run`) have `answers`.
    pub fn after_run(
        &mut self,
        answer: &W::Answer,
        run: Run,
        answers: Vec<ToolAnswer>,
    ) -> AfterRun<W::Splice> {
        let Run { calls, ours, next } = run;
        let results = W::results(calls, answers);
        if let Next::HandBack { capped } = next {
            let client = ClientAnswer {
                shown: &self.shown,
                answer,
                ours: &ours,
                capped,
            };
            let full = Some(W::answer_turns(answer));
            let keep = W::splice(std::mem::take(&mut self.hidden), full, client, results);
            return AfterRun::HandBack { ours, capped, keep };
        }
        if self.live {
            W::show(&mut self.shown, answer, &ours);
        }
        self.hidden.extend(W::answer_turns(answer));
        self.hidden.extend(results);
        AfterRun::Again {
            last: next == Next::Continue { last: true },
        }
    }
}

#[cfg(test)]
#[path = "hidden_rounds_tests.rs"]
mod tests;
