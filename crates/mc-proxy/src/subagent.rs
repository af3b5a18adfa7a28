//! Recognising the conversations a host spawns for one task, and the session they work for.
//!
//! Claude Code runs a Task subagent under its own session id: the subagent's requests carry
//! the same `X-Claude-Code-Session-Id` as the main conversation, with a first message of its
//! own (the task's prompt), so [`crate::session_resolve`] already files it in a lane of its
//! own (`cc-<id>-<lane>`). What tells it from the main conversation is its system prompt:
//! every built-in agent opens with a sentence naming itself "… for Claude Code" ("You are an
//! agent for Claude Code, …", "You are a file search specialist for Claude Code, …"), where
//! the main prompt says "You are Claude Code". The session it works for is the main
//! conversation of the same id: the lane of that id most recently used that is not itself a
//! subagent.
//!
//! OpenCode's task tool starts a child session with an `x-session-id` of its own and names
//! its parent in `x-parent-session-id` (measured with OpenCode 1.18.33); the parent is the
//! most recently used lane of that id. Codex's and Pi's requests name no parent
//! (`shared/CLIENTS.md`; Pi has no subagents), so their sessions are managed as primary ones.

use mc_core::{Host, SessionId, SessionMode};
use mc_store::{ReadTx, StoreError};

use crate::session_resolve::{SessionHints, client_id_prefix, client_prefix};

/// Whether a request is a host's subagent, from what the request itself shows.
pub fn is_subagent(hints: &SessionHints, system_texts: &[&str]) -> bool {
    hints.parent_id.is_some()
        || hints.host == Host::ClaudeCode
            && system_texts
                .iter()
                .any(|text| names_a_claude_code_agent(text))
}

/// Whether `text` holds a sentence opening "You are a…" or "You are an…" that ends up
/// "for Claude Code": the opening of Claude Code's built-in agents' prompts.
fn names_a_claude_code_agent(text: &str) -> bool {
    text.match_indices("You are a").any(|(at, _)| {
        let sentence = &text[at..];
        let end = sentence.find(['.', '\n']).unwrap_or(sentence.len());
        sentence[..end].contains("for Claude Code")
    })
}

/// The session the subagent `session` works for: the most recently used session of the
/// parent id the client names, else the most recently used other session of the same client
/// id, that is not a subagent (`None` when the request names no client id, or none is
/// stored yet).
pub fn spawned_by(
    tx: &ReadTx<'_>,
    hints: &SessionHints,
    session: &SessionId,
) -> Result<Option<SessionId>, StoreError> {
    let prefix = match &hints.parent_id {
        Some(parent) => Some(client_id_prefix(hints.host, parent)),
        None => client_prefix(hints),
    };
    let Some(prefix) = prefix else {
        return Ok(None);
    };
    let own_lane = lane_of(session);
    Ok(tx
        .sessions_with_prefix(&prefix)?
        .into_iter()
        .find(|record| record.mode != SessionMode::Subagent && lane_of(&record.id) != own_lane)
        .map(|record| record.id))
}

/// A session's id without its branch number (`cc-x-lane~2` → `cc-x-lane`): a fork of the
/// subagent's own lane is the subagent, not its parent.
fn lane_of(session: &SessionId) -> &str {
    session
        .as_str()
        .split_once('~')
        .map_or(session.as_str(), |(lane, _)| lane)
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderMap;

    use super::*;

    fn claude_code() -> SessionHints {
        let mut headers = HeaderMap::new();
        headers.insert("x-claude-code-session-id", "5b3f".parse().unwrap());
        SessionHints::read(&headers, None)
    }

    #[test]
    fn claude_codes_built_in_agents_are_subagents_and_its_main_prompt_is_not() {
        let hints = claude_code();
        let identity = "You are Claude Code, Anthropic's official CLI for Claude.";
        let main = "You are an interactive agent that helps users with software engineering \
                    tasks.\nUse the Task tool for Claude Code subagents.";
        assert!(!is_subagent(&hints, &[identity, main]));
        for agent in [
            "You are an agent for Claude Code, Anthropic's official CLI for Claude. Given the \
             user's message, you should use the tools available to complete the task.",
            "You are a file search specialist for Claude Code, Anthropic's official CLI.",
            "You are a software architect and planning specialist for Claude Code. Plan.",
        ] {
            assert!(is_subagent(&hints, &[identity, agent]), "{agent}");
        }
        let mut opencode = HeaderMap::new();
        opencode.insert("x-session-id", "ses_child".parse().unwrap());
        assert!(!is_subagent(&SessionHints::read(&opencode, None), &[]));
        opencode.insert("x-parent-session-id", "ses_parent".parse().unwrap());
        assert!(is_subagent(&SessionHints::read(&opencode, None), &[]));
        let other = SessionHints::read(&HeaderMap::new(), None);
        assert!(!is_subagent(
            &other,
            &["You are an agent for Claude Code, Anthropic's official CLI for Claude."]
        ));
    }

    #[test]
    fn a_branch_belongs_to_its_lane() {
        let id = |text: &str| SessionId::new(text).unwrap();
        assert_eq!(
            lane_of(&id("cc-5b3f-0123456789ab~2")),
            "cc-5b3f-0123456789ab"
        );
        assert_eq!(lane_of(&id("cc-5b3f-0123456789ab")), "cc-5b3f-0123456789ab");
    }
}
