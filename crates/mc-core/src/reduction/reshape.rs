//! Units shown smaller without being dropped.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::tags::{TagNo, UnitRef};

/// What a session shows in a reduced form instead of whole or dropped: excerpts of protected
/// or oversized units, and tool calls whose large input (a file written, a long patch) was
/// reclaimed. Like drops, these are facts about the session replayed over pristine messages
/// on every render; each is decided once, on a pass allowed to change the bytes it touches,
/// and never undone, so the rendering stays stable.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Reshape {
    /// Tagged units shown as excerpts, with the characters each keeps.
    pub excerpts: BTreeMap<TagNo, u32>,
    /// Tool calls (by position) shown with clipped inputs.
    pub clipped_calls: BTreeSet<UnitRef>,
}

impl Reshape {
    /// Whether nothing is reshaped.
    pub fn is_empty(&self) -> bool {
        self.excerpts.is_empty() && self.clipped_calls.is_empty()
    }
}
