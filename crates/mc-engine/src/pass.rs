//! One pass of the engine: ingest, plan, apply what the plan permits, render, persist.
//!
//! Everything is decided by pure functions of `mc-core` over state loaded here; this module
//! only moves data between the store and those functions. The whole pass is one write
//! transaction, so a pass that fails leaves no trace and a retried identical request renders
//! the same bytes.

use std::collections::BTreeSet;
use std::sync::Arc;

use mc_core::breakpoints::{BlockSlot, PromptLayout, plan_breakpoints};
use mc_core::config::{Config, Tokens};
use mc_core::pass_plan::{PassInputs, refusal};
use mc_core::reclaim::{
    FingerprintIndex, NudgeAudience, ReclaimConfig, ReclaimInputs, plan_reasoning_drops,
    reducible_outputs,
};
use mc_core::reduction::{DropState, PartShown, land_drops};
use mc_core::tags::{TagAssignment, TagIndex, TagNo};
use mc_core::window_fit::ShrinkAction;
use mc_core::workspace::Workspaces;
use mc_core::{HashChain, Message, Part, SessionId};
use mc_store::{KnowledgeSource, Store, WriteTx};
use serde::Serialize;

use crate::cache_budget::{CacheBudget, EngineCaches, SessionTail};
use crate::correction::{self, Report};
use crate::earlier_conversation::carry_earlier;
use crate::error::{EngineError, Result};
use crate::fit;
use crate::head_memory::{memory_delta, session_project};
use crate::history_head::{m1_tokens_at, plan_advance};
use crate::kept_rows::KeptRows;
use crate::nudges::{NudgeInputs, decide_nudge};
use crate::part_tokens::{PartTokens, part_tokens};
use crate::pass_decide::{Decided, Decision};
use crate::pass_end::{finish_pass, head_messages};
use crate::rendered_tail::{RenderedTail, TailInputs};
use crate::state::load_state;
use crate::team_link::TeamLink;

pub use crate::pass_request::{CountText, PassOutcome, PassRequest};

/// The transform engine over one store.
pub struct Engine {
    store: Store,
    pub(crate) config: Config,
    pub(crate) reclaim: ReclaimConfig,
    pub(crate) caches: EngineCaches,
    /// Whether the messages a pass stores wait for a provider's acceptance before search and
    /// the historian see them ([`Self::gated_until_accepted`]).
    pub(crate) gate_until_accepted: bool,
    /// Which projects read each other's memories ([`Self::with_workspaces`]).
    pub(crate) workspaces: Workspaces,
    /// The team store project knowledge lives in, if any ([`Self::with_team_store`]).
    pub(crate) team: Option<Arc<TeamLink>>,
}

impl Engine {
    /// An engine over `store` with `config`.
    pub fn new(store: Store, config: Config) -> Self {
        Self::with_reclaim(store, config, ReclaimConfig::default())
    }

    /// An engine with its own reclaim lane and nudge settings (tests, experiments). The
    /// protected count always comes from `config.reduction.protected_tags`, so queued drops
    /// and automatic reclaim protect the same tags.
    pub fn with_reclaim(store: Store, config: Config, reclaim: ReclaimConfig) -> Self {
        let reclaim = ReclaimConfig {
            protected_count: config.reduction.protected_tags,
            ..reclaim
        };
        Self {
            store,
            config,
            reclaim,
            caches: EngineCaches::new(CacheBudget::default()),
            gate_until_accepted: false,
            workspaces: Workspaces::default(),
            team: None,
        }
    }

    /// The engine with project knowledge in a team store: passes read its local cache, the
    /// memory tool writes through to it (queued while it does not answer).
    pub fn with_team_store(self, team: Arc<TeamLink>) -> Self {
        Self {
            team: Some(team),
            ..self
        }
    }

    /// The team store, when project knowledge lives in one.
    pub fn team_store(&self) -> Option<&Arc<TeamLink>> {
        self.team.as_ref()
    }

    /// Where passes, search and the tools read project knowledge.
    pub fn knowledge_source(&self) -> KnowledgeSource {
        match self.team {
            Some(_) => TeamLink::source(),
            None => KnowledgeSource::Local,
        }
    }

    /// The engine with `workspaces`' memberships: a member project's head shows what the
    /// others share with it, and its tools search them and refuse to edit them. Members are
    /// identified from their folders by the caller (the engine looks at no folder).
    pub fn with_workspaces(self, workspaces: Workspaces) -> Self {
        Self { workspaces, ..self }
    }

    /// The workspace memberships the engine renders and searches with.
    pub fn workspaces(&self) -> &Workspaces {
        &self.workspaces
    }

