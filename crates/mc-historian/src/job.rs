//! Finding the next chunk of a session to summarise, and the request that asks for it.
//!
//! Reads only stored rows (the raw log, tags, landed drops and compartments), in one read
//! transaction, and never more of the log than the unsummarised part: the boundary is where
//! the session's compartments end (a rebuild's: where its staged ones end), which is always
//! between a tool result and the next call.

use std::collections::BTreeSet;

use mc_core::historian::{
    Chunk, HISTORIAN_SYSTEM, StorySoFar, eligible_chunk, historian_user_message, history_tool,
    live_tail_start, render_transcript, starts_a_turn, trigger_tokens,
};
use mc_core::tags::{TagIndex, TagNo};
use mc_core::{Message, ProjectId, Role, SessionId};
use mc_llm::StructuredRequest;
use mc_store::{KnowledgeSource, MemoryStatus, Store, StoredMessage, history_scope};

use crate::error::Result;
use crate::settings::HistorianSettings;

/// The output budget of one answer: four tiers for several compartments.
const ANSWER_MAX_TOKENS: u32 = 8_192;

/// Where a job's compartments are published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    /// The session's history: the next pass that may change bytes moves its boundary past
    /// them.
    History,
    /// A rebuild's staging area (`recomp`): swapped in whole once it reaches the end of the
    /// history it replaces.
    Staging,
}

/// One run's work: the chunk, the messages it covers, and the request for the model.
#[derive(Debug, Clone)]
pub struct Job {
    /// The session.
    pub session: SessionId,
    /// The ordinals to summarise.
    pub chunk: Chunk,
    /// The chunk's messages with their ordinals and storage times, in order.
    pub messages: Vec<(u64, Message, i64)>,
    /// The session's first user message (pinned in the head, so never quoted).
    pub task_ordinal: Option<u64>,
    /// Where the run's facts and observations are merged (the project, else the session).
    pub scope: String,
    /// The session's project: its facts become the project's memories when published.
    pub project: Option<ProjectId>,
    /// What the model is asked.
    pub request: StructuredRequest,
    /// Where its compartments go.
    pub destination: Destination,
    /// The answer's last compartment is final, not left open: the chunk ends where the range
    /// the job reads ends and the settings close that range
    /// ([`HistorianSettings::closes_range`]), or the message right after the chunk is the
    /// user typing again, which ends the episode whatever the model would have guessed from
    /// inside the chunk.
    pub closed: bool,
    /// The token budget cut the chunk before the end of the history it may read: more
    /// follows, so an answer of one compartment left open would be asked again for the same
    /// chunk forever.
    pub cut_short: bool,
    /// Where the destination's compartments ended when the job was read; a publish that
    /// finds them ending elsewhere was overtaken by another run.
    pub history_until: u64,
    /// Where the project's memories live, so its facts are promoted there.
    pub knowledge: KnowledgeSource,
}

impl Job {
    /// The chunk starts with the provisional compartment's range, read again (it starts
    /// before the history ends): publishing replaces that compartment.
    pub fn rereads_provisional(&self) -> bool {
        self.chunk.start < self.history_until
    }
}

/// The next job of `session`, or `None` when its unsummarised history outside the live tail
/// has not reached the trigger, or its usage is below where runs start
/// ([`HistorianSettings::start_usage_percent`]). `usage_percent` is the session's latest usage
/// of its usable window; near the execute threshold the trigger is lower.
pub fn next_job(
    store: &Store,
    session: &SessionId,
    settings: &HistorianSettings,
    usage_percent: u64,
    count: &dyn Fn(&str) -> u64,
) -> Result<Option<Job>> {
    if usage_percent < settings.start_usage_percent {
        return Ok(None);
    }
    let trigger = trigger_tokens(
        settings.trigger_tokens,
        usage_percent,
        settings.execute_percent,
    );
    find_job(
        store,
        session,
        settings,
        Want::Unsummarised { trigger },
        count,
    )
}

/// The next job of a rebuild of `session`'s compartments, or `None` once the staged ones
/// reach where the compartments in use end. It reads from the staged end (so an
/// interrupted rebuild resumes there) up to that end, whatever the trigger and the live
/// tail, and publishes to the staging area.
pub fn next_rebuild_job(
    store: &Store,
    session: &SessionId,
    settings: &HistorianSettings,
    count: &dyn Fn(&str) -> u64,
) -> Result<Option<Job>> {
    find_job(store, session, settings, Want::Rebuild, count)
}

/// Which history a job reads.
#[derive(Debug, Clone, Copy)]
enum Want {
    /// From the history's end to the live tail, once it weighs `trigger` tokens.
    Unsummarised { trigger: u64 },
    /// From the staged end to the history's end.
    Rebuild,
}

