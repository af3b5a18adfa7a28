//! Media inside a wire value that is counted as JSON text.
//!
//! Some counters see whole blocks as JSON (the simulator counts each block's canonical JSON;
//! an unknown block or a tool result may carry an image). Counted as text, one screenshot's
//! base64 is over a million tokens, so before such a value is counted its media parts are
//! swapped for their labels and counted by the provider's rule instead.

use serde_json::Value;

use super::inspect_media;
use crate::MediaKind;

/// `value` with every media part in it replaced by its label (`[image 1280×720 png]`), and
/// the tokens those parts cost; `None` when it holds no media (nothing to copy).
///
/// Recognised in every wire's shape: Anthropic `image` / `document` blocks, Chat
/// `image_url` / `file` / `input_audio` parts, Responses `input_image` / `input_file` /
/// `input_audio` parts. `count_text` counts a text document's text.
pub fn without_media(value: &Value, count_text: &dyn Fn(&str) -> u64) -> Option<(Value, u64)> {
    if !has_media(value) {
        return None;
    }
    let mut stripped = value.clone();
    let tokens = strip(&mut stripped, count_text);
    Some((stripped, tokens))
}

fn has_media(value: &Value) -> bool {
    match value {
        Value::Object(_) if media_of(value).is_some() => true,
        Value::Object(fields) => fields.values().any(has_media),
        Value::Array(items) => items.iter().any(has_media),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => false,
    }
}

fn strip(value: &mut Value, count_text: &dyn Fn(&str) -> u64) -> u64 {
    if let Some((media, source)) = media_of(value) {
        let facts = inspect_media(media, source);
        let tokens = facts.tokens(count_text);
        *value = Value::String(format!("[{facts}]"));
        return tokens;
    }
    match value {
        Value::Object(fields) => fields.values_mut().map(|v| strip(v, count_text)).sum(),
        Value::Array(items) => items.iter_mut().map(|v| strip(v, count_text)).sum(),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => 0,
    }
}

/// The kind and source of `value` when it is a media part of some wire.
fn media_of(value: &Value) -> Option<(MediaKind, &Value)> {
    let kind = value.get("type")?.as_str()?;
    let inner = |key: &str| value.get(key);
    match kind {
        "image" => Some((MediaKind::Image, inner("source")?)),
        "document" => Some((MediaKind::Document, inner("source")?)),
        "image_url" => Some((MediaKind::Image, inner("image_url")?)),
        "file" => Some((MediaKind::Document, inner("file")?)),
        "input_audio" => Some((MediaKind::Audio, inner("input_audio").unwrap_or(value))),
        "input_image" => Some((MediaKind::Image, value)),
        "input_file" => Some((MediaKind::Document, value)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn media_in_a_tool_result_is_swapped_for_its_label_and_counted_by_its_rule() {
        // A PNG header stating 1280×720, as base64.
        let data = "iVBORw0KGgoAAAANSUhEUgAABQAAAALQCAYAAAAAAAAA";
        let block = json!({
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": [
                {"type": "text", "text": "shot.png"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
            ],
        });
        let count = |text: &str| text.len() as u64;
        let (stripped, tokens) = without_media(&block, &count).unwrap();
        assert_eq!(tokens, 1_229);
        assert_eq!(stripped["content"][1], json!("[image 1280×720 png]"));
        assert_eq!(stripped["content"][0], block["content"][0]);
        let chat = json!([{"type": "image_url", "image_url": {"url": "https://x/a.png", "detail": "low"}}]);
        assert_eq!(without_media(&chat, &count).map(|(_, t)| t), Some(85));
        assert_eq!(
            without_media(&json!({"type": "text", "text": "hi"}), &count),
            None
        );
    }
}
