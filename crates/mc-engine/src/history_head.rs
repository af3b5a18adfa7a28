//! The head as the historian's compartments make it: when the raw tail's boundary may move
//! past what compartments now cover, and how `m[0]` and `m[1]` are rendered from them.
//!
//! Publishing compartments never busts (DESIGN §5). The next pass that may change bytes
//! moves the boundary to the end of what they cover: a soft bust shows the new compartments
//! at full detail in `m[1]` (`m[0]` and everything before it stay byte-identical); a hard
//! fold re-renders `m[0]` with every compartment, re-tiered by decay within the history
//! budget, and resets `m[1]` (to the provisional compartment, when the history ends with
//! one: the run that replaces it must find it in `m[1]`). The raw messages behind the
//! boundary stay in the log.
//!
//! The first message of the conversation (the task, and for Claude Code its CLAUDE.md and
//! environment reminders) is pinned verbatim in `m[0]` once the boundary passes it, so the
//! first move past it is a fold.

use std::collections::BTreeSet;

use mc_core::config::Tokens;
use mc_core::head::{
    Compartment, HeadBudgets, HeadDelta, HeadInputs, KeyFile, MemoryChange, OpenNote, PinnedBlock,
    ProjectDoc, fit_docs, render_m0, render_m1,
};
use mc_core::pass_plan::{PassKind, PassPlan};
use mc_core::reduction::{Reshape, excerpt_text};
use mc_core::tags::{TagIndex, TagNo, UnitRef, dropped_placeholder};
use mc_core::{Message, Part, ProjectId, Role, SessionId};
use mc_store::{NoteOwner, NoteStatus, ProfileLine, WriteTx};

use crate::error::Result;
use crate::head_memory::{MemoryDelta, memories_for_fold};
use crate::pass::{CountText, Engine, PassRequest};
use crate::state::EngineState;
use crate::workspace_memory::shared_for_fold;

/// A boundary move the next mutating pass makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Advance {
    /// The new boundary: the first ordinal no compartment covers.
    pub to: u64,
    /// Estimated tokens of `m[1]` once it shows the compartments since `m[0]`.
    pub m1_tokens: u64,
    /// Estimated tokens the move adds to `m[0]` (the first message, pinned when passed).
    pub pinned_tokens: u64,
    /// The move passes the pinned first message: `m[0]`'s own content changes.
    pub pins: bool,
}

/// The move compartments allow now, if any: they cover past the current boundary, and the
/// request still holds every message they cover (a rewound conversation does not).
pub(crate) fn plan_advance(
    tx: &WriteTx<'_>,
    session: &SessionId,
    state: &EngineState,
    messages: &[Message],
    tags: &TagIndex,
    memory_changes: &[MemoryChange],
    count: CountText<'_>,
) -> Result<Option<Advance>> {
    let covered = tx.summarised_until(session)?;
    if covered <= state.boundary || covered > messages.len() as u64 {
        return Ok(None);
    }
    let m1_tokens = m1_tokens_at(tx, session, state, covered, memory_changes, count)?;
    let pins =
        task_ordinal(messages).is_some_and(|task| state.m0_boundary <= task && covered > task);
    let pinned_tokens = if pins {
        pinned_blocks(
            messages,
            covered,
            tags,
            &state.reshape,
            &tx.drop_state(session)?.landed,
        )
        .iter()
        .map(|block| count(&block.text))
        .sum()
    } else {
        0
    };
    Ok(Some(Advance {
        to: covered,
        m1_tokens,
        pinned_tokens,
        pins,
    }))
}

impl Engine {
    /// The project docs the fold's `m[0]` shows: the request's, within the docs budget;
    /// none when the docs are turned off.
    fn docs_for_fold(&self, request: &PassRequest<'_>) -> Vec<ProjectDoc> {
        let settings = &self.config.project_docs;
        if !settings.enabled {
            return Vec::new();
        }
        let budget = settings.budget_tokens(request.usable_window.map(Tokens));
        fit_docs(request.project_docs, budget, &|text| {
            (request.count_text)(text)
        })
    }

    /// The user's profile as a fold shows it, after promoting the observations the historian
    /// saw `dreamer.user_profile_promotion_sightings` times (a write in the pass's own
    /// transaction, on a pass that may change bytes anyway).
    fn profile_lines(
        &self,
        tx: &WriteTx<'_>,
        request: &PassRequest<'_>,
    ) -> Result<Vec<ProfileLine>> {
        let sightings = u64::from(self.config.dreamer.user_profile_promotion_sightings);
        let now_ms = i64::try_from(request.now_ms).unwrap_or(i64::MAX);
        tx.promote_observations(sightings, now_ms)?;
        Ok(tx.profile_lines(false)?)
    }