    /// The engine for a proxy, where a request's messages are stored before the provider
    /// has seen them and anything that reaches the port can send one: the sessions its
    /// passes write are gated, and their new messages are found by search and read by the
    /// historian only once `WriteTx::accept_messages` records that a provider accepted a
    /// call carrying them. Sessions written through the library are trusted as they are.
    pub fn gated_until_accepted(self) -> Self {
        Self {
            gate_until_accepted: true,
            ..self
        }
    }

    /// The engine with its per-session caches bounded by `budget`'s shares (they start
    /// empty). A smaller budget costs passes time, never a different outcome.
    pub fn with_cache_budget(self, budget: CacheBudget) -> Self {
        Self {
            caches: EngineCaches::new(budget),
            ..self
        }
    }

    /// The store the engine writes to.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The configuration the engine plans with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The reclaim lane and nudge settings the engine plans with.
    pub fn reclaim_config(&self) -> &ReclaimConfig {
        &self.reclaim
    }

    /// Runs one pass for `request` in one transaction.
    pub fn pass(&self, request: &PassRequest<'_>) -> Result<PassOutcome> {
        let now_ms = i64::try_from(request.now_ms).unwrap_or(i64::MAX);
        if !request.mode.rewrites_tail() {
            return self.pass_host_managed(request, now_ms);
        }
        let mut index = self
            .caches
            .indexes
            .take(request.session)
            .unwrap_or_else(|| FingerprintIndex::new(&self.reclaim));
        let mut counts = self
            .caches
            .part_tokens
            .take(request.session)
            .unwrap_or_default();
        counts.update(request.model, request.messages, request.count_text);
        let mut rows = self.caches.rows.take(request.session).unwrap_or_default();
        let mut rendered = match self.caches.tails.take(request.session) {
            Some(SessionTail::Rendered(tail)) => tail,
            _ => Box::default(),
        };
        let kept = Kept {
            index: &mut index,
            counts: &counts,
            rows: &mut rows,
            rendered: &mut rendered,
        };
        let outcome = self
            .store
            .write_with(|tx| self.pass_in(tx, request, now_ms, kept))?;
        self.caches.indexes.put(request.session, index);
        self.caches
            .tails
            .put(request.session, SessionTail::Rendered(rendered));
        self.caches.part_tokens.put(request.session, counts);
        self.caches.rows.put(request.session, rows);
        Ok(outcome)
    }

