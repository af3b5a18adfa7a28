//! Search results as the caller sees them: what was found, where (ordinals to pass to
//! `ctx_expand`), a preview, and the score; with what the asking session already sees left out.

use std::collections::HashMap;

use mc_core::search::{Fused, Source};
use mc_core::workspace::SharedSource;
use mc_core::{ProjectId, Role, SessionId};
use mc_store::{ProjectKnowledge, ReadTx, StoredMemory};
use serde::Serialize;

use crate::history_head::is_pinned;

use super::preview::{commit_preview, compartment_preview, message_preview};
use super::{Found, ItemKey, SearchRequest, memory_project};

/// Where a hit lives.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HitPlace {
    /// Messages `start..=end` of a session (one message: start = end).
    Messages {
        /// The session.
        session: SessionId,
        /// First ordinal.
        start: u64,
        /// Last ordinal.
        end: u64,
    },
    /// A git commit of the project.
    Commit {
        /// Its hash.
        sha: String,
        /// Its author.
        author: String,
    },
    /// A project memory.
    Memory {
        /// Its id.
        id: u64,
        /// Its category.
        category: String,
        /// The root of the project that owns it, when another project of the asker's
        /// workspaces shares it (read-only to the asker); absent for the asker's own.
        #[serde(skip_serializing_if = "Option::is_none")]
        shared_by: Option<String>,
    },
    /// An agent note (`ctx_note`) of the project.
    Note {
        /// Its id.
        id: u64,
    },
}

impl std::fmt::Display for HitPlace {
    /// Where a hit lives, as the command line and the agent's tool both print it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Messages {
                session,
                start,
                end,
            } if start == end => write!(f, "session {session}, message {start}"),
            Self::Messages {
                session,
                start,
                end,
            } => write!(f, "session {session}, messages {start}-{end}"),
            Self::Memory {
                id,
                category,
                shared_by: None,
            } => write!(f, "memory {id} ({category})"),
            Self::Memory {
                id,
                category,
                shared_by: Some(root),
            } => write!(f, "memory {id} ({category}, shared by {root}, read-only)"),
            Self::Note { id } => write!(f, "note {id}"),
            Self::Commit { sha, author } => {
                write!(f, "commit {} by {author}", sha.get(..12).unwrap_or(sha))
            }
        }
    }
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    /// Where it came from.
    pub source: &'static str,
    /// Where it lives.
    pub place: HitPlace,
    /// When it happened (a message's time, a compartment's end, a memory's last change),
    /// unix milliseconds.
    pub at_ms: i64,
    /// The fused score; only the order means anything.
    pub score: f64,
    /// Found by full-text search.
    pub full_text: bool,
    /// Found by semantic search.
    pub semantic: bool,
    /// A short excerpt around the match.
    pub preview: String,
}

/// Turns fused items into hits, best first: looks up what each is, leaves out what the
/// viewer sees and messages no provider accepted, and stops at the limit.
pub(super) fn materialise(
    tx: &ReadTx<'_>,
    request: &SearchRequest,
    fused: &[Fused<ItemKey>],
    found: &Found,
) -> mc_store::Result<Vec<SearchHit>> {
    let places = &found.places;
    let visible = Visible::of(tx, request.viewer.as_ref())?;
    let mut accepted: HashMap<SessionId, Option<u64>> = HashMap::new();
    let terms = mc_core::search::fts_query(&request.query)
        .map(|query| query.terms)
        .unwrap_or_default();
    let mut hits = Vec::new();
    for item in fused {
        if hits.len() == request.limit {
            break;
        }
        let hit = match &item.key {
            ItemKey::Message(hash) => {
                let Some(place) = places.get(hash) else {
                    continue;
                };
                if visible.shows(&place.session, place.ordinal) {
                    continue;
                }
                // Full-text hits are accepted messages already; embeddings are made of every
                // stored message, so a vector hit is checked here.
                let accepted_count = match accepted.get(&place.session) {
                    Some(&count) => count,
                    None => {
                        let count = tx.accepted_messages(&place.session)?;
                        accepted.insert(place.session.clone(), count);
                        count
                    }
                };
                if accepted_count.is_some_and(|count| place.ordinal >= count) {
                    continue;
                }
                let Some(stored) = tx
                    .messages(&place.session, place.ordinal..=place.ordinal)?
                    .into_iter()
                    .next()
                else {
                    continue;
                };
                SearchHit {
                    source: Source::Message.as_str(),
                    place: HitPlace::Messages {
                        session: place.session.clone(),
                        start: place.ordinal,
                        end: place.ordinal,
                    },
                    at_ms: place.created_ms,
                    score: item.score,
                    full_text: item.full_text,
                    semantic: item.semantic,
                    preview: message_preview(&stored.message, &terms),
                }
            }
            ItemKey::Compartment(session, start) => {
                let Some(compartment) = tx
                    .compartments_from(session, *start)?
                    .into_iter()
                    .find(|compartment| compartment.start_ordinal == *start)
                else {
                    continue;
                };
                SearchHit {
                    source: Source::Compartment.as_str(),
                    place: HitPlace::Messages {
                        session: session.clone(),
                        start: compartment.start_ordinal,
                        end: compartment.end_ordinal,
                    },
                    at_ms: i64::try_from(compartment.end_ms).unwrap_or(i64::MAX),
                    score: item.score,
                    full_text: item.full_text,
                    semantic: item.semantic,
                    preview: compartment_preview(&compartment),
                }
            }
            ItemKey::Commit(sha) => {
                let Some(commit) = found.commits.get(sha) else {
                    continue;
                };
                let message = if commit.body.trim().is_empty() {
                    commit.subject.clone()
                } else {
                    format!("{}: {}", commit.subject, commit.body)
                };
                SearchHit {
                    source: Source::Commit.as_str(),
                    place: HitPlace::Commit {
                        sha: commit.sha.clone(),
                        author: commit.author.clone(),
                    },
                    at_ms: commit.committed_ms,
                    score: item.score,
                    full_text: item.full_text,
                    semantic: item.semantic,
                    preview: commit_preview(&message),
                }
            }
            ItemKey::Note(id) => {
                let Some(project) = memory_project(request) else {
                    continue;
                };
                let Some(note) = tx.project_note(project, *id)? else {
                    continue;
                };
                SearchHit {
                    source: Source::Note.as_str(),
                    place: HitPlace::Note { id: *id },
                    at_ms: note.updated_ms,
                    score: item.score,
                    full_text: item.full_text,
                    semantic: item.semantic,
                    preview: note.content,
                }
            }
            ItemKey::Memory(id) => {
                let Some(project) = memory_project(request) else {
                    continue;
                };
                let found = tx.with_knowledge(request.knowledge, |knowledge| {
                    find_memory(knowledge, project, &request.shared, *id)
                })?;
                let Some((memory, shared_by)) = found else {
                    continue;
                };
                // Retired memories keep their vectors until re-embedding; they are not hits.
                if memory.record.status == mc_store::MemoryStatus::Archived {
                    continue;
                }
                SearchHit {
                    source: Source::Memory.as_str(),
                    place: HitPlace::Memory {
                        id: *id,
                        category: memory.record.category.as_str().to_owned(),
                        shared_by,
                    },
                    at_ms: memory.record.updated_ms,
                    score: item.score,
                    full_text: item.full_text,
                    semantic: item.semantic,
                    preview: memory.record.content,
                }
            }
        };
        hits.push(hit);
    }
    Ok(hits)
}

