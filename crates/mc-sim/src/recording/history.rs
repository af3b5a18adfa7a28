//! Turning per-call requests into steps that share their history.
//!
//! A client resends the whole conversation on every call, so a recording of n calls holds
//! n copies of an ever-growing history. Steps keep one `Arc` per run of calls in which each
//! request only appends to the previous one; a request that is not such an extension (the
//! compaction call's fresh history, a rewound conversation) starts a new `Arc`. Consumers
//! can therefore tell "the client appended" from "the client rewrote" by `Arc::ptr_eq`.

use std::sync::Arc;

use mc_core::Message;

use super::{RecordedUsage, Step, StepContext};

/// One call before histories are shared.
#[derive(Debug)]
pub(super) struct StepDraft {
    pub(super) at_ms: u64,
    pub(super) request: Vec<Message>,
    pub(super) response: Message,
    pub(super) output_tokens: Option<u64>,
    pub(super) recorded: Option<RecordedUsage>,
    pub(super) context: Option<Arc<StepContext>>,
}

/// Steps in the drafts' order, each run of extending requests sharing the longest one.
pub(super) fn share_histories(drafts: Vec<StepDraft>) -> Vec<Step> {
    let mut steps = Vec::with_capacity(drafts.len());
    let mut run: Vec<StepDraft> = Vec::new();
    for draft in drafts {
        let extends = run
            .last()
            .is_none_or(|last| draft.request.starts_with(&last.request));
        if !extends {
            flush(&mut run, &mut steps);
        }
        run.push(draft);
    }
    flush(&mut run, &mut steps);
    steps
}

/// Moves a run into `steps`; the last (longest) request becomes the shared history.
fn flush(run: &mut Vec<StepDraft>, steps: &mut Vec<Step>) {
    let Some(longest) = run.last_mut().map(|last| std::mem::take(&mut last.request)) else {
        return;
    };
    let last_len = longest.len();
    let shared = Arc::new(longest);
    let count = run.len();
    for (index, draft) in run.drain(..).enumerate() {
        let len = if index + 1 == count {
            last_len
        } else {
            draft.request.len()
        };
        steps.push(Step {
            at_ms: draft.at_ms,
            messages: Arc::clone(&shared),
            len,
            response: draft.response,
            output_tokens: draft.output_tokens,
            recorded: draft.recorded,
            context: draft.context,
        });
    }
}

#[cfg(test)]
mod tests {
    use mc_core::{Message, Role};

    use super::*;

    fn text(role: Role, text: &str) -> Message {
        Message::new(role, vec![mc_core::Part::text(text)])
    }

    fn draft(request: Vec<Message>) -> StepDraft {
        StepDraft {
            at_ms: 0,
            context: None,
            request,
            response: text(Role::Assistant, "ok"),
            output_tokens: None,
            recorded: None,
        }
    }

    #[test]
    fn extensions_share_and_rewrites_start_over() {
        let a = text(Role::User, "a");
        let b = text(Role::Assistant, "b");
        let c = text(Role::User, "c");
        let fresh = text(Role::User, "summary");
        let steps = share_histories(vec![
            draft(vec![a.clone()]),
            draft(vec![a.clone(), b.clone(), c.clone()]),
            draft(vec![fresh.clone()]),
            draft(vec![fresh.clone(), b.clone()]),
        ]);
        let lens: Vec<usize> = steps.iter().map(|step| step.len).collect();
        assert_eq!(lens, [1, 3, 1, 2]);
        assert!(Arc::ptr_eq(&steps[0].messages, &steps[1].messages));
        assert!(!Arc::ptr_eq(&steps[1].messages, &steps[2].messages));
        assert!(Arc::ptr_eq(&steps[2].messages, &steps[3].messages));
        assert_eq!(steps[0].request_messages(), std::slice::from_ref(&a));
        assert_eq!(steps[1].request_messages(), [a, b.clone(), c]);
        assert_eq!(steps[3].request_messages(), [fresh, b]);
    }
}
