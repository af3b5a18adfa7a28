//! How many bytes a value keeps alive, roughly, so that caches can be bounded by memory
//! rather than by a count of entries.
//!
//! A proxy runs all day: a cache bounded by sessions grows with the size of the sessions it
//! has seen, and one long session outweighs a hundred short ones. The figures are estimates
//! (allocation sizes as requested, plus the fixed size of each element): close enough to
//! keep a budget, cheap enough to take on every put. Values shared with others (`Arc`) are
//! counted where they are owned, not where they are only referenced.

use serde_json::Value;

use crate::{Message, Part};

/// Approximate bytes a value holds on the heap, itself included.
pub trait HeldBytes {
    /// The estimate, in bytes.
    fn held_bytes(&self) -> usize;
}

impl HeldBytes for Message {
    fn held_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + parts_bytes(&self.parts)
    }
}

/// The bytes held by a list of parts, the list's own slots included.
pub fn parts_bytes(parts: &[Part]) -> usize {
    parts.iter().map(part_bytes).sum()
}

/// The bytes held by one part, its slot in a list included.
fn part_bytes(part: &Part) -> usize {
    let owned = match part {
        Part::Text { text, .. } => text.capacity(),
        Part::ToolCall { id, name, input } => id.capacity() + name.capacity() + value_bytes(input),
        Part::ToolResult {
            call_id, content, ..
        } => call_id.capacity() + parts_bytes(content),
        Part::Thinking { text, signature } => {
            text.capacity() + signature.as_ref().map_or(0, String::capacity)
        }
        Part::RedactedThinking { data } => data.capacity(),
        Part::Media { source, .. } => value_bytes(source),
        Part::Unknown { type_name, raw } => type_name.capacity() + value_bytes(raw),
    };
    std::mem::size_of::<Part>() + owned
}

/// The bytes a JSON value holds beyond its own slot.
pub fn value_bytes(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
        Value::String(text) => text.capacity(),
        Value::Array(items) => items
            .iter()
            .map(|item| std::mem::size_of::<Value>() + value_bytes(item))
            .sum(),
        // An ordered map keeps each key and value, plus an index entry per key.
        Value::Object(map) => map
            .iter()
            .map(|(key, item)| {
                key.capacity() + 2 * std::mem::size_of::<Value>() + value_bytes(item)
            })
            .sum(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::Role;

    #[test]
    fn grows_with_the_text_held() {
        let small = Message::new(Role::User, vec![Part::text("hi")]);
        let large = Message::new(Role::User, vec![Part::text("x".repeat(10_000))]);
        assert!(large.held_bytes() >= 10_000 + small.held_bytes() - 2);
        let call = Message::new(
            Role::Assistant,
            vec![Part::ToolCall {
                id: "toolu_1".to_owned(),
                name: "Write".to_owned(),
                input: json!({"content": "y".repeat(5_000)}),
            }],
        );
        assert!(call.held_bytes() > 5_000);
        let result = Message::new(
            Role::User,
            vec![Part::ToolResult {
                call_id: "toolu_1".to_owned(),
                content: vec![Part::text("z".repeat(7_000))],
                is_error: false,
            }],
        );
        assert!(result.held_bytes() > 7_000);
    }
}