/// Memory `id` of `project`, or of a project sharing it through a workspace (in a shared
/// category), with that project's root.
fn find_memory(
    tx: &dyn ProjectKnowledge,
    project: &ProjectId,
    shared: &[SharedSource],
    id: u64,
) -> mc_store::Result<Option<(StoredMemory, Option<String>)>> {
    if let Some(memory) = tx.memory(project, id)? {
        return Ok(Some((memory, None)));
    }
    for source in shared {
        if let Some(memory) = tx.memory(&source.project, id)?
            && source.shares(memory.record.category)
        {
            return Ok(Some((memory, Some(source.root.clone()))));
        }
    }
    Ok(None)
}

/// What the asking session's live context shows: its raw messages from the head's boundary
/// on, and the messages `m[0]` pins verbatim behind it (the task, system-role messages at
/// the conversation's start), except those whose every tagged part was dropped (a
/// placeholder shows nothing of them).
struct Visible {
    session: Option<SessionId>,
    boundary: u64,
    pinned: std::collections::HashSet<u64>,
    dropped_messages: std::collections::HashSet<u64>,
}

/// How far into a conversation pinned messages are looked for: clients put their task and
/// their system-role instructions in the first few messages, and reading further would
/// cost every search a scan of the log. A system-role message later than this is still
/// pinned; a search may then return it although `m[0]` shows it.
const PINNED_SEARCH: u64 = 16;

impl Visible {
    fn of(tx: &ReadTx<'_>, viewer: Option<&SessionId>) -> mc_store::Result<Self> {
        let Some(session) = viewer else {
            return Ok(Self {
                session: None,
                boundary: u64::MAX,
                pinned: Default::default(),
                dropped_messages: Default::default(),
            });
        };
        let boundary = crate::EngineState::read(tx, session)?.map_or(0, |state| state.boundary);
        let first = tx.messages(session, 0..boundary.min(PINNED_SEARCH))?;
        let task = first
            .iter()
            .find(|row| row.message.role == Role::User)
            .map(|row| row.ordinal);
        let pinned = first
            .iter()
            .filter(|row| is_pinned(&row.message, row.ordinal, task))
            .map(|row| row.ordinal)
            .collect();
        let dropped: std::collections::HashSet<_> = tx
            .drops(session)?
            .into_iter()
            .filter(|row| row.landed_pass.is_some())
            .map(|row| row.tag)
            .collect();
        let mut parts_per_message: HashMap<u64, (usize, usize)> = HashMap::new();
        for assignment in tx.tags(session)? {
            let entry = parts_per_message
                .entry(assignment.unit.ordinal)
                .or_default();
            entry.0 += 1;
            if dropped.contains(&assignment.tag) {
                entry.1 += 1;
            }
        }
        let dropped_messages = parts_per_message
            .into_iter()
            .filter(|(_, (parts, dropped))| parts == dropped)
            .map(|(ordinal, _)| ordinal)
            .collect();
        Ok(Self {
            session: Some(session.clone()),
            boundary,
            pinned,
            dropped_messages,
        })
    }

    fn shows(&self, session: &SessionId, ordinal: u64) -> bool {
        self.session.as_ref() == Some(session)
            && (ordinal >= self.boundary || self.pinned.contains(&ordinal))
            && !self.dropped_messages.contains(&ordinal)
    }
}