    fn pass_in(
        &self,
        tx: &WriteTx<'_>,
        request: &PassRequest<'_>,
        now_ms: i64,
        kept: Kept<'_>,
    ) -> Result<PassOutcome> {
        let Kept {
            index,
            counts,
            rows: kept,
            rendered,
        } = kept;
        let session = request.session;
        let ingested = self.ingest_request(tx, request, now_ms)?;
        let mut state = load_state(tx, session)?.unwrap_or_default();
        state.expire_proven_window(request.now_ms);
        if let Some(earlier) = request.continues.filter(|_| !state.head_rendered) {
            carry_earlier(
                tx,
                session,
                earlier,
                &self.config,
                request.usable_window,
                request.count_text,
                now_ms,
            )?;
        }
        let report = match request.last_usage_tokens {
            Some(tokens) => Some(Report {
                tokens,
                pass: request.last_usage_pass,
            }),
            None => state.last_usage_tokens.map(|tokens| Report {
                tokens,
                pass: state.last_usage_pass,
            }),
        };
        let correction = correction::learn(tx, request.model, &mut state, report, now_ms)?;
        let tags = kept_tags_or_stored(tx, session, kept.tags.take(), ingested.assigned)?;
        let drops = kept.drops_or_stored(tx, session)?;
        let count = request.count_text;
        let part_tokens = |part: &Part| part_tokens(part, count);
        let boundary = usize::try_from(state.boundary)
            .unwrap_or(usize::MAX)
            .min(request.messages.len());
        let project = session_project(tx, session)?;
        let memory = tx.with_knowledge(self.knowledge_source(), |knowledge| {
            memory_delta(knowledge, project, &state, &self.workspaces)
        })?;
        let advance = plan_advance(
            tx,
            session,
            &state,
            request.messages,
            &tags,
            &memory.changes,
            count,
        )?;
        // Memory changes alone grow m[1] on the next soft bust: counted like an advance's.
        let m1_tokens_with_memory = match advance {
            None if !memory.changes.is_empty() => Some(m1_tokens_at(
                tx,
                session,
                &state,
                state.boundary,
                &memory.changes,
                count,
            )?),
            _ => None,
        };
        let tail_from = |from: usize| -> Vec<(u64, &Message)> {
            request.messages[from..]
                .iter()
                .enumerate()
                .map(|(offset, message)| ((from + offset) as u64, message))
                .collect()
        };
        // The lanes and the window fit plan over the tail a mutating pass leaves; a pass that
        // may not mutate renders from the boundary it had.
        let next_boundary = advance.map_or(boundary, |advance| {
            usize::try_from(advance.to)
                .unwrap_or(usize::MAX)
                .min(request.messages.len())
        });
        let tail = tail_from(next_boundary);
        let newest_ordinal = request.messages.len().saturating_sub(1) as u64;
        let reclaim_inputs = |emergency| ReclaimInputs {
            messages: &tail,
            tags: &tags,
            drops: &drops,
            newest_ordinal,
            token_estimate: &part_tokens,
            emergency,
        };
        let decided = self.decide(
            &Decision {
                request,
                previous_count: ingested.previous_count,
                count: ingested.count,
                tags: &tags,
                drops: &drops,
                counts,
                tail: &tail,
                boundary,
                advance,
                memory: &memory,
                m1_tokens_with_memory,
                correction,
                report,
                flush: request.operator_flush || state.flush_requested,
                reclaim_inputs: &reclaim_inputs,
            },
            &mut state,
            index,
        )?;
        let Decided {
            mut plan,
            inputs,
            reclaim,
            input_clips,
            shrink,
        } = decided;
        let protected = self.config.reduction.protected_tags;
        let reported_usage = report.map(|report| report.tokens);
        let unit_tokens = |tag: TagNo| -> u64 {
            tags.unit_of(tag)
                .map_or(0, |unit| counts.of(unit.ordinal, unit.part))
        };
        let seq = tx.next_pass_seq(session)?;
        let mut landed_now = Vec::new();
        let mut all_landed = drops.landed.clone();
        let mut drops_after = None;
        let mut boundary = boundary;
        if plan.may_mutate {
            state.flush_requested = false;
            if let Some(advance) = advance {
                state.boundary = advance.to;
                boundary = next_boundary;
            }
            let reasoning = plan_reasoning_drops(&reclaim_inputs(plan.force), &self.reclaim);
            let mut dropped: BTreeSet<(u64, u32)> =
                state.dropped_reasoning.iter().copied().collect();
            dropped.extend(reasoning.iter().map(|drop| (drop.ordinal, drop.part)));
            state.dropped_reasoning = dropped.into_iter().collect();
            let mut queued = drops.queued.clone();
            for decision in &reclaim {
                if tx.queue_drop(session, decision.tag, &name_of(&decision.lane), now_ms)? {
                    queued.insert(decision.tag);
                }
            }
            let state_now = DropState {
                queued,
                landed: drops.landed.clone(),
            };
            landed_now = land_drops(&state_now, &tags, protected)
                .into_iter()
                .collect();
            tx.land_drops(session, &landed_now, seq)?;
            drops_after = Some(state_now.with_landed(&landed_now.iter().copied().collect()));
            if !landed_now.is_empty() {
                state.usage_at_landing = reported_usage;
                state.last_reduction_ordinal = Some(newest_ordinal);
            }
            all_landed.extend(landed_now.iter().copied());
            let clips = input_clips
                .iter()
                .map(|clip| (clip.call, PartShown::Skeleton));
            let shrunk = shrink
                .iter()
                .flat_map(|plan| &plan.actions)
                .filter_map(|action| match *action {
                    ShrinkAction::Excerpt { tag, keep_chars } => tags
                        .unit_of(tag)
                        .map(|unit| (unit, PartShown::Excerpt(tag, keep_chars))),
                    ShrinkAction::ClipCall(call) => Some((call, PartShown::Skeleton)),
                });
            for (unit, shown) in clips.chain(shrunk) {
                match shown {
                    PartShown::Excerpt(tag, keep) => {
                        state.reshape.excerpts.insert(tag, keep);
                    }
                    _ => {
                        state.reshape.clipped_calls.insert(unit);
                    }
                }
                fit::remember_shown(
                    &mut state.shown_tokens,
                    request.messages,
                    unit,
                    shown,
                    count,
                );
            }
            let nudge_inputs = NudgeInputs {
                messages: request.messages,
                boundary: boundary as u64,
                last_reduction_ordinal: state.last_reduction_ordinal,
                given: &state.nudges,
            };
            let outputs = || {
                let inputs = ReclaimInputs {
                    drops: &state_now,
                    ..reclaim_inputs(false)
                };
                reducible_outputs(&inputs, &self.reclaim)
            };
            let audience = if request.reduce_tool {
                NudgeAudience::ReduceTool
            } else {
                NudgeAudience::NoTool
            };
            let nudge = self
                .config
                .reduction
                .nudges
                .then(|| decide_nudge(&nudge_inputs, outputs, &self.reclaim, audience))
                .flatten();
            if let Some(nudge) = nudge {
                state.nudges.push(nudge);
            }
            self.refresh_head(tx, &mut state, &plan, request, &tags, &memory)?;
        }
        let tail = if boundary == next_boundary {
            tail
        } else {
            tail_from(boundary)
        };
        let tokens_removed = landed_now.iter().map(|&tag| unit_tokens(tag)).sum();
        let computed_chain;
        let chain = match request
            .chain
            .filter(|chain| chain.len() == request.messages.len())
        {
            Some(chain) => chain,
            None => {
                computed_chain = HashChain::of(request.messages);
                &computed_chain
            }
        };
        let (rendered_tail, rendered_tokens) = rendered.render(&TailInputs {
            count,
            tail: &tail,
            chain,
            tags: &tags,
            landed: &all_landed,
            drop_skeletons: self.config.reduction.drop_skeletons,
            dropped_reasoning: &state.dropped_reasoning,
            reshape: &state.reshape,
            nudges: &state.nudges,
        });
        let mut messages = head_messages(&state);
        messages.extend(rendered_tail);
        let sent_estimate =
            request.fixed_tokens + state.m0_tokens + state.m1_tokens + rendered_tokens;
        // The refusal is judged on the rendering itself, counted, not on the estimate of it:
        // a request is refused only when what would be sent is over the limit.
        if plan.refuse.is_some() {
            let counted = PassInputs {
                minimal_prompt_tokens: Tokens(correction.apply(sent_estimate)),
                ..inputs
            };
            if let Some(refusal) = refusal(&counted) {
                return Err(EngineError::Refused {
                    message: refusal.message,
                });
            }
            plan.refuse = None;
            plan.reasons.push(format!(
                "the rendering, counted, fits: about {} tokens",
                counted.minimal_prompt_tokens.get()
            ));
        }
        state.remember_estimate(seq, sent_estimate);
        state.last_pass_messages = Some(ingested.count);
        state.rendered_tail = Some((boundary as u64, rendered_tokens));
        let breakpoints = plan_breakpoints(
            &layout_of(request.system_blocks, &messages),
            request.client_ttl,
        );
        finish_pass(tx, &mut state, request, &plan, seq, tokens_removed)?;
        kept.tags = Some(tags);
        kept.keep_drops(tx, drops_after.unwrap_or(drops))?;
        Ok(PassOutcome {
            seq,
            plan,
            messages,
            breakpoints,
            landed: landed_now,
            tokens_removed,
            estimated_prompt_tokens: correction.apply(sent_estimate),
            client_prompt_tokens: correction.apply(request.fixed_tokens + counts.total()),
            client_fixed_tokens: correction.apply(request.fixed_tokens),
        })
    }
}