    /// Re-renders what the plan's kind allows, from the compartments before
    /// `state.boundary`: a hard fold rebuilds `m[0]` (pinned first message, decayed history)
    /// and resets `m[1]`; a soft bust re-renders `m[1]` with the compartments since `m[0]`.
    /// Memories and project docs join when they exist.
    pub(crate) fn refresh_head(
        &self,
        tx: &WriteTx<'_>,
        state: &mut EngineState,
        plan: &PassPlan,
        request: &PassRequest<'_>,
        tags: &TagIndex,
        memory: &MemoryDelta,
    ) -> Result<()> {
        let (session, messages, count) = (request.session, request.messages, request.count_text);
        match plan.kind {
            PassKind::HardFold => {
                let mut compartments = delta_compartments(tx, session, 0, state.boundary)?;
                // A provisional compartment is about to be replaced: it goes to `m[1]`.
                let provisional = tx
                    .provisional_start(session)?
                    .filter(|&start| start < state.boundary);
                let m1 = match provisional {
                    Some(start) => {
                        let at = compartments
                            .iter()
                            .position(|compartment| compartment.start_ordinal >= start)
                            .unwrap_or(compartments.len());
                        compartments.split_off(at)
                    }
                    None => Vec::new(),
                };
                let landed = tx.drop_state(session)?.landed;
                let pinned = pinned_blocks(messages, state.boundary, tags, &state.reshape, &landed);
                let ((memories, memory_log), (shared, shared_log)) =
                    tx.with_knowledge(self.knowledge_source(), |knowledge| {
                        Ok::<_, crate::error::EngineError>((
                            memories_for_fold(knowledge, memory.project.as_ref())?,
                            shared_for_fold(knowledge, &memory.shared)?,
                        ))
                    })?;
                let docs = self.docs_for_fold(request);
                // Pinned by the dreamer in the background: read only here, when the head is
                // rebuilt anyway, so a new pin never causes a bust of its own.
                let key_files: Vec<KeyFile> = match memory.project.as_ref() {
                    Some(project) => tx
                        .key_files(project)?
                        .into_iter()
                        .map(|pinned| pinned.file)
                        .collect(),
                    None => Vec::new(),
                };
                let profile = self.profile_lines(tx, request)?;
                let profile_texts: Vec<String> =
                    profile.iter().map(|line| line.text.clone()).collect();
                let earlier = tx.earlier_conversation(session)?.map(|row| row.text);
                let inputs = HeadInputs {
                    pinned: &pinned,
                    project_docs: &docs,
                    key_files: &key_files,
                    profile: &profile_texts,
                    earlier: earlier.as_deref(),
                    compartments: &compartments,
                    memories: &memories,
                    shared_memories: &shared,
                };
                let budgets =
                    HeadBudgets::from_config(&self.config, request.usable_window.map(Tokens));
                let head = render_m0(&inputs, budgets, &|text| count(text));
                state.m0_tokens = head.tokens.get();
                state.m0 = head.text;
                state.m0_boundary = state.boundary;
                state.m1_from = provisional;
                state.m0_memory_log = memory_log;
                state.m0_memory_ids = head.memory_ids;
                state.m0_shared_memory_ids = head.shared_memory_ids;
                state.m0_shared_memory_log = shared_log;
                state.m0_docs_hash = docs_hash(&docs);
                state.m0_profile_ids = profile.iter().map(|line| line.id).collect();
                let notes = open_notes(tx, session, memory.project.as_ref())?;
                state.m1 = render_m1(&HeadDelta {
                    compartments: &m1,
                    notes: &notes,
                    ..HeadDelta::default()
                });
                state.m1_tokens = count(&state.m1);
                state.head_rendered = true;
                state.head_rebuild_requested = false;
            }
            PassKind::SoftBust => {
                let delta = delta_compartments(tx, session, m1_from(state), state.boundary)?;
                let notes = open_notes(tx, session, memory.project.as_ref())?;
                let new_profile: Vec<String> = self
                    .profile_lines(tx, request)?
                    .into_iter()
                    .filter(|line| !state.m0_profile_ids.contains(&line.id))
                    .map(|line| line.text)
                    .collect();
                state.m1 = render_m1(&HeadDelta {
                    compartments: &delta,
                    memory_changes: &memory.changes,
                    profile: &new_profile,
                    notes: &notes,
                });
                state.m1_tokens = count(&state.m1);
            }
            PassKind::CacheHit => {}
        }
        Ok(())
    }
}

