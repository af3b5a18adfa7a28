//! `m[0]`: the frozen baseline, re-rendered only on a hard fold.

use crate::config::{Config, Tokens};

use super::decay::DetailTier;
use super::history::decay_history;
use super::key_files::render_key_files;
use super::memory::{render_memory_section, select_memories};
use super::rows::{Compartment, KeyFile, Memory, PinnedBlock, ProjectDoc};
use super::shared_memory::{SharedMemories, render_shared, select_shared};

/// Everything `m[0]` is rendered from: stored rows, borrowed.
#[derive(Debug, Clone, Copy, Default)]
pub struct HeadInputs<'a> {
    /// Client context compacted away, kept verbatim; rendered by source ordinal.
    pub pinned: &'a [PinnedBlock],
    /// Project docs when enabled; rendered sorted by name, empty ones skipped.
    pub project_docs: &'a [ProjectDoc],
    /// The files the dreamer pinned for the project, in its rank order; shown within
    /// [`HeadBudgets::key_files_tokens`].
    pub key_files: &'a [KeyFile],
    /// User profile lines in stored order; blank lines skipped.
    pub profile: &'a [String],
    /// What the conversation this session continues held, as rendered once when it started
    /// ([`super::render_earlier`]); shown verbatim.
    pub earlier: Option<&'a str>,
    /// Every compartment of the session (any order; rendered by start ordinal).
    pub compartments: &'a [Compartment],
    /// Every active project memory (any order).
    pub memories: &'a [Memory],
    /// What other projects of the project's workspaces share with it (any order); shown
    /// after the project's own, in what their memories leave of the memory budget.
    pub shared_memories: &'a [SharedMemories],
}

/// Token budgets of the two budgeted sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadBudgets {
    /// The `<history>` element (DESIGN §9: 15% of the usable window).
    pub history_tokens: Tokens,
    /// The `<project-memory>` element and the `<shared-memory>` elements after it
    /// (DESIGN §9: 4,000 tokens).
    pub memory_tokens: Tokens,
    /// The `<key-files>` element (`dreamer.pin_key_files_budget_tokens`, 3,000).
    pub key_files_tokens: Tokens,
}

impl HeadBudgets {
    /// The configured budgets for a usable window (`None` when the window is unknown).
    pub fn from_config(config: &Config, usable_window: Option<Tokens>) -> Self {
        Self {
            history_tokens: config.history.budget_tokens(usable_window),
            memory_tokens: config.memory.injection_budget_tokens,
            key_files_tokens: Tokens(u64::from(config.dreamer.pin_key_files_budget_tokens)),
        }
    }
}

/// A rendered `m[0]` with what the engine records about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedHead {
    /// The message text, exactly.
    pub text: String,
    /// `count_tokens(text)`.
    pub tokens: Tokens,
    /// `(start_ordinal, tier)` of every compartment, in rendering order.
    pub tiers_chosen: Vec<(u64, DetailTier)>,
    /// Ids of the memories shown, in rendering order; the rest are only searchable.
    pub memory_ids: Vec<u64>,
    /// Ids of the other projects' shared memories shown, in rendering order.
    pub shared_memory_ids: Vec<u64>,
}

/// Renders `m[0]` (format in the module doc). Pure: the same rows, budgets and tokenizer give
/// the same bytes, which is what keeps `m[0]` cached between folds.
pub fn render_m0(
    inputs: &HeadInputs<'_>,
    budgets: HeadBudgets,
    count_tokens: &dyn Fn(&str) -> u64,
) -> RenderedHead {
    let mut sections: Vec<String> = Vec::new();
    sections.extend(render_pinned(inputs.pinned));
    sections.extend(render_docs(inputs.project_docs));
    let key_files = render_key_files(
        inputs.key_files,
        budgets.key_files_tokens.get(),
        count_tokens,
    );
    sections.extend(key_files.map(|(section, _)| section));
    sections.extend(render_profile("user-profile", inputs.profile));
    sections.extend(inputs.earlier.map(str::to_owned));

    let history = decay_history(
        inputs.compartments,
        budgets.history_tokens.get(),
        count_tokens,
    );
    sections.push(history.render());

    let budget = budgets.memory_tokens.get();
    let (memories, own_tokens) = select_memories(inputs.memories, budget, count_tokens);
    sections.extend(render_memory_section(&memories));
    let room = budget.saturating_sub(own_tokens);
    let shared = select_shared(inputs.shared_memories, room, count_tokens);
    sections.extend(render_shared(&shared));

    let text = sections.join("\n\n");
    RenderedHead {
        tokens: Tokens(count_tokens(&text)),
        text,
        tiers_chosen: history
            .chosen
            .iter()
            .map(|&(compartment, tier)| (compartment.start_ordinal, tier))
            .collect(),
        memory_ids: memories.iter().map(|m| m.id).collect(),
        shared_memory_ids: shared.iter().flat_map(|group| group.ids()).collect(),
    }
}

/// `<pinned-context>` with one `<pinned ordinal="N">` element per block, text verbatim.
fn render_pinned(pinned: &[PinnedBlock]) -> Option<String> {
    if pinned.is_empty() {
        return None;
    }
    let mut ordered: Vec<&PinnedBlock> = pinned.iter().collect();
    ordered.sort_by_key(|block| block.source_ordinal);
    let mut out = String::from("<pinned-context>\n");
    for block in ordered {
        out.push_str(&format!(
            "<pinned ordinal=\"{}\">\n{}\n</pinned>\n",
            block.source_ordinal, block.text
        ));
    }
    out.push_str("</pinned-context>");
    Some(out)
}

/// `<project-docs>` with one `<doc name="…">` element per non-empty doc, sorted by name.
fn render_docs(docs: &[ProjectDoc]) -> Option<String> {
    let mut ordered: Vec<&ProjectDoc> = docs.iter().filter(|d| !d.text.trim().is_empty()).collect();
    if ordered.is_empty() {
        return None;
    }
    ordered.sort_by(|a, b| a.name.cmp(&b.name));
    let mut out = String::from("<project-docs>\n");
    for doc in ordered {
        out.push_str(&format!(
            "<doc name=\"{}\">\n{}\n</doc>\n",
            doc.name,
            doc.text.trim_end()
        ));
    }
    out.push_str("</project-docs>");
    Some(out)
}

/// `<{tag}>` with one `- line` per non-blank profile line; shared with `m[1]`.
pub(super) fn render_profile(tag: &str, lines: &[String]) -> Option<String> {
    let items: Vec<&str> = lines
        .iter()
        .map(|line| line.trim())
        .filter(|line| !line.is_empty())
        .collect();
    if items.is_empty() {
        return None;
    }
    let mut out = format!("<{tag}>\n");
    for item in items {
        out.push_str("- ");
        out.push_str(&item.replace('\n', "\n  "));
        out.push('\n');
    }
    out.push_str(&format!("</{tag}>"));
    Some(out)
}
