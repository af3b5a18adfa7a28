//! Deciding a pass: the window the fit works against, the prompt's estimate, the reclaim
//! lanes, the window fit (excerpts, clipped inputs, the minimal rendering) and the one bust
//! permission. Pure decisions over the session's state; applying them is the pass's job.

use std::collections::BTreeSet;

use mc_core::config::Tokens;
use mc_core::pass_plan::{
    BustCycle, PassInputs, PassKind, PassPlan, PendingWork, measure_usage, plan_pass, prompt_limit,
};
use mc_core::reclaim::{
    FingerprintIndex, InputReclaim, ReclaimDecision, ReclaimInputs, plan_input_reclaim,
    plan_reclaim_with,
};
use mc_core::reduction::{DropState, land_drops};
use mc_core::tags::{TagIndex, TagNo};
use mc_core::window_fit::{
    ShrinkPlan, TokenCorrection, excerpt_keep_chars, pressure_target, protected_budget,
};
use mc_core::{Message, Role};

use crate::correction::Report;
use crate::error::Result;
use crate::fit::{self, FitFacts};
use crate::head_memory::MemoryDelta;
use crate::history_head::Advance;
use crate::part_tokens::PartTokens;
use crate::pass::{Engine, PassRequest};
use crate::state::EngineState;

/// Percent of the limit kept free of the estimate (see where the limit is taken).
const LIMIT_MARGIN_PERCENT: u64 = 2;

/// What a pass decides from.
pub(crate) struct Decision<'a> {
    pub request: &'a PassRequest<'a>,
    /// Messages the log held before this request, and holds now.
    pub previous_count: u64,
    pub count: u64,
    pub tags: &'a TagIndex,
    pub drops: &'a DropState,
    pub counts: &'a PartTokens,
    /// The stored messages the lanes and the window fit work on, with their ordinals: from
    /// the boundary a mutating pass leaves (past `advance`, when compartments allow it).
    pub tail: &'a [(u64, &'a Message)],
    /// The boundary the previous pass rendered from (what the prompt estimate starts at).
    pub boundary: usize,
    /// The boundary move a mutating pass makes, when compartments cover past `boundary`.
    pub advance: Option<Advance>,
    /// The project memory changes since `m[0]`.
    pub memory: &'a MemoryDelta,
    /// Without an advance, the tokens of `m[1]` once it shows the memory changes.
    pub m1_tokens_with_memory: Option<u64>,
    pub correction: TokenCorrection,
    pub report: Option<Report>,
    /// The operator asked queued work to land now: on this request, or with `flush`
    /// beforehand ([`Engine::request_flush`]).
    pub flush: bool,
    /// The reclaim lanes' inputs, normal or emergency.
    pub reclaim_inputs: &'a dyn Fn(bool) -> ReclaimInputs<'a>,
}

/// What a pass decided: the plan, and the mutations it lands when it may. A plan that would
/// refuse (its minimal rendering is estimated over the limit) still lands everything it may:
/// the pass then counts the rendering itself and refuses only if that is over too.
pub(crate) struct Decided {
    pub plan: PassPlan,
    /// What the plan was made from.
    pub inputs: PassInputs,
    pub reclaim: Vec<ReclaimDecision>,
    pub input_clips: Vec<InputReclaim>,
    pub shrink: Option<ShrinkPlan>,
}