/// Estimated tokens of the `m[1]` a soft bust would render with the raw tail starting at
/// `boundary`: the compartments since `m[0]` up to it, and the memory changes since `m[0]`.
pub(crate) fn m1_tokens_at(
    tx: &WriteTx<'_>,
    session: &SessionId,
    state: &EngineState,
    boundary: u64,
    memory_changes: &[MemoryChange],
    count: CountText<'_>,
) -> Result<u64> {
    let delta = delta_compartments(tx, session, m1_from(state), boundary)?;
    Ok(count(&render_m1(&HeadDelta {
        compartments: &delta,
        memory_changes,
        ..HeadDelta::default()
    })))
}

/// The notes `m[1]` lists: the session's open notes and the project's smart notes whose
/// condition came true (both stored `active`), so they come back on the next rebuild
/// without the agent asking.
fn open_notes(
    tx: &WriteTx<'_>,
    session: &SessionId,
    project: Option<&ProjectId>,
) -> Result<Vec<OpenNote>> {
    let owner = NoteOwner {
        session: Some(session),
        project,
    };
    Ok(tx
        .notes(owner)?
        .into_iter()
        .filter(|note| note.status == NoteStatus::Active)
        .map(|note| OpenNote {
            id: note.id,
            content: note.content,
        })
        .collect())
}

/// Where `m[1]`'s compartments start.
fn m1_from(state: &EngineState) -> u64 {
    state.m1_from.unwrap_or(state.m0_boundary)
}

/// The compartments ending at or after `from` and before `until`.
fn delta_compartments(
    tx: &WriteTx<'_>,
    session: &SessionId,
    from: u64,
    until: u64,
) -> Result<Vec<Compartment>> {
    let mut compartments = tx.compartments_from(session, from)?;
    compartments.retain(|compartment| compartment.end_ordinal < until);
    Ok(compartments)
}

/// The ordinal of the conversation's first user message (the task).
pub(crate) fn task_ordinal(messages: &[Message]) -> Option<u64> {
    messages
        .iter()
        .position(|message| message.role == Role::User)
        .map(|index| index as u64)
}

/// Whether `m[0]` pins `message` (at `ordinal`) once the boundary passes it: the task
/// (the conversation's first user message, at `task`) and every system-role message.
pub(crate) fn is_pinned(message: &Message, ordinal: u64, task: Option<u64>) -> bool {
    message.role == Role::System || Some(ordinal) == task
}

/// What `m[0]` keeps verbatim of the messages behind `boundary`: the first user message's
/// texts, and every system-role message (client instructions given mid-conversation), each
/// text as the tail showed it: a text too large for the window was already an excerpt there,
/// and pinning it whole would put it back in every request; a text whose drop landed (the
/// agent's `ctx_reduce`, the operator's `reduce`) stays its placeholder, or the drop would
/// undo itself once history covers the message.
fn pinned_blocks(
    messages: &[Message],
    boundary: u64,
    tags: &TagIndex,
    reshape: &Reshape,
    landed: &BTreeSet<TagNo>,
) -> Vec<PinnedBlock> {
    let task = task_ordinal(messages);
    messages
        .iter()
        .enumerate()
        .take(usize::try_from(boundary).unwrap_or(usize::MAX))
        .filter(|&(index, message)| is_pinned(message, index as u64, task))
        .filter_map(|(index, message)| {
            let texts: Vec<String> = message
                .parts
                .iter()
                .enumerate()
                .filter_map(|(part, content)| match content {
                    Part::Text { text, .. } => {
                        let unit = UnitRef {
                            ordinal: index as u64,
                            part: u32::try_from(part).unwrap_or(u32::MAX),
                        };
                        let shown = tags.tag_of(unit).and_then(|tag| {
                            if landed.contains(&tag) {
                                return Some(dropped_placeholder(tag));
                            }
                            reshape
                                .excerpts
                                .get(&tag)
                                .map(|&keep| excerpt_text(text, tag, keep))
                        });
                        Some(shown.unwrap_or_else(|| text.clone()))
                    }
                    _ => None,
                })
                .collect();
            (!texts.is_empty()).then(|| PinnedBlock {
                source_ordinal: index as u64,
                text: texts.join("\n\n"),
            })
        })
        .collect()
}

/// A hash of the docs as `m[0]` shows them; empty when it shows none.
fn docs_hash(docs: &[ProjectDoc]) -> String {
    if docs.is_empty() {
        return String::new();
    }
    let mut hasher = blake3::Hasher::new();
    for doc in docs {
        hasher.update(doc.name.as_bytes());
        hasher.update(&[0]);
        hasher.update(doc.text.as_bytes());
        hasher.update(&[0]);
    }
    hasher.finalize().to_hex()[..16].to_owned()
}
