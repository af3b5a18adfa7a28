//! Rendering one stored tail message: tags and drops, landed reasoning drops, reminders.

use std::borrow::Cow;

use mc_core::reduction::{PartShown, render_message};
use mc_core::tags::strip_tag_imitations;
use mc_core::{Message, Part, Role};

/// Renders a stored tail message: its parts as `shown` decides (after model output is
/// cleaned of tag imitations), its landed reasoning drops (`dropped_reasoning`, sorted part
/// indices) left out, then the reminders given on it appended.
pub(crate) fn render_tail_message(
    stored: &Message,
    shown: &[PartShown],
    dropped_reasoning: &[u32],
    nudges: &[String],
) -> Message {
    let mut message = render_message(&clean_model_output(stored), shown);
    remove_dropped_reasoning(&mut message, stored, dropped_reasoning);
    message
        .parts
        .extend(nudges.iter().map(|text| Part::text(text.clone())));
    message
}

/// Model output must not carry engine tags: imitations are removed from assistant text
/// before the engine adds its own (the raw log keeps what the model wrote). A message with
/// nothing to clean is borrowed, not copied.
fn clean_model_output(message: &Message) -> Cow<'_, Message> {
    let imitates = |part: &Part| matches!(part, Part::Text { text, .. } if matches!(strip_tag_imitations(text), Cow::Owned(_)));
    if message.role != Role::Assistant || !message.parts.iter().any(imitates) {
        return Cow::Borrowed(message);
    }
    let parts = message
        .parts
        .iter()
        .map(|part| match part {
            Part::Text { text, .. } => Part::text(strip_tag_imitations(text).into_owned()),
            other => other.clone(),
        })
        .collect();
    Cow::Owned(Message::new(message.role, parts))
}

fn is_reasoning(part: &Part) -> bool {
    matches!(part, Part::Thinking { .. } | Part::RedactedThinking { .. })
}

/// Leaves the landed reasoning drops of one message out of its rendering.
///
/// Thinking carries no tag, so it is removed after tagging (removing it before would shift
/// the part indices tags are keyed by). A message renders its reasoning parts through in
/// order, so the k-th reasoning part of the rendered message is the k-th of the stored one.
fn remove_dropped_reasoning(rendered: &mut Message, stored: &Message, dropped: &[u32]) {
    if dropped.is_empty() {
        return;
    }
    let doomed: Vec<bool> = stored
        .parts
        .iter()
        .enumerate()
        .filter(|(_, part)| is_reasoning(part))
        .map(|(index, _)| {
            u32::try_from(index).is_ok_and(|index| dropped.binary_search(&index).is_ok())
        })
        .collect();
    if !doomed.contains(&true) {
        return;
    }
    let remaining = rendered
        .parts
        .iter()
        .filter(|part| !is_reasoning(part))
        .count();
    if remaining == 0 {
        // Providers reject an empty message: with everything else of it already removed
        // (its calls dropped whole), the reasoning stays.
        return;
    }
    let mut seen = 0;
    rendered.parts.retain(|part| {
        if !is_reasoning(part) {
            return true;
        }
        let keep = !doomed.get(seen).copied().unwrap_or(false);
        seen += 1;
        keep
    });
}
