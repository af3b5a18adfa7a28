//! The rounds of one client request, as a state machine of its own, the same on every
//! wire: what follows a round the model finished depends only on how many calls it made to
//! our tools and to the client's, and how many rounds ran. The proxy's adapter for each
//! wire parses the calls, runs ours ([`crate::run`]) and splices the exchanges
//! ([`crate::splice`]); this decides.

/// Most upstream calls the proxy makes for its own tools per client request. A model that
/// keeps calling them (a search after a search) is stopped before it costs the user much.
pub const MAX_ROUNDS: usize = 8;

/// What follows a finished round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// No call of ours: the answer is the client's as it is.
    Final,
    /// Ours run here, and the answer goes to the client without them: it has calls of its
    /// own, or (`capped`) the round limit stopped a model that called only ours.
    HandBack {
        /// The limit ended the answer: it says so ([`crate::round_cap`]).
        capped: bool,
    },
    /// The model called only ours: they run and the model is asked again; on the `last`
    /// round allowed it may not call tools.
    Continue {
        /// The round asked next is the last one allowed.
        last: bool,
    },
}

/// Counts the rounds of one client request.
#[derive(Debug)]
pub struct RoundDriver {
    /// The rounds asked so far, the one in flight included.
    count: usize,
}

impl RoundDriver {
    /// A request's first round is in flight.
    pub fn first() -> Self {
        Self { count: 1 }
    }

    /// How many rounds ran, the one in flight included.
    pub fn count(&self) -> usize {
        self.count
    }

    /// What follows the round in flight, whose model made `ours` calls to our tools and
    /// `theirs` to the client's; a round that continues starts the next.
    pub fn next(&mut self, ours: usize, theirs: usize) -> Next {
        if ours == 0 {
            return Next::Final;
        }
        if theirs > 0 || self.count >= MAX_ROUNDS {
            return Next::HandBack {
                capped: theirs == 0,
            };
        }
        self.count += 1;
        Next::Continue {
            last: self.count >= MAX_ROUNDS,
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_model_that_only_calls_ours_is_stopped_at_the_limit() {
        let mut driver = RoundDriver::first();
        for round in 2..=MAX_ROUNDS {
            assert_eq!(
                driver.next(1, 0),
                Next::Continue {
                    last: round == MAX_ROUNDS
                }
            );
        }
        assert_eq!(driver.next(1, 0), Next::HandBack { capped: true });
        assert_eq!(driver.count(), MAX_ROUNDS);
    }

    proptest! {
        /// Whatever the model calls, a request runs at most MAX_ROUNDS rounds; it ends when
        /// the model calls none of ours, and hands back whenever the client has calls; only
        /// the limit caps it; the last round announced is the last one asked.
        #[test]
        fn rounds_are_bounded_and_end_as_the_calls_say(
            rounds in prop::collection::vec((0usize..3, 0usize..3), 1..20)
        ) {
            let mut driver = RoundDriver::first();
            let mut announced_last = false;
            for (ours, theirs) in rounds {
                let before = driver.count();
                prop_assert!(before <= MAX_ROUNDS);
                match driver.next(ours, theirs) {
                    Next::Final => {
                        prop_assert_eq!(ours, 0);
                        break;
                    }
                    Next::HandBack { capped } => {
                        prop_assert!(ours > 0);
                        prop_assert_eq!(capped, theirs == 0);
                        prop_assert!(theirs > 0 || before == MAX_ROUNDS);
                        break;
                    }
                    Next::Continue { last } => {
                        prop_assert!(!announced_last, "no round follows the last one");
                        prop_assert_eq!((ours > 0, theirs), (true, 0));
                        prop_assert_eq!(driver.count(), before + 1);
                        announced_last = last;
                    }
                }
            }
        }
    }
}
