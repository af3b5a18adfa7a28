//! `ctx_reduce`: the agent asks for tagged parts of its context to be dropped.
//!
//! The drops are only queued ([`Engine::queue_drops`](crate::Engine::queue_drops), the same
//! path as the operator's `reduce`): they land on the next pass allowed to change the cached
//! prefix, so calling this never costs a cache write by itself.

use mc_core::reduction::QueueOutcome;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{ToolAnswer, ToolContext, bound_session};
use crate::EngineError;

pub(super) const NAME: &str = "ctx_reduce";
pub(super) const DESCRIPTION: &str = "Drop tagged parts of your context that you no longer need \
(old tool output, superseded file reads). Pass the §N§ tag numbers as ranges, e.g. \"3-5,12\". \
The drops are queued and take effect on a later turn; the newest tags are protected and wait \
until they age out. The original stays retrievable with ctx_expand.";

/// Who the store records as having queued the drops.
const SOURCE: &str = "ctx_reduce";

/// Arguments of `ctx_reduce`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReduceArgs {
    /// Tag numbers and ranges to drop, comma-separated: "3-5,12" (the § marks may be kept).
    pub drop: String,
}

pub(super) fn run(ctx: &ToolContext<'_>, args: &ReduceArgs) -> ToolAnswer {
    let session = match ctx.engine.store().read(|tx| bound_session(tx, ctx, NAME)) {
        Ok(Ok(session)) => session,
        Ok(Err(answer)) => return answer,
        Err(error) => return ToolAnswer::store(&error),
    };
    match ctx
        .engine
        .queue_drops(&session, &args.drop, SOURCE, ctx.now_ms)
    {
        Ok(outcome) => {
            let protected = ctx.engine.config().reduction.protected_tags;
            ToolAnswer::ok(report(&outcome, protected))
        }
        Err(EngineError::DropSpec(reason)) => ToolAnswer::error(format!(
            "cannot read drop \"{}\": {reason}; write tag numbers and ascending ranges \
             separated by commas, e.g. \"3-5,12\"",
            args.drop
        )),
        Err(EngineError::Store(error)) => ToolAnswer::store(&error),
        Err(other) => ToolAnswer::error(other.to_string()),
    }
}

/// One line per outcome: queued, deferred because protected, skipped with the reason.
fn report(outcome: &QueueOutcome, protected: u32) -> String {
    let waiting: Vec<_> = outcome.waiting().collect();
    let queued: Vec<String> = outcome
        .accepted
        .iter()
        .filter(|tag| !waiting.contains(tag))
        .map(|tag| format!("§{}§", tag.0))
        .collect();
    let mut out = String::new();
    if !queued.is_empty() {
        out.push_str(&format!(
            "queued {}: dropped from your context on an upcoming turn\n",
            queued.join(" ")
        ));
    }
    if !waiting.is_empty() {
        let tags: Vec<String> = waiting.iter().map(|tag| format!("§{}§", tag.0)).collect();
        out.push_str(&format!(
            "deferred {}: among the newest {protected} tags, which are protected; queued, they \
             drop once newer tags push them out\n",
            tags.join(" ")
        ));
    }
    for (tag, reason) in outcome.rejected() {
        out.push_str(&format!("skipped §{}§: {reason}\n", tag.0));
    }
    if out.is_empty() {
        out.push_str("nothing to drop\n");
    }
    out
}
