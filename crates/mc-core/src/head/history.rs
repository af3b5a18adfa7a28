//! The `<history>` element: one heading line per compartment, then its chosen tier.
//!
//! Tiers come from [`decay_tier`] under the pressure of the full-detail cost; if the decayed
//! history still overshoots the budget, compartments are demoted one tier at a time, most
//! decayed first (largest `z = age / H`, so old and unimportant before new and important),
//! round after round, until it fits or only headings are left. The heading tier keeps the
//! user's own words of the range: a summary may fade, what the user asked for may not, so
//! the budget buys narrative, not instructions. Only if the history is still over budget
//! with every compartment at its heading do compartments lose their quotes too (the
//! [`DetailTier::Title`] tier), most decayed first. Headings are never dropped: the model
//! always sees every range it could expand. Above the heading tiers a compartment also
//! shows its index (the files, commands and names of its range), each name once across the
//! element; what the indexes cost is counted in full when tiers are chosen, so sharing
//! names only ever makes the history smaller than planned.

use std::collections::HashSet;

use super::date::format_utc_minute;
use super::decay::{DetailTier, decay_tier, decay_z, pressure};
use super::rows::{Compartment, RangeIndex};

/// The heading line (no newline): `### 12-40 | 2026-11-28 14:05 to 2026-11-29 09:12 UTC | Title`.
///
/// Ordinals are the inclusive stored range, so the model can ask for exactly that transcript.
/// The title is made single-line so one heading is always one line.
pub(super) fn heading(compartment: &Compartment) -> String {
    format!(
        "### {}-{} | {} to {} UTC | {}",
        compartment.start_ordinal,
        compartment.end_ordinal,
        format_utc_minute(compartment.start_ms),
        format_utc_minute(compartment.end_ms),
        single_line(&compartment.title)
    )
}

/// One compartment at `tier`: the heading; then, above the heading tiers, its index line
/// ([`index_line`]); then, above [`DetailTier::Title`], each quote of the user as
/// `<user ordinal="N">text</user>` on its own lines; then the tier's text (trimmed); always
/// ends with a newline. An empty index or tier text adds nothing.
pub(super) fn render_compartment(compartment: &Compartment, tier: DetailTier) -> String {
    render_with_index(compartment, tier, &compartment.index)
}

/// [`render_compartment`] showing `index` as the compartment's index.
fn render_with_index(compartment: &Compartment, tier: DetailTier, index: &RangeIndex) -> String {
    let mut block = heading(compartment);
    block.push('\n');
    if tier.shows_summary()
        && let Some(line) = index_line(index)
    {
        block.push_str(&line);
        block.push('\n');
    }
    if tier != DetailTier::Title {
        for quote in &compartment.quotes {
            block.push_str(&format!(
                "<user ordinal=\"{}\">{}</user>\n",
                quote.ordinal, quote.text
            ));
        }
    }
    let body = tier
        .tier_index()
        .and_then(|index| compartment.tiers.get(index))
        .map_or("", |text| text.trim());
    if !body.is_empty() {
        block.push_str(body);
        block.push('\n');
    }
    block
}

/// The index as one line, its non-empty lists in a fixed order:
/// `files: src/a.py, b.rs · ran: `pytest -k x`, `make` · names: parse_card, MAX_RETRIES`.
fn index_line(index: &RangeIndex) -> Option<String> {
    let mut lists = Vec::new();
    if !index.files.is_empty() {
        lists.push(format!("files: {}", index.files.join(", ")));
    }
    if !index.ran.is_empty() {
        let commands: Vec<String> = index
            .ran
            .iter()
            .map(|command| format!("`{command}`"))
            .collect();
        lists.push(format!("ran: {}", commands.join(", ")));
    }
    if !index.names.is_empty() {
        lists.push(format!("names: {}", index.names.join(", ")));
    }
    (!lists.is_empty()).then(|| lists.join(" · "))
}

/// Compartments at their tiers, in the order given, each name of their indexes shown once:
/// by the newest compartment that lists it and shows its index (above the heading tier), so
/// an old compartment decaying away does not take a name the recent ones still use.
pub(super) fn render_compartments(chosen: &[(&Compartment, DetailTier)]) -> String {
    let mut shown: HashSet<&str> = HashSet::new();
    let mut indexes: Vec<RangeIndex> = vec![RangeIndex::default(); chosen.len()];
    for (slot, &(compartment, tier)) in chosen.iter().enumerate().rev() {
        if !tier.shows_summary() {
            continue;
        }
        let index = &compartment.index;
        indexes[slot] = RangeIndex {
            files: unseen(&index.files, &mut shown),
            ran: unseen(&index.ran, &mut shown),
            names: unseen(&index.names, &mut shown),
        };
    }
    chosen
        .iter()
        .zip(&indexes)
        .map(|(&(compartment, tier), index)| render_with_index(compartment, tier, index))
        .collect()
}

