//! The `<shared-memory>` elements: what the other projects of the session's workspaces
//! share with it, read-only, after the project's own memories.
//!
//! They live in the same memory budget as `<project-memory>` and take only what the own
//! memories left of it, so adding a workspace can never push one of the project's own facts
//! out of `m[0]`; when the room is short the shared memories are the ones left out (they
//! stay reachable through search). Within that room they are admitted by the same rank as
//! own memories (permanent, most often stated, newest), across every source project at
//! once, each when it still fits. A source's element costs its opening and closing lines
//! once, a category its heading once per source.
//!
//! One element per source project, ordered by the project's root, then the workspace:
//! `<shared-memory workspace="NAME" project="ROOT">`, then `## CATEGORY` groups and
//! `- #ID content` items exactly as in `<project-memory>`, then `</shared-memory>`. The
//! root is the folder the user configured, which is how they (and the model) know the
//! project; ids are the store's, unique across projects, so `ctx_memory get` reads them.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::memory::{category_line, memory_line, render_grouped};
use super::rows::{Memory, MemoryCategory};

/// The live memories another project shares with the session's project, in the shared
/// categories only (the engine filters them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedMemories {
    /// The workspace that shares them.
    pub workspace: String,
    /// The owning project's root as configured (`~/src/api`): how the prompt names it.
    pub project: String,
    /// Its memories (any order).
    pub memories: Vec<Memory>,
}

/// The shared memories admitted from one source, in rendering order.
#[derive(Debug)]
pub(super) struct SharedShown<'a> {
    source: &'a SharedMemories,
    memories: Vec<&'a Memory>,
}

impl SharedShown<'_> {
    /// The ids shown, in rendering order.
    pub(super) fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.memories.iter().map(|memory| memory.id)
    }
}

fn open_line(source: &SharedMemories) -> String {
    format!(
        "<shared-memory workspace=\"{}\" project=\"{}\">\n",
        source.workspace, source.project
    )
}

const CLOSE: &str = "</shared-memory>";

/// The shared memories that fit in `room_tokens`, grouped by source in rendering order.
pub(super) fn select_shared<'a>(
    sources: &'a [SharedMemories],
    room_tokens: u64,
    count_tokens: &dyn Fn(&str) -> u64,
) -> Vec<SharedShown<'a>> {
    let mut ordered: Vec<&SharedMemories> = sources.iter().collect();
    ordered.sort_by(|a, b| (&a.project, &a.workspace).cmp(&(&b.project, &b.workspace)));
    let mut ranked: Vec<(usize, &Memory)> = ordered
        .iter()
        .enumerate()
        .flat_map(|(index, source)| source.memories.iter().map(move |memory| (index, memory)))
        .collect();
    ranked.sort_by_key(|(index, m)| (std::cmp::Reverse((m.permanent, m.seen_count, m.id)), *index));
    let mut seen_ids = BTreeSet::new();
    ranked.retain(|(_, memory)| seen_ids.insert(memory.id));

    let mut used = 0;
    let mut opened: BTreeSet<usize> = BTreeSet::new();
    let mut headed: BTreeSet<(usize, MemoryCategory)> = BTreeSet::new();
    let mut chosen: Vec<Vec<&Memory>> = vec![Vec::new(); ordered.len()];
    for (index, memory) in ranked {
        let wrapper = if opened.contains(&index) {
            0
        } else {
            count_tokens(&open_line(ordered[index])) + count_tokens(CLOSE)
        };
        let heading = if headed.contains(&(index, memory.category)) {
            0
        } else {
            count_tokens(&category_line(memory.category))
        };
        let cost = wrapper + heading + count_tokens(&memory_line(memory.id, &memory.content));
        if used + cost <= room_tokens {
            used += cost;
            opened.insert(index);
            headed.insert((index, memory.category));
            chosen[index].push(memory);
        }
    }
    ordered
        .into_iter()
        .zip(chosen)
        .filter(|(_, memories)| !memories.is_empty())
        .map(|(source, mut memories)| {
            memories.sort_by_key(|m| (m.category, m.id));
            SharedShown { source, memories }
        })
        .collect()
}

/// One `<shared-memory>` element per source with something shown.
pub(super) fn render_shared(shown: &[SharedShown<'_>]) -> Vec<String> {
    shown
        .iter()
        .map(|group| {
            format!(
                "{}{}{CLOSE}",
                open_line(group.source),
                render_grouped(&group.memories)
            )
        })
        .collect()
}

#[cfg(test)]
#[path = "shared_memory_tests.rs"]
mod tests;
