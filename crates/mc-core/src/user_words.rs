//! The user's own words in a conversation: what they typed, as opposed to what the client
//! injected around it (`<system-reminder>` blocks with CLAUDE.md and environment notes) or
//! what tools returned.
//!
//! Users of host compaction report losing their own stated intent, corrections and
//! constraints first. The historian keeps these texts verbatim in compartments, and replay
//! measures whether they survive, so both must agree on what they are: this module.

use crate::{Message, Part, Role};

/// The client's injected-context wrapper: removed, with its content, from the user's words.
const REMINDER_OPEN: &str = "<system-reminder>";
const REMINDER_CLOSE: &str = "</system-reminder>";

/// The user's own texts in `message`: each text part of a user-role message with injected
/// reminder blocks removed and surrounding whitespace trimmed; parts left empty are skipped.
/// Tool results are never the user's words.
pub fn user_words(message: &Message) -> Vec<String> {
    if message.role != Role::User {
        return Vec::new();
    }
    message
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::Text { text, .. } => {
                let words = without_reminders(text);
                let words = words.trim();
                (!words.is_empty()).then(|| words.to_owned())
            }
            _ => None,
        })
        .collect()
}

/// `text` with every complete `<system-reminder>…</system-reminder>` block removed. An
/// unclosed opening tag is kept as text: it may be the user quoting one.
fn without_reminders(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find(REMINDER_OPEN) {
        let after_open = &rest[open..];
        let Some(close) = after_open.find(REMINDER_CLOSE) else {
            break;
        };
        out.push_str(&rest[..open]);
        rest = &after_open[close + REMINDER_CLOSE.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reminders_and_tool_results_are_not_the_users_words() {
        let message = Message::new(
            Role::User,
            vec![
                Part::text("<system-reminder>\nCLAUDE.md says hi\n</system-reminder>"),
                Part::text("  fix the flaky test <system-reminder>x</system-reminder>now\n"),
                Part::ToolResult {
                    call_id: "c1".into(),
                    content: vec![Part::text("ok")],
                    is_error: false,
                },
                Part::text("a <system-reminder> never closed"),
            ],
        );
        assert_eq!(
            user_words(&message),
            ["fix the flaky test now", "a <system-reminder> never closed"]
        );
        let assistant = Message::new(Role::Assistant, vec![Part::text("done")]);
        assert!(user_words(&assistant).is_empty());
    }
}
