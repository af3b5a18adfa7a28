//! `passthrough`: no management; the prompt grows until the window is hit.

use std::borrow::Cow;

use super::{Prepared, PreparedCall, StepView, Strategy, StrategyContext};

/// Sends the client's request as it is.
#[derive(Debug, Clone, Copy, Default)]
pub struct Passthrough;

impl Strategy for Passthrough {
    fn name(&self) -> &'static str {
        "passthrough"
    }

    fn prepare<'a>(&mut self, step: &StepView<'a>, _ctx: &StrategyContext<'_>) -> Prepared<'a> {
        Prepared::single(PreparedCall::client(step, Cow::Borrowed(step.messages)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::test_support::{context, conversation, view};

    #[test]
    fn sends_the_request_unchanged() {
        let messages = conversation(3);
        let prepared = Passthrough.prepare(&view(&messages, None), &context(50_000));
        assert_eq!(prepared.calls.len(), 1);
        assert_eq!(prepared.calls[0].messages.as_ref(), messages.as_slice());
        assert!(matches!(prepared.calls[0].messages, Cow::Borrowed(_)));
        assert_eq!(prepared.bust_cause, None);
    }
}
