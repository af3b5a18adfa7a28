//! Writing one episode's compartment: its title, importance, type, summary and line.
//!
//! The summary is sized the way a real answer's is, relative to the transcript it summarises
//! (`condensed`: about a twelfth of it and at most about 150 words), because replay prices the
//! historian's output and the decay renderer chooses among the tiers by size: a simulator
//! that answered in one word would make history look free.

use mc_core::historian::CompartmentDraft;

use super::episode::{Digest, Episode, Note, Rank, excerpt};
use super::facts::sentences;

/// The characters `condensed` aims at even when a twelfth of the episode is less: a model
/// writes a sentence about a few short messages (never more than the messages, though).
const CONDENSED_MIN_CHARS: usize = 70;
/// The most characters `condensed` holds, however long the episode.
const CONDENSED_MAX_CHARS: usize = 800;
/// The most characters the `line` tier holds.
const LINE_MAX_CHARS: usize = 100;
/// Words of the first text's first sentence a title keeps.
const TITLE_WORDS: usize = 8;
/// Characters a title keeps.
const TITLE_MAX_CHARS: usize = 60;
/// Items of a list (tools, files, commands) named before "and N more".
const LIST_ITEMS: usize = 6;

/// Importance of an ordinary episode.
const BASE_IMPORTANCE: u32 = 50;
/// Added when the user spoke: their instructions are what later turns most need.
const USER_IMPORTANCE: u32 = 15;
/// Added when a tool failed: a hard-won finding.
const ERROR_IMPORTANCE: u32 = 10;
/// Added when the user stated a rule.
const RULE_IMPORTANCE: u32 = 10;

/// The compartment of `episode`; `states_rule` when its user texts gave a fact.
pub(crate) fn write_compartment(
    episode: &Episode<'_>,
    digest: &Digest<'_>,
    states_rule: bool,
) -> CompartmentDraft {
    let kind = episode_kind(digest);
    let title = title(episode, digest);
    let range = format!("{}–{}", episode.start, episode.end);
    let budget = (digest.chars / 12)
        .max(digest.chars.min(CONDENSED_MIN_CHARS))
        .min(CONDENSED_MAX_CHARS);
    let mut notes = digest.notes.clone();
    if let Some(summary) = summary(digest) {
        notes.push(summary);
    }
    let opening = format!("Messages {range}: {kind}.");
    let condensed = excerpt(&fill(&opening, &notes, budget), CONDENSED_MAX_CHARS);
    let line = excerpt(&format!("{title} ({kind}, {range})"), LINE_MAX_CHARS);
    let mut importance = BASE_IMPORTANCE;
    if !digest.user_texts.is_empty() {
        importance += USER_IMPORTANCE;
    }
    if digest.errors > 0 {
        importance += ERROR_IMPORTANCE;
    }
    if states_rule {
        importance += RULE_IMPORTANCE;
    }
    CompartmentDraft {
        start_ordinal: episode.start,
        end_ordinal: episode.end,
        title,
        importance,
        episode: kind.to_owned(),
        condensed,
        line,
    }
}

/// The episode type: what the calls and results show.
fn episode_kind(digest: &Digest<'_>) -> &'static str {
    if digest.errors > 0 {
        "debugging"
    } else if digest.edits {
        "feature"
    } else if !digest.tools.is_empty() {
        "research"
    } else {
        "discussion"
    }
}

/// The first words of the first text, else the first tool, else the ordinals.
fn title(episode: &Episode<'_>, digest: &Digest<'_>) -> String {
    let from_text = digest.first_text.map(|text| {
        let first = sentences(text).into_iter().next().unwrap_or(text);
        let words: Vec<&str> = first.split_whitespace().take(TITLE_WORDS).collect();
        let title = excerpt(&words.join(" "), TITLE_MAX_CHARS);
        title
            .trim_end_matches(['.', ',', ':', ';', '!', '?', '…'])
            .to_owned()
    });
    match (from_text, digest.tools.first()) {
        (Some(title), _) if !title.trim().is_empty() => title,
        (_, Some((tool, _))) => excerpt(&format!("{tool} calls"), TITLE_MAX_CHARS),
        _ => format!("Messages {}–{}", episode.start, episode.end),
    }
}

/// The tools, files and commands of the episode as one note, written after the others.
fn summary(digest: &Digest<'_>) -> Option<Note> {
    let mut parts = Vec::new();
    let tools: Vec<String> = digest
        .tools
        .iter()
        .map(|(name, count)| match count {
            1 => (*name).to_owned(),
            _ => format!("{name} ×{count}"),
        })
        .collect();
    if !tools.is_empty() {
        parts.push(format!("Tools: {}.", listed(&tools)));
    }
    if !digest.files.is_empty() {
        parts.push(format!("Files: {}.", listed(&digest.files)));
    }
    if !digest.commands.is_empty() {
        let commands: Vec<String> = digest
            .commands
            .iter()
            .map(|command| format!("`{command}`"))
            .collect();
        parts.push(format!("Commands: {}.", listed(&commands)));
    }
    (!parts.is_empty()).then(|| Note {
        rank: Rank::Summary,
        text: parts.join(" "),
    })
}

/// `lead`, then the notes that fit `budget` characters, most important first, written in
/// transcript order. The lead always stays, so a tier is at least one sentence.
fn fill(lead: &str, notes: &[Note], budget: usize) -> String {
    let mut used = lead.chars().count();
    let mut by_rank: Vec<(usize, &Note)> = notes.iter().enumerate().collect();
    by_rank.sort_by_key(|(index, note)| (note.rank, *index));
    let mut chosen = vec![false; notes.len()];
    for (index, note) in by_rank {
        let length = note.text.chars().count() + 1;
        if used + length <= budget {
            used += length;
            if let Some(slot) = chosen.get_mut(index) {
                *slot = true;
            }
        }
    }
    let mut out = lead.to_owned();
    for (note, _) in notes.iter().zip(&chosen).filter(|(_, chosen)| **chosen) {
        out.push(' ');
        out.push_str(&note.text);
    }
    out
}

/// The first few `items` joined, with how many more there were.
fn listed(items: &[String]) -> String {
    let shown = items
        .iter()
        .take(LIST_ITEMS)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    match items.len().saturating_sub(LIST_ITEMS) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}