impl Engine {
    /// Decides the pass for `ctx`. Oversized parts of new messages are shown smaller in
    /// `state` at once (they were never sent, so nothing cached changes); everything else is
    /// returned for the pass to land only if the plan may mutate.
    pub(crate) fn decide(
        &self,
        ctx: &Decision<'_>,
        state: &mut EngineState,
        index: &mut FingerprintIndex,
    ) -> Result<Decided> {
        let Decision {
            request,
            tags,
            drops,
            counts,
            tail,
            boundary,
            advance,
            correction,
            report,
            ..
        } = *ctx;
        let count = request.count_text;
        let usable = self
            .config
            .pass
            .planned_window(request.usable_window.map(Tokens));
        // The window the fit works against: the usable window, or a proven limit if smaller.
        let fit_window = match (usable, state.proven_window.map(Tokens)) {
            (Some(usable), Some(proven)) => Some(usable.min(proven)),
            (usable, proven) => usable.or(proven),
        };
        if let Some(limit) = fit_window.map(|window| correction.unapply(window.get())) {
            let first_new = ctx.previous_count.max(boundary as u64);
            fit::reshape_oversized(
                state,
                request.messages,
                first_new,
                tags,
                counts,
                limit,
                count,
            );
        }
        let protected = self.config.reduction.protected_tags;
        let landable = land_drops(drops, tags, protected);
        let unit_tokens = |tag: TagNo| -> u64 {
            tags.unit_of(tag)
                .map_or(0, |unit| counts.of(unit.ordinal, unit.part))
        };
        let head_tokens = state.m0_tokens + state.m1_tokens;
        let is_landed = |tag: TagNo| drops.landed.contains(&tag);
        // The tail as shown: what the latest pass rendered, counted as rendered, plus the
        // messages since (less what is shown smaller of them); without a latest render (a
        // new session, or another boundary) the stored sizes less what is dropped or reshaped.
        let rendered_before = state
            .rendered_tail
            .filter(|&(from, _)| from == boundary as u64)
            .zip(state.last_pass_messages.filter(|&count| count <= ctx.count));
        let reshaped_from = |from: u64| {
            fit::reshape_saved(
                &state.reshape,
                &state.shown_tokens,
                tags,
                counts,
                &is_landed,
                from,
            )
        };
        // The tail from `from` as stored, less what is dropped or shown smaller.
        let stored_shown_from = |from: usize| {
            let landed: u64 = drops
                .landed
                .iter()
                .filter(|&&tag| {
                    tags.unit_of(tag)
                        .is_some_and(|unit| unit.ordinal >= from as u64)
                })
                .map(|&tag| unit_tokens(tag))
                .sum();
            counts
                .sum_from(from)
                .saturating_sub(landed)
                .saturating_sub(reshaped_from(from as u64))
                .saturating_sub(dropped_reasoning_tokens(
                    &state.dropped_reasoning,
                    from,
                    counts,
                ))
        };
        let shown_tail_tokens = match rendered_before {
            Some(((_, rendered), since)) => {
                let new = counts.sum_from(usize::try_from(since).unwrap_or(usize::MAX));
                rendered + new.saturating_sub(reshaped_from(since))
            }
            None => stored_shown_from(boundary),
        };
        // What moving the boundary removes from the tail, and what it adds to `m[1]`.
        let memory_growth = ctx
            .m1_tokens_with_memory
            .map_or(0, |tokens| tokens.saturating_sub(state.m1_tokens));
        let (covered_tokens, head_growth) = advance.map_or((0, memory_growth), |advance| {
            let to = usize::try_from(advance.to).unwrap_or(usize::MAX);
            (
                stored_shown_from(boundary).saturating_sub(stored_shown_from(to)),
                advance.m1_tokens.saturating_sub(state.m1_tokens) + advance.pinned_tokens,
            )
        });
        let advance_from = advance.map_or(0, |advance| advance.to);
        let prompt_estimate = request.fixed_tokens + head_tokens + shown_tail_tokens;
        // What dropping a unit saves is what it shows now: an excerpted unit shows far less
        // than its stored size.
        let shown_unit_tokens = |tag: TagNo| -> u64 {
            let size = unit_tokens(tag);
            match state.reshape.excerpts.get(&tag) {
                Some(&keep) => tags.unit_of(tag).map_or(size, |unit| {
                    fit::shown_size(&state.shown_tokens, unit, size, keep)
                }),
                None => size,
            }
        };
        let queued_tokens: u64 = landable
            .iter()
            .filter(|&&tag| {
                tags.unit_of(tag)
                    .is_some_and(|unit| unit.ordinal >= advance_from)
            })
            .map(|&tag| shown_unit_tokens(tag))
            .sum();
        let model_changed = state
            .model
            .as_deref()
            .is_some_and(|model| model != request.model);
        let system_changed = state
            .prefix_hash
            .as_deref()
            .is_some_and(|hash| hash != request.prefix_identity);
        let reported_usage = report.map(|report| report.tokens);
        let mut inputs = PassInputs {
            now_ms: request.now_ms,
            last_call_ms: state.last_call_ms,
            last_usage_tokens: Tokens(
                reported_usage
                    .filter(|&usage| Some(usage) != state.usage_at_landing)
                    .unwrap_or(0),
            ),
            usable_window: usable,
            proven_window: state.proven_window.map(Tokens),
            ttl: self.config.cache.ttl_for(request.model),
            model_changed,
            system_changed,
            operator_flush: ctx.flush,
            head_rendered: state.head_rendered,
            head_dirty: advance.is_some_and(|advance| advance.pins)
                || state.head_rebuild_requested
                || ctx.memory.operator_edit,
            m0_tokens: Tokens(correction.apply(state.m0_tokens)),
            m1_tokens: Tokens(correction.apply(state.m1_tokens)),
            m1_memory_updates: u32::try_from(ctx.memory.changes.len()).unwrap_or(u32::MAX),
            pending: PendingWork {
                queued_drop_tokens: Tokens(correction.apply(queued_tokens)),
                reclaimable_tokens: Tokens(0),
                m1_changed: advance.is_some(),
            },
            prompt_tokens_estimate: Tokens(correction.apply(prompt_estimate)),
            fixed_tokens: Tokens(correction.apply(request.fixed_tokens)),
            minimal_prompt_tokens: Tokens(0),
            prefix_tokens_estimate: Tokens(correction.apply(state.m1_tokens + shown_tail_tokens)),
            cycle: state.bust_cycle,
        };
        // The reclaim lanes walk the whole tail (with the session's kept fingerprint index,
        // only new output is fingerprinted): they run only when their result can matter. Below the execute threshold
        // a live cache is never busted for reclaimable work, so they are skipped unless the
        // pass busts anyway (dead cache, flush, first render) and may land the normal lanes
        // for free. From the execute threshold on, the emergency lanes (which also take the
        // model's old narration) are what a bust would land, and the weighing decides: on the
        // shared swe trajectories at a 64K window this cut cost from $45.32 to $43.01 against
        // counting them only in the force band, where every bust came late and rewrote more.
        let usage = measure_usage(&inputs, &self.config.pass, request.model);
        let probe = plan_pass(
            &inputs,
            &self.config.pass,
            &self.config.history,
            request.model,
        );
        // Near the limit (the refusal level of the usable or proven window) the emergency
        // lanes run whatever the execute threshold says: a proven window can be far below
        // the configured one.
        let near_limit = prompt_limit(&inputs).is_some_and(|limit| {
            u128::from(usage.usage_tokens.get()) * 100
                >= u128::from(self.config.pass.refusal_percent.get()) * u128::from(limit.get())
        });
        // The emergency lanes from the execute threshold or near the limit, the normal ones
        // on a pass that busts anyway, none otherwise.
        let lanes = if usage.execute_reached || near_limit {
            Some((ctx.reclaim_inputs)(true))
        } else {
            probe.may_mutate.then(|| (ctx.reclaim_inputs)(false))
        };
        let (reclaim, input_clips) = match &lanes {
            Some(lanes) => (
                plan_reclaim_with(lanes, &self.reclaim, index),
                plan_input_reclaim(lanes, &self.reclaim, &state.reshape.clipped_calls),
            ),
            None => (Vec::new(), Vec::new()),
        };
        let lane_tokens: u64 = reclaim
            .iter()
            .map(|decision| decision.tokens.min(shown_unit_tokens(decision.tag)))
            .sum::<u64>()
            + input_clips.iter().map(|clip| clip.tokens).sum::<u64>();
        // What the window still demands once every lane landed: excerpts and clipped inputs
        // of what lanes may not drop, and the minimal rendering a refusal is judged by.
        let history_tokens = covered_tokens.saturating_sub(head_growth);
        let after_lanes = (prompt_estimate + head_growth)
            .saturating_sub(queued_tokens + lane_tokens + covered_tokens);
        // Estimates leave out a few tokens per unit (tag prefixes, placeholders) that the
        // learned correction only catches up with over time: plan a little under the limit.
        let limit = prompt_limit(&inputs)
            .map(|limit| correction.unapply(limit.get()) * (100 - LIMIT_MARGIN_PERCENT) / 100);
        // A repeat of the latest pass's request (a retry after a failed call) renders what
        // that pass rendered: its window fit was already decided. Only a provider's report
        // that the rendering itself was over the limit (an overflow) asks for more.
        let repeat = ctx.count == ctx.previous_count && state.last_pass_messages == Some(ctx.count);
        let proven_over = report.is_some_and(|report| {
            report.pass.is_some()
                && report.pass == state.sent_estimates.last().map(|&(seq, _)| seq)
                && prompt_limit(&inputs).is_some_and(|limit| report.tokens > limit.get())
        });
        let shrink = match (limit, fit_window) {
            _ if repeat && !proven_over => None,
            (Some(limit), Some(window)) if usage.force_reached || after_lanes > limit => {
                // The room the window leaves above what no reduction touches.
                let floor = request.fixed_tokens + head_tokens + head_growth;
                let room = limit.saturating_sub(floor);
                let mut hidden: BTreeSet<TagNo> = drops.landed.clone();
                hidden.extend(landable.iter().copied());
                hidden.extend(reclaim.iter().map(|decision| decision.tag));
                let facts = FitFacts {
                    tail,
                    tags,
                    counts,
                    reshape: &state.reshape,
                    hidden: &hidden,
                    protected_count: protected,
                    protected_budget: protected_budget(room),
                    keep_chars: excerpt_keep_chars(room),
                    task_ordinal: request
                        .messages
                        .iter()
                        .position(|message| message.role == Role::User)
                        .map(|index| index as u64),
                };
                let target = usage.force_reached.then(|| {
                    let usable = usable.unwrap_or(window);
                    let execute = usage.execute.percent_of(usable);
                    let usable = correction.unapply(usable.get());
                    pressure_target(usable, execute.get(), floor, limit)
                });
                Some(fit::shrink(&facts, after_lanes, target, limit))
            }
            _ => None,
        };
        let shrink_tokens = shrink.as_ref().map_or(0, |plan| plan.saves);
        inputs.pending.reclaimable_tokens =
            Tokens(correction.apply(lane_tokens + shrink_tokens + history_tokens));
        inputs.minimal_prompt_tokens = Tokens(
            shrink
                .as_ref()
                .map_or(0, |plan| correction.apply(plan.minimal)),
        );
        let plan = plan_pass(
            &inputs,
            &self.config.pass,
            &self.config.history,
            request.model,
        );
        // DESIGN §7: a retried identical request yields the same upstream bytes. Estimates
        // taken after the latest pass landed its work differ from the ones it planned with,
        // so a repeat is not planned again: it is sent as that pass rendered it, unless the
        // provider proved that rendering over the limit or the operator flushed.
        if repeat && !proven_over && !ctx.flush {
            let mut reasons = plan.reasons;
            reasons.push("a repeat of the latest pass's request: sent as it rendered".to_owned());
            return Ok(Decided {
                plan: PassPlan {
                    kind: PassKind::CacheHit,
                    cause: None,
                    may_mutate: false,
                    force: false,
                    refuse: None,
                    reasons,
                },
                inputs,
                reclaim: Vec::new(),
                input_clips: Vec::new(),
                shrink: None,
            });
        }
        state.bust_cycle = if plan.may_mutate {
            BustCycle::default()
        } else {
            state
                .bust_cycle
                .after_hit(inputs.pending.removable_tokens())
        };
        Ok(Decided {
            plan,
            inputs,
            reclaim,
            input_clips,
            shrink,
        })
    }
}

/// Estimated tokens of the reasoning parts dropped from the tail (from `boundary` on).
fn dropped_reasoning_tokens(dropped: &[(u64, u32)], boundary: usize, counts: &PartTokens) -> u64 {
    dropped
        .iter()
        .filter(|&&(ordinal, _)| ordinal >= boundary as u64)
        .map(|&(ordinal, part)| counts.of(ordinal, part))
        .sum()
}
