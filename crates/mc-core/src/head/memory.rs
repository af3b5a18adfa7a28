//! The `<project-memory>` element: memories grouped by category within their token budget.
//!
//! Selection is by rank: permanent memories first, then the most often stated (a fact the
//! project keeps restating matters), then the newest (the store assigns ids in increasing
//! order); each is admitted when it still fits, so when the budget is short the lowest ranked
//! are trimmed first and stay reachable through search; a long memory that
//! does not fit is skipped and shorter older ones may still fill the room. The cost is summed
//! per line (wrapper, category headings, items), which tokenizers split at line breaks closely
//! enough for a budget. The admitted memories then render in a stable reading order:
//! categories in [`MemoryCategory::ALL`] order, ids increasing within each.

use std::collections::BTreeSet;

use super::rows::{Memory, MemoryCategory};

const OPEN: &str = "<project-memory>\n";
const CLOSE: &str = "</project-memory>";

/// `## CATEGORY` line.
pub(super) fn category_line(category: MemoryCategory) -> String {
    format!("## {}\n", category.as_str())
}

/// `- #ID content` line; continuation lines of a multi-line memory are indented two spaces so
/// the list stays one item per memory.
pub(super) fn memory_line(id: u64, content: &str) -> String {
    format!("- #{id} {}\n", content.trim().replace('\n', "\n  "))
}

/// Memories grouped by category, each group a `## CATEGORY` line and its items.
pub(super) fn render_grouped(memories: &[&Memory]) -> String {
    let mut out = String::new();
    for category in MemoryCategory::ALL {
        let mut items: Vec<&&Memory> = memories.iter().filter(|m| m.category == category).collect();
        if items.is_empty() {
            continue;
        }
        items.sort_by_key(|m| m.id);
        out.push_str(&category_line(category));
        for memory in items {
            out.push_str(&memory_line(memory.id, &memory.content));
        }
    }
    out
}

/// The memories shown in `m[0]`, in rendering order, and the tokens their element costs
/// (none when none is shown): what is left of the budget goes to other projects' shared
/// memories, which therefore never displace the project's own.
pub(super) fn select_memories<'a>(
    memories: &'a [Memory],
    budget_tokens: u64,
    count_tokens: &dyn Fn(&str) -> u64,
) -> (Vec<&'a Memory>, u64) {
    let mut newest_first: Vec<&Memory> = memories.iter().collect();
    newest_first.sort_by_key(|m| std::cmp::Reverse((m.permanent, m.seen_count, m.id)));
    newest_first.dedup_by_key(|m| m.id);

    let mut used = count_tokens(OPEN) + count_tokens(CLOSE);
    let mut categories: BTreeSet<MemoryCategory> = BTreeSet::new();
    let mut chosen = Vec::new();
    for memory in newest_first {
        let heading = if categories.contains(&memory.category) {
            0
        } else {
            count_tokens(&category_line(memory.category))
        };
        let cost = heading + count_tokens(&memory_line(memory.id, &memory.content));
        if used + cost <= budget_tokens {
            used += cost;
            categories.insert(memory.category);
            chosen.push(memory);
        }
    }
    chosen.sort_by_key(|m| (m.category, m.id));
    let used = if chosen.is_empty() { 0 } else { used };
    (chosen, used)
}

/// The element, or `None` when no memory is shown (the section is then omitted).
pub(super) fn render_memory_section(chosen: &[&Memory]) -> Option<String> {
    if chosen.is_empty() {
        return None;
    }
    Some(format!("{OPEN}{}{CLOSE}", render_grouped(chosen)))
}