fn find_job(
    store: &Store,
    session: &SessionId,
    settings: &HistorianSettings,
    want: Want,
    count: &dyn Fn(&str) -> u64,
) -> Result<Option<Job>> {
    let Some(mut read) = store.read(|tx| {
        let Some(record) = tx.get_session(session)? else {
            return Ok(None);
        };
        let tags = TagIndex::new(tx.tags(session)?);
        // A provisional compartment is read again with what followed it: the job starts
        // where it starts.
        let (history_until, provisional) = match want {
            Want::Unsummarised { .. } => (
                tx.summarised_until(session)?,
                tx.provisional_start(session)?,
            ),
            Want::Rebuild => (tx.staged_until(session)?, None),
        };
        let boundary = provisional.unwrap_or(history_until);
        let limit = match want {
            Want::Unsummarised { .. } => {
                let Some(live_from) = live_tail_start(&tags, settings.live_tail_tags) else {
                    return Ok(None);
                };
                live_from
            }
            Want::Rebuild => tx.summarised_until(session)?,
        };
        if limit <= boundary {
            return Ok(None);
        }
        let task_ordinal = tx
            .messages(session, 0..TASK_SEARCH)?
            .into_iter()
            .find(|row| row.message.role == Role::User)
            .map(|row| row.ordinal);
        Ok(Some(Gathered {
            scope: history_scope(session, record.project.as_ref().map(|p| p.as_str())),
            project: record.project.clone(),
            boundary,
            history_until,
            limit,
            // Past the limit too: a call just before it may be answered just after it, and
            // a chunk must not end between them.
            stored: tx.messages(session, boundary..)?,
            accepted: tx.accepted_messages(session)?,
            task_ordinal,
            landed: tx.drop_state(session)?.landed,
            tags,
            episodes: tx
                .compartments(session)?
                .into_iter()
                .map(|c| {
                    let line = format!("{}-{} {}", c.start_ordinal, c.end_ordinal, c.title);
                    (c.end_ordinal, line)
                })
                .collect(),
            memories: match &record.project {
                Some(project) => tx
                    .with_knowledge(settings.knowledge, |knowledge| {
                        knowledge
                            .memories(project, &[MemoryStatus::Active, MemoryStatus::Permanent])
                    })?
                    .into_iter()
                    .map(|memory| {
                        let record = memory.record;
                        format!("[{}] {}", record.category.as_str(), record.content)
                    })
                    .collect(),
                None => Vec::new(),
            },
        }))
    })?
    else {
        return Ok(None);
    };
    // Sizes as a prompt pays for them, by offset from the boundary.
    let mut sizes: Vec<u64> = read
        .stored
        .iter()
        .map(|row| message_tokens(&row.message, count))
        .collect();
    if matches!(want, Want::Unsummarised { .. }) {
        settle_a_full_provisional(&mut read, &mut sizes, settings.max_chunk_tokens);
    }
    let messages: Vec<&Message> = read.stored.iter().map(|row| &row.message).collect();
    let limit = match want {
        Want::Unsummarised { .. } => read
            .limit
            .max(read.boundary + bounded_live_tail(&sizes, settings.live_tail_max_tokens)),
        Want::Rebuild => read.limit,
    };
    // Messages no provider accepted yet (anything can reach the proxy's port) are not
    // summarised into history and memories; they are read again once a call carrying them
    // succeeds. A run starts as its call goes upstream, so this is usually all but the
    // call's own new messages, which the live tail keeps raw anyway.
    let limit = read.accepted.map_or(limit, |accepted| limit.min(accepted));
    let Some(span) = limit.checked_sub(read.boundary).filter(|&span| span > 0) else {
        return Ok(None);
    };
    sizes.truncate(usize::try_from(span).unwrap_or(usize::MAX));
    let size = |offset: u64| {
        usize::try_from(offset)
            .ok()
            .and_then(|index| sizes.get(index))
            .copied()
            .unwrap_or(0)
    };
    let owned: Vec<Message> = messages.into_iter().cloned().collect();
    let (trigger, destination) = match want {
        Want::Unsummarised { trigger } => (trigger, Destination::History),
        Want::Rebuild => (0, Destination::Staging),
    };
    // A provisional compartment read again as soon as a message or two follow it would come
    // back as the same open episode. So what follows it must reach the trigger first, and the
    // chunk reads that much past it (always past its end, whatever the budget).
    let mut max_chunk_tokens = settings.max_chunk_tokens;
    let mut reach = 0;
    let rereads_provisional = read.boundary < read.history_until;
    if rereads_provisional {
        let tokens_between = |from: u64, to: u64| -> u64 {
            (from..to)
                .map(|ordinal| size(ordinal.saturating_sub(read.boundary)))
                .sum()
        };
        if tokens_between(read.history_until, limit) < trigger {
            return Ok(None);
        }
        let read_before = tokens_between(read.boundary, read.history_until);
        max_chunk_tokens = max_chunk_tokens.max(read_before.saturating_add(trigger));
        reach = read.history_until - read.boundary;
    }
    let chunk_in = |max_tokens| eligible_chunk(&owned, 0, span, trigger, max_tokens, reach, &size);
    let Some(relative) = chunk_in(max_chunk_tokens) else {
        return Ok(None);
    };
    // A re-read must reach past the provisional compartment, or its answer could cover less
    // than the history already does.
    if rereads_provisional && read.boundary + relative.end < read.history_until {
        return Ok(None);
    }
    // Whether no later clean end lies before the limit: only the token budget could have
    // cut the chunk shorter.
    let reaches_limit = chunk_in(u64::MAX).is_some_and(|whole| whole.end == relative.end);
    let chunk = Chunk {
        start: read.boundary + relative.start,
        end: read.boundary + relative.end,
    };
    let user_speaks_next = read
        .stored
        .iter()
        .find(|row| row.ordinal == chunk.end + 1)
        .is_some_and(|row| starts_a_turn(&row.message));
    let rows: Vec<(u64, Message, i64)> = read
        .stored
        .into_iter()
        .filter(|row| row.ordinal <= chunk.end)
        .map(|row| (row.ordinal, row.message, row.created_ms))
        .collect();
    // The episodes before the chunk: a provisional one read again is part of it.
    let episodes: Vec<String> = read
        .episodes
        .iter()
        .filter(|(end, _)| *end < chunk.start)
        .map(|(_, line)| line.clone())
        .collect();
    let story = StorySoFar {
        episodes: &episodes,
        memories: &read.memories,
    };
    let request = request_for(chunk, &rows, &read.tags, &read.landed, story);
    Ok(Some(Job {
        session: session.clone(),
        chunk,
        messages: rows,
        task_ordinal: read.task_ordinal,
        scope: read.scope,
        project: read.project,
        request,
        destination,
        closed: (settings.closes_range && reaches_limit) || user_speaks_next,
        cut_short: !reaches_limit,
        history_until: read.history_until,
        knowledge: settings.knowledge,
    }))
}

