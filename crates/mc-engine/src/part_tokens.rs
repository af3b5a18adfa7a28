//! Token estimates of a session's parts, counted once per part.
//!
//! The raw log is append-only, so the part at (ordinal, part) never changes within a session:
//! its count, once taken, holds for every later pass. Counts depend on the model's estimator,
//! so a model change starts them over.

use mc_core::media::{inspect_media, without_media};
use mc_core::{Message, Part};

use crate::pass::CountText;

/// Counts of every part of the session's messages so far, by ordinal then part.
#[derive(Debug, Clone, Default)]
pub(crate) struct PartTokens {
    model: String,
    by_message: Vec<Vec<u64>>,
    /// The sum of `by_message`, kept as it changes: every pass reads it, and a long
    /// session's parts are too many to add up on each.
    total: u64,
}

impl PartTokens {
    /// Brings the counts up to `messages` (the whole conversation of a pass for `model`),
    /// counting only messages not counted yet.
    pub fn update(&mut self, model: &str, messages: &[Message], count: CountText<'_>) {
        if self.model != model {
            self.model = model.to_owned();
            self.by_message.clear();
            self.total = 0;
        }
        if self.by_message.len() > messages.len() {
            self.by_message.truncate(messages.len());
            self.total = self.sum_from(0);
        }
        for message in &messages[self.by_message.len()..] {
            let parts: Vec<u64> = message
                .parts
                .iter()
                .map(|part| part_tokens(part, count))
                .collect();
            self.total += parts.iter().sum::<u64>();
            self.by_message.push(parts);
        }
    }

    /// The counts of every part of every message: the client's conversation as it sent it.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The count of part `part` of message `ordinal` (0 when out of range).
    pub fn of(&self, ordinal: u64, part: u32) -> u64 {
        usize::try_from(ordinal)
            .ok()
            .and_then(|ordinal| self.by_message.get(ordinal))
            .and_then(|parts| parts.get(usize::try_from(part).ok()?))
            .copied()
            .unwrap_or(0)
    }

    /// The counts of every part of messages `from..`.
    pub fn sum_from(&self, from: usize) -> u64 {
        self.by_message.iter().skip(from).flatten().sum()
    }
}

/// Tokens every content block costs beyond its text: the wire's framing of a block (its
/// type and keys), which providers count like any other input. Without it, a prompt of many
/// small blocks (placeholders, skeletons, short results) was estimated far under what the
/// provider counted, and the learned correction, one ratio for the whole prompt, then
/// over-corrected the large text of the system prompt.
pub const BLOCK_FRAMING_TOKENS: u64 = 6;

/// Estimated tokens of one part as the provider would see it: its text, the ids a call or a
/// result carries, media by the provider's rule ([`mc_core::media`]), and
/// [`BLOCK_FRAMING_TOKENS`].
pub(crate) fn part_tokens(part: &Part, count: CountText<'_>) -> u64 {
    let content = match part {
        Part::Text { text, .. } => count(text),
        Part::ToolCall { id, name, input } => count(id) + count(name) + count(&input.to_string()),
        Part::ToolResult {
            call_id, content, ..
        } => {
            count(call_id)
                + content
                    .iter()
                    .map(|inner| part_tokens(inner, count))
                    .sum::<u64>()
        }
        Part::Thinking { text, .. } => count(text),
        Part::RedactedThinking { data } => count(data),
        // Billed by what it shows (pixels, pages), never by its base64 text: counted as text,
        // one pasted screenshot was "two million tokens" and refused the call.
        Part::Media { media, source } => inspect_media(*media, source).tokens(count),
        // A block we do not know may still carry an image (a server tool's result).
        Part::Unknown { raw, .. } => match without_media(raw, count) {
            Some((stripped, media_tokens)) => count(&stripped.to_string()) + media_tokens,
            None => count(&raw.to_string()),
        },
    };
    BLOCK_FRAMING_TOKENS + content
}

impl mc_core::HeldBytes for PartTokens {
    fn held_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.model.capacity()
            + self
                .by_message
                .iter()
                .map(|parts| std::mem::size_of::<Vec<u64>>() + parts.capacity() * 8)
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use mc_core::MediaKind;
    use serde_json::json;

    use super::*;

    fn bytes_over_four(text: &str) -> u64 {
        text.len() as u64 / 4
    }

    #[test]
    fn a_pasted_screenshot_is_counted_by_its_pixels() {
        // A PNG header stating 2880×1800 followed by 2 MB of payload, as base64.
        let mut png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
        png.extend_from_slice(&2_880_u32.to_be_bytes());
        png.extend_from_slice(&1_800_u32.to_be_bytes());
        let mut data = encode(&png);
        data.push_str(&"QUFB".repeat(700_000));
        let image = Part::Media {
            media: MediaKind::Image,
            source: json!({"type": "base64", "media_type": "image/png", "data": data}),
        };
        assert_eq!(
            part_tokens(&image, &bytes_over_four),
            BLOCK_FRAMING_TOKENS + 1_590
        );
        let in_result = Part::ToolResult {
            call_id: "toolu_1".to_owned(),
            content: vec![image],
            is_error: false,
        };
        assert_eq!(
            part_tokens(&in_result, &bytes_over_four),
            2 * BLOCK_FRAMING_TOKENS + 1 + 1_590
        );
    }

    /// The total follows the counts as messages are added, as the conversation is cut
    /// back, and as the model changes.
    #[test]
    fn the_total_is_every_part_counted() {
        let text = |text: &str| Message::new(mc_core::Role::User, vec![Part::text(text)]);
        let messages = [text("abcdefgh"), text("abcd"), text("abcdefghijkl")];
        let mut counts = PartTokens::default();
        counts.update("m", &messages, &bytes_over_four);
        assert_eq!(counts.total(), 3 * BLOCK_FRAMING_TOKENS + 2 + 1 + 3);
        counts.update("m", &messages[..2], &bytes_over_four);
        assert_eq!(counts.total(), 2 * BLOCK_FRAMING_TOKENS + 2 + 1);
        counts.update("other", &messages[..1], &bytes_over_four);
        assert_eq!(counts.total(), BLOCK_FRAMING_TOKENS + 2);
        assert_eq!(counts.total(), counts.sum_from(0));
    }

    /// Base64 of `bytes` whose length is a multiple of three (so no padding is needed).
    fn encode(bytes: &[u8]) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut padded = bytes.to_vec();
        padded.resize(bytes.len().div_ceil(3) * 3, 0);
        padded
            .chunks(3)
            .flat_map(|c| {
                let n = u32::from(c[0]) << 16 | u32::from(c[1]) << 8 | u32::from(c[2]);
                (0..4).map(move |i| char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]))
            })
            .collect()
    }
}