/// The entries of `list` not in `shown`, which then holds them too.
fn unseen<'a>(list: &'a [String], shown: &mut HashSet<&'a str>) -> Vec<String> {
    list.iter()
        .filter(|name| shown.insert(name.as_str()))
        .cloned()
        .collect()
}

/// Collapses line breaks (and the whitespace around them) to single spaces.
fn single_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The compartments in rendering order (by start ordinal, then end ordinal) with their tiers.
pub(super) struct DecayedHistory<'a> {
    /// Each compartment with the tier it renders at, oldest first.
    pub(super) chosen: Vec<(&'a Compartment, DetailTier)>,
}

impl DecayedHistory<'_> {
    /// The `<history>` element; `<history>\n</history>` when there are no compartments.
    pub(super) fn render(&self) -> String {
        let mut out = String::from("<history>\n");
        out.push_str(&render_compartments(&self.chosen));
        out.push_str("</history>");
        out
    }
}

/// Chooses a tier for every compartment within `budget_tokens` (see the module doc).
pub(super) fn decay_history<'a>(
    compartments: &'a [Compartment],
    budget_tokens: u64,
    count_tokens: &dyn Fn(&str) -> u64,
) -> DecayedHistory<'a> {
    let mut ordered: Vec<&Compartment> = compartments.iter().collect();
    ordered.sort_by_key(|c| (c.start_ordinal, c.end_ordinal));

    // costs[i][t]: tokens of compartment i rendered at tier t (Full..=Title).
    let tiers = [
        DetailTier::Full,
        DetailTier::Condensed,
        DetailTier::Paragraph,
        DetailTier::Line,
        DetailTier::Heading,
        DetailTier::Title,
    ];
    let costs: Vec<[u64; 6]> = ordered
        .iter()
        .map(|c| tiers.map(|tier| count_tokens(&render_compartment(c, tier))))
        .collect();
    let natural: u64 = costs.iter().map(|cost| cost[0]).sum();
    let pressure = pressure(natural, budget_tokens);

    let count = ordered.len();
    let age = |index: usize| u32::try_from(count - 1 - index).unwrap_or(u32::MAX);
    let mut chosen: Vec<DetailTier> = ordered
        .iter()
        .enumerate()
        .map(|(index, c)| decay_tier(age(index), c.importance, pressure))
        .collect();
    // Trimming order: most decayed first; ties go to the older compartment.
    let mut trim_order: Vec<(f64, usize)> = ordered
        .iter()
        .enumerate()
        .map(|(index, c)| (decay_z(age(index), c.importance, pressure), index))
        .collect();
    trim_order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));

    let cost_of = |index: usize, tier: DetailTier| costs[index][tier_slot(tier)];
    let mut total: u64 = (0..count).map(|i| cost_of(i, chosen[i])).sum();
    'trim: while total > budget_tokens {
        let mut demoted_any = false;
        for &(_, index) in &trim_order {
            let tier = chosen[index];
            if tier == DetailTier::Heading {
                continue;
            }
            let next = tier.demoted();
            total = total.saturating_sub(cost_of(index, tier)) + cost_of(index, next);
            chosen[index] = next;
            demoted_any = true;
            if total <= budget_tokens {
                break 'trim;
            }
        }
        if !demoted_any {
            break;
        }
    }
    // Every compartment is at its heading and the history is still over: the user's words
    // go too, most decayed first, until it fits.
    for &(_, index) in &trim_order {
        if total <= budget_tokens {
            break;
        }
        if chosen[index] == DetailTier::Heading && !ordered[index].quotes.is_empty() {
            total = total.saturating_sub(cost_of(index, DetailTier::Heading))
                + cost_of(index, DetailTier::Title);
            chosen[index] = DetailTier::Title;
        }
    }

    DecayedHistory {
        chosen: ordered.into_iter().zip(chosen).collect(),
    }
}

/// Position of `tier` in the cost table.
const fn tier_slot(tier: DetailTier) -> usize {
    match tier {
        DetailTier::Full => 0,
        DetailTier::Condensed => 1,
        DetailTier::Paragraph => 2,
        DetailTier::Line => 3,
        DetailTier::Heading => 4,
        DetailTier::Title => 5,
    }
}