/// Takes a provisional compartment that already spans `max_chunk_tokens` as final: the job
/// reads on from its end instead of reading it again (publishing settles it). An episode
/// that never ends (an agent working alone for hours) would otherwise be read again whole
/// every trigger's worth: the historian's input growing with the square of its length, and
/// its transcript outgrowing the model's window in the end. `sizes` are by offset from the
/// boundary, and are shifted with it.
fn settle_a_full_provisional(read: &mut Gathered, sizes: &mut Vec<u64>, max_chunk_tokens: u64) {
    let Ok(skip) = usize::try_from(read.history_until.saturating_sub(read.boundary)) else {
        return;
    };
    if skip == 0 || sizes.iter().take(skip).sum::<u64>() < max_chunk_tokens {
        return;
    }
    read.boundary = read.history_until;
    read.stored.retain(|row| row.ordinal >= read.history_until);
    sizes.drain(..skip.min(sizes.len()));
}

/// How far into the log the first user message (the task) is looked for.
const TASK_SEARCH: u64 = 8;

/// What one read transaction gathers for a job: the log from `boundary` on, of which the
/// messages before `limit` may be summarised.
struct Gathered {
    scope: String,
    project: Option<ProjectId>,
    boundary: u64,
    /// Where the destination's compartments end (past `boundary` when the last one is
    /// provisional and read again).
    history_until: u64,
    limit: u64,
    stored: Vec<StoredMessage>,
    /// The leading messages a provider accepted (`None`: all of them).
    accepted: Option<u64>,
    task_ordinal: Option<u64>,
    landed: BTreeSet<TagNo>,
    tags: TagIndex,
    /// The session's episodes (their last ordinal, and `START-END title`), oldest first.
    episodes: Vec<(u64, String)>,
    /// The project's live memories, as `[CATEGORY] content`.
    memories: Vec<String>,
}

/// Messages at the log's end that always stay raw, whatever their size: the turn in flight.
const MIN_LIVE_MESSAGES: usize = 2;

/// The offset (from the boundary) where a live tail of at most `max_tokens` starts, given
/// the sizes of every message from the boundary to the log's end: the newest
/// [`MIN_LIVE_MESSAGES`] always, then older ones while they fit.
fn bounded_live_tail(sizes: &[u64], max_tokens: u64) -> u64 {
    let mut used = 0_u64;
    let mut start = sizes.len();
    for (index, &size) in sizes.iter().enumerate().rev() {
        used = used.saturating_add(size);
        if sizes.len() - index > MIN_LIVE_MESSAGES && used > max_tokens {
            break;
        }
        start = index;
    }
    start as u64
}

/// A message's estimated tokens: its parts as JSON, close enough to what a prompt pays.
fn message_tokens(message: &Message, count: &dyn Fn(&str) -> u64) -> u64 {
    serde_json::to_string(&message.parts).map_or(0, |json| count(&json))
}

/// The model request for `chunk`: the transcript of its messages with dropped units marked.
fn request_for(
    chunk: Chunk,
    rows: &[(u64, Message, i64)],
    tags: &TagIndex,
    landed: &BTreeSet<TagNo>,
    story: StorySoFar<'_>,
) -> StructuredRequest {
    let indexed: Vec<(u64, &Message)> = rows
        .iter()
        .map(|(ordinal, message, _)| (*ordinal, message))
        .collect();
    let transcript = render_transcript(&indexed, tags, landed);
    StructuredRequest {
        system: HISTORIAN_SYSTEM.to_owned(),
        user: historian_user_message(chunk, &transcript, story),
        tool: history_tool(),
        max_tokens: ANSWER_MAX_TOKENS,
    }
}
