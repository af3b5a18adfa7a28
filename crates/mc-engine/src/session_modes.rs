//! What a pass does differently per session mode ([`mc_core::SessionMode`]).
//!
//! A primary session and a subagent run the same pass: a subagent differs only in what is
//! never started for it (the historian), so its head never gains compartment history.
//! A session with compaction off runs [`Engine::pass_host_managed`] instead: its raw log is
//! kept (search and expand read it) and its head carries memories, docs, profile and notes,
//! but its messages go up exactly as the client sent them. Nothing is tagged in what the
//! model sees, nothing dropped, excerpted or nudged: the host's own compaction manages the
//! window, and any change of ours to its messages would only fight it.

use std::sync::Arc;

use mc_core::Message;
use mc_core::breakpoints::plan_breakpoints;
use mc_core::pass_plan::{PassInputs, plan_host_managed};
use mc_core::tags::TagIndex;
use mc_store::WriteTx;

use crate::cache_budget::SessionTail;
use crate::error::Result;
use crate::head_memory::{memory_delta, session_project};
use crate::host_tail::HostTail;
use crate::ingest::{Ingested, ingest};
use crate::pass::{Engine, PassOutcome, PassRequest, layout_of};
use crate::pass_end::{finish_pass, head_messages};
use crate::state::load_state;

impl Engine {
    /// Stores the request's messages as every pass does first, gates them until a provider
    /// accepts them (a proxy's engine), and records the session's mode when it changed
    /// (`status` shows it; compaction can be turned off and on again), with the session a
    /// subagent works for.
    pub(crate) fn ingest_request(
        &self,
        tx: &WriteTx<'_>,
        request: &PassRequest<'_>,
        now_ms: i64,
    ) -> Result<Ingested> {
        let ingested = ingest(
            tx,
            request.session,
            request.host,
            request.project,
            request.messages,
            request.chain,
            now_ms,
        )?;
        if self.gate_until_accepted {
            tx.gate_until_accepted(request.session, ingested.previous_count)?;
        }
        let stored = &ingested.session;
        let new_parent = request
            .spawned_by
            .filter(|parent| stored.spawned_by.as_ref() != Some(*parent));
        if stored.mode != request.mode || new_parent.is_some() {
            tx.set_session_mode(request.session, request.mode, new_parent)?;
        }
        Ok(ingested)
    }

    /// The pass of a session whose window the host manages: the head re-renders only when
    /// the cache is dead anyway ([`plan_host_managed`]), and the tail is the client's
    /// messages, unchanged.
    pub(crate) fn pass_host_managed(
        &self,
        request: &PassRequest<'_>,
        now_ms: i64,
    ) -> Result<PassOutcome> {
        let mut counts = self
            .caches
            .part_tokens
            .take(request.session)
            .unwrap_or_default();
        counts.update(request.model, request.messages, request.count_text);
        let tail_tokens = counts.total();
        let kept = match self.caches.tails.take(request.session) {
            Some(SessionTail::Host(tail)) => Some(tail),
            _ => None,
        };
        let (tail, kept) = HostTail::share(kept, request.messages, request.chain);
        let outcome = self
            .store()
            .write_with(|tx| self.host_managed_in(tx, request, now_ms, tail_tokens, &tail));
        self.caches.part_tokens.put(request.session, counts);
        if let (Ok(_), Some(kept)) = (&outcome, kept) {
            self.caches
                .tails
                .put(request.session, SessionTail::Host(kept));
        }
        outcome
    }

    fn host_managed_in(
        &self,
        tx: &WriteTx<'_>,
        request: &PassRequest<'_>,
        now_ms: i64,
        tail_tokens: u64,
        tail: &[Arc<Message>],
    ) -> Result<PassOutcome> {
        let session = request.session;
        let ingested = self.ingest_request(tx, request, now_ms)?;
        let mut state = load_state(tx, session)?.unwrap_or_default();
        let inputs = PassInputs {
            now_ms: request.now_ms,
            last_call_ms: state.last_call_ms,
            ttl: self.config.cache.ttl_for(request.model),
            model_changed: state
                .model
                .as_deref()
                .is_some_and(|model| model != request.model),
            system_changed: state
                .prefix_hash
                .as_deref()
                .is_some_and(|hash| hash != request.prefix_identity),
            operator_flush: request.operator_flush || state.flush_requested,
            head_rendered: state.head_rendered,
            ..PassInputs::default()
        };
        let plan = plan_host_managed(&inputs);
        if plan.may_mutate {
            state.flush_requested = false;
            let project = session_project(tx, session)?;
            let memory = tx.with_knowledge(self.knowledge_source(), |knowledge| {
                memory_delta(knowledge, project, &state, &self.workspaces)
            })?;
            // Nothing is summarised, so the head pins and covers no message: no tags needed.
            let no_tags = TagIndex::new(Vec::new());
            self.refresh_head(tx, &mut state, &plan, request, &no_tags, &memory)?;
        }
        let mut messages = head_messages(&state);
        messages.extend(tail.iter().cloned());
        let breakpoints = plan_breakpoints(
            &layout_of(request.system_blocks, &messages),
            request.client_ttl,
        );
        let seq = tx.next_pass_seq(session)?;
        let estimate = request.fixed_tokens + state.m0_tokens + state.m1_tokens + tail_tokens;
        state.remember_estimate(seq, estimate);
        state.last_pass_messages = Some(ingested.count);
        finish_pass(tx, &mut state, request, &plan, seq, 0)?;
        Ok(PassOutcome {
            seq,
            plan,
            messages,
            breakpoints,
            landed: Vec::new(),
            tokens_removed: 0,
            estimated_prompt_tokens: estimate,
            client_prompt_tokens: request.fixed_tokens + tail_tokens,
            client_fixed_tokens: request.fixed_tokens,
        })
    }
}
