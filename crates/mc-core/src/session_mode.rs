//! What kind of session a conversation is, and what the engine does for each kind.
//!
//! Not every conversation deserves the whole treatment. A subagent a host spawns for one
//! task lives minutes: summarising it would cost a historian run for history nobody reads
//! again, and the parent's project history in its head would crowd the window it was given
//! for its task. And a user who prefers the host's own compaction still wants memories,
//! notes and search without the engine rewriting the conversation under the host.
//!
//! | mode | tags, `ctx_reduce`, drops | historian | compartment history in the head | memories, docs, notes, search, expand |
//! | --- | --- | --- | --- | --- |
//! | primary | yes | yes | yes | yes |
//! | subagent | yes (automatic reclaim on every pass that may bust) | no | no | yes |
//! | compaction off | no: the tail goes up as the client sent it | no | no | yes |

use serde::{Deserialize, Serialize};

/// How the engine treats one session (the module docs hold the table).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionMode {
    /// The user's own conversation, managed in full.
    #[default]
    Primary,
    /// A conversation a host spawned from a primary one for a task (Claude Code's Task
    /// subagents, OpenCode's child sessions).
    Subagent,
    /// `compaction.enabled: false`: the host's own compaction manages the window; the
    /// engine only adds its head (memories, docs, notes) and serves search and expand.
    CompactionOff,
}

impl SessionMode {
    /// The snake_case name used in storage and output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Primary => "primary",
            Self::Subagent => "subagent",
            Self::CompactionOff => "compaction_off",
        }
    }

    /// Parses the name written by [`SessionMode::as_str`]; `None` for any other text, so a
    /// corrupt row is reported rather than managed as the wrong kind.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "primary" => Some(Self::Primary),
            "subagent" => Some(Self::Subagent),
            "compaction_off" => Some(Self::CompactionOff),
            _ => None,
        }
    }

    /// Whether the historian summarises the session: only a primary one lives long enough
    /// for its history to be read again.
    pub fn runs_historian(self) -> bool {
        matches!(self, Self::Primary)
    }

    /// Whether the engine rewrites the conversation (tags, drops, reclaim, nudges, the
    /// window fit); with compaction off the host does that work itself.
    pub fn rewrites_tail(self) -> bool {
        !matches!(self, Self::CompactionOff)
    }
}

/// The mode of a request's session: compaction off for every session when the user turned
/// the engine's compaction off, else a subagent when the host spawned it, else primary.
pub fn session_mode(compaction_enabled: bool, is_subagent: bool) -> SessionMode {
    match (compaction_enabled, is_subagent) {
        (false, _) => SessionMode::CompactionOff,
        (true, true) => SessionMode::Subagent,
        (true, false) => SessionMode::Primary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_names_round_trip_and_unknown_names_are_refused() {
        for mode in [
            SessionMode::Primary,
            SessionMode::Subagent,
            SessionMode::CompactionOff,
        ] {
            assert_eq!(SessionMode::from_name(mode.as_str()), Some(mode));
            assert_eq!(
                serde_json::to_value(mode).unwrap(),
                serde_json::Value::from(mode.as_str())
            );
        }
        assert_eq!(SessionMode::from_name("Primary"), None);
    }

    #[test]
    fn compaction_off_wins_over_a_subagent() {
        assert_eq!(session_mode(false, true), SessionMode::CompactionOff);
        assert_eq!(session_mode(false, false), SessionMode::CompactionOff);
        assert_eq!(session_mode(true, true), SessionMode::Subagent);
        assert_eq!(session_mode(true, false), SessionMode::Primary);
    }

    #[test]
    fn only_a_primary_session_is_summarised_and_only_compaction_off_keeps_the_tail() {
        let modes = [
            SessionMode::Primary,
            SessionMode::Subagent,
            SessionMode::CompactionOff,
        ];
        let summarised: Vec<bool> = modes.iter().map(|m| m.runs_historian()).collect();
        let rewritten: Vec<bool> = modes.iter().map(|m| m.rewrites_tail()).collect();
        assert_eq!(summarised, [true, false, false]);
        assert_eq!(rewritten, [true, true, false]);
    }
}
