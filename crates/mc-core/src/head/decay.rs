//! Which detail tier each compartment renders at: the DESIGN §9 decay formula.
//!
//! History fades with age measured in compartments, not time: a session idle for a week has
//! not forgotten anything, while one that moved on through many tasks has. Importance stretches
//! the half-life and pressure (how far full detail would overshoot the budget) shrinks it.
//!
//! Decay starts at the condensed summary, not the full one (DESIGN §9 has the newest
//! compartments of `m[0]` at full detail): a compartment is shown in full once, in `m[1]`,
//! while it is news; folded into `m[0]`, read on every call until the session ends, it shows
//! its condensed summary, with its index of names and the user's words, and `ctx_expand`
//! gives back the range itself. The full summaries of the newest compartments were the
//! largest part of `m[0]`'s history, and the names a later turn reaches for are in the index,
//! not the prose. Replay (controlled cost against autocompact / references kept, user words
//! 1.0 throughout; full below z 0.201 -> never): swe set at 200K 0.881 / 0.9886 -> 0.861 /
//! 0.9880, at 64K 1.100 / 0.9679 -> 1.079 / 0.9669; the long generated sessions (seeds 1, 2,
//! 3, 7) 0.764 -> 0.756, references unchanged; the anthropic capture 1.008 -> 1.008 at 200K,
//! 1.074 -> 1.070 at 64K. Showing new compartments condensed in `m[1]` too was cheaper on the
//! swe set (0.850 and 1.062) but cost the capture at 64K a bust (1.144), so `m[1]` keeps the
//! full tier. The historian has since stopped writing a full summary and a paragraph
//! (`historian::prompt`): a new compartment's full tier is its condensed text and its
//! paragraph its line, so it fades from the summary straight to the line; older ones keep
//! their four texts.

use serde::{Deserialize, Serialize};

/// How much of a compartment `m[0]` shows, from most to least. The order of the variants is
/// the order of detail, so `a < b` means `a` shows more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DetailTier {
    /// The full summary.
    Full,
    /// The condensed summary.
    Condensed,
    /// One paragraph.
    Paragraph,
    /// One line.
    Line,
    /// The heading line and the user's own words of the range: what the user asked for
    /// outlives every summary of it.
    Heading,
    /// The heading line alone. Never chosen by decay: only when every compartment is at
    /// [`Self::Heading`] and the history is still over its budget, most decayed first.
    Title,
}

impl DetailTier {
    /// The next less detailed tier that decay and the budget's first rounds use; `Heading`
    /// (and `Title`) stay where they are.
    pub const fn demoted(self) -> Self {
        match self {
            Self::Full => Self::Condensed,
            Self::Condensed => Self::Paragraph,
            Self::Paragraph => Self::Line,
            Self::Line | Self::Heading => Self::Heading,
            Self::Title => Self::Title,
        }
    }

    /// Index into [`super::Compartment::tiers`], or `None` for the heading tiers.
    pub const fn tier_index(self) -> Option<usize> {
        match self {
            Self::Full => Some(0),
            Self::Condensed => Some(1),
            Self::Paragraph => Some(2),
            Self::Line => Some(3),
            Self::Heading | Self::Title => None,
        }
    }

    /// Whether the compartment shows its summary text and index (above the heading tiers).
    pub const fn shows_summary(self) -> bool {
        self.tier_index().is_some()
    }
}

/// Pressure never goes below this: an almost empty history must still fade eventually.
pub const PRESSURE_FLOOR: f64 = 0.1;

/// Half-life in compartments at importance 50 and pressure 1.
const BASE_HALF_LIFE: f64 = 24.0;

/// Upper bounds of `z = age / H` for each tier (DESIGN §9), most detailed first; DESIGN's
/// full tier (below 0.201) folds into the condensed one (see the module doc).
const Z_LIMITS: [(f64, DetailTier); 3] = [
    (0.729, DetailTier::Condensed),
    (1.322, DetailTier::Paragraph),
    (2.587, DetailTier::Line),
];

/// The tier of a compartment `age_compartments` older than the newest (the newest has age 0).
///
/// `H = 24 · 2^((importance − 50)/25) / pressure`, `z = age / H`; condensed below 0.729,
/// paragraph below 1.322, line below 2.587, else the heading only (never full: see the module
/// doc). Importance is clamped to 1–100 and pressure to at least [`PRESSURE_FLOOR`] (a NaN
/// pressure counts as the floor), so every input gives an answer, the newest always shows its
/// condensed summary and older never shows more than newer.
pub fn decay_tier(age_compartments: u32, importance: u8, pressure: f64) -> DetailTier {
    let z = decay_z(age_compartments, importance, pressure);
    Z_LIMITS
        .iter()
        .find(|(limit, _)| z < *limit)
        .map_or(DetailTier::Heading, |&(_, tier)| tier)
}

/// `z = age / H`, how far a compartment has decayed; larger is more faded. Budget trimming
/// demotes in decreasing `z`, so it fades compartments in the same order as the formula.
pub(super) fn decay_z(age_compartments: u32, importance: u8, pressure: f64) -> f64 {
    if age_compartments == 0 {
        // z = 0 whatever H is; said outright so an infinite pressure (H = 0) cannot make it NaN.
        return 0.0;
    }
    let importance = f64::from(importance.clamp(1, 100));
    let pressure = if pressure.is_nan() {
        PRESSURE_FLOOR
    } else {
        pressure.max(PRESSURE_FLOOR)
    };
    let half_life = BASE_HALF_LIFE * ((importance - 50.0) / 25.0).exp2() / pressure;
    f64::from(age_compartments) / half_life
}

/// Pressure from the cost of rendering every compartment at full detail against the budget.
pub fn pressure(natural_tokens: u64, budget_tokens: u64) -> f64 {
    // u64 → f64 loses precision only above 2^53 tokens, far beyond any window.
    let ratio = natural_tokens as f64 / budget_tokens.max(1) as f64;
    ratio.max(PRESSURE_FLOOR)
}