/// What a pass keeps in memory for its session between passes, lent to one pass.
struct Kept<'a> {
    index: &'a mut FingerprintIndex,
    counts: &'a PartTokens,
    rows: &'a mut KeptRows,
    rendered: &'a mut RenderedTail,
}

/// The prompt layout the breakpoint planner needs: blocks per message, thinking unmarkable.
pub(crate) fn layout_of(system_blocks: usize, messages: &[Arc<Message>]) -> PromptLayout {
    let mut layout = PromptLayout::new(
        system_blocks,
        messages.iter().map(|m| m.parts.len()).collect(),
    );
    layout.unmarkable = messages
        .iter()
        .enumerate()
        .flat_map(|(index, message)| {
            message
                .parts
                .iter()
                .enumerate()
                .filter_map(move |(part, content)| {
                    matches!(
                        content,
                        Part::Thinking { .. } | Part::RedactedThinking { .. }
                    )
                    .then_some(BlockSlot::new(index, part))
                })
        })
        .collect::<BTreeSet<_>>();
    layout
}

/// The snake_case name serde gives an enum value (pass kinds, causes, lanes).
fn name_of<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => String::from("unknown"),
    }
}

/// The session's drops as the planner sees them: queued, and landed (replayed every render).
pub(crate) fn load_drops(tx: &WriteTx<'_>, session: &SessionId) -> Result<DropState> {
    Ok(tx.drop_state(session)?)
}

/// The session's tag index: the kept one with this pass's new tags appended when it is
/// still the store's (another writer of the same store, or a conflict, makes it stale: then
/// it is rebuilt from every stored row).
fn kept_tags_or_stored(
    tx: &WriteTx<'_>,
    session: &SessionId,
    kept: Option<TagIndex>,
    assigned: Vec<TagAssignment>,
) -> Result<TagIndex> {
    if let Some(mut tags) = kept
        && tags.try_append(assigned)
        && tags.newest() == tx.newest_tag(session)?
    {
        return Ok(tags);
    }
    Ok(TagIndex::new(tx.tags(session)?))
}
