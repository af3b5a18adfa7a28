//! Where a media part's bytes are, in each wire's shape, and whose rule counts it.
//!
//! The neutral [`crate::Part::Media`] keeps the wire's own source value (so it goes back out
//! as sent); the shapes differ by wire:
//! - Anthropic: `{"type": "base64", "media_type", "data"}`, `{"type": "url", "url"}`,
//!   `{"type": "file", "file_id"}`, and for documents `{"type": "text", "data"}` or
//!   `{"type": "content", "content": [blocks]}`;
//! - OpenAI Chat: `image_url` as `{"url", "detail"}` (or a bare string), `file` as
//!   `{"file_data" | "file_id"}`, `input_audio` as `{"data", "format"}`;
//! - OpenAI Responses: the whole part, `{"type": "input_image", "image_url" | "file_id",
//!   "detail"}`, `{"type": "input_file", "file_data" | "file_url" | "file_id"}`, and
//!   `{"type": "input_audio", "input_audio": {"data", "format"}}`.
//!
//! URLs may be `data:` URLs, whose payload is base64 like Anthropic's `data`.

use serde_json::Value;

use super::ImageRule;
use crate::MediaKind;

/// Where the bytes of a media part are.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Located<'a> {
    /// In the request, as base64, with the media type the client declared.
    Base64 {
        /// The base64 text.
        data: &'a str,
        /// The declared media type (`image/png`), or the audio format (`wav`).
        declared: Option<&'a str>,
    },
    /// A text document's texts.
    Text(Vec<&'a str>),
    /// Behind a URL the provider fetches.
    Url,
    /// A file uploaded to the provider before.
    File,
    /// Nowhere we recognise.
    Missing,
}

/// The rule that counts `source` and where its bytes are.
pub(super) fn locate(media: MediaKind, source: &Value) -> (ImageRule, Located<'_>) {
    let kind = source.get("type").and_then(Value::as_str);
    if let Some(kind @ ("base64" | "url" | "file" | "text" | "content")) = kind {
        return (ImageRule::Anthropic, anthropic(kind, source));
    }
    let low_detail = source.get("detail").and_then(Value::as_str) == Some("low");
    let rule = ImageRule::OpenAi { low_detail };
    let located = match media {
        MediaKind::Image => match source {
            Value::String(url) => url_located(url),
            _ => str_at(source, "url")
                .or_else(|| str_at(source, "image_url"))
                .map_or_else(|| file_or_missing(source), url_located),
        },
        MediaKind::Document => match str_at(source, "file_data") {
            Some(data) if data.starts_with("data:") => url_located(data),
            Some(data) => Located::Base64 {
                data,
                declared: None,
            },
            None if str_at(source, "file_url").is_some() => Located::Url,
            None => file_or_missing(source),
        },
        MediaKind::Audio => {
            let audio = source.get("input_audio").unwrap_or(source);
            match str_at(audio, "data") {
                Some(data) => Located::Base64 {
                    data,
                    declared: str_at(audio, "format"),
                },
                None => file_or_missing(source),
            }
        }
    };
    (rule, located)
}

fn anthropic<'a>(kind: &str, source: &'a Value) -> Located<'a> {
    match kind {
        "base64" => str_at(source, "data").map_or(Located::Missing, |data| Located::Base64 {
            data,
            declared: str_at(source, "media_type"),
        }),
        "url" => Located::Url,
        "file" => Located::File,
        "text" => Located::Text(str_at(source, "data").into_iter().collect()),
        _ => Located::Text(
            source
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|block| str_at(block, "text"))
                .collect(),
        ),
    }
}

/// A `data:<type>;base64,<payload>` URL as its payload, any other URL as a link.
fn url_located(url: &str) -> Located<'_> {
    let Some(rest) = url.strip_prefix("data:") else {
        return Located::Url;
    };
    match rest.split_once(',') {
        Some((header, data)) if header.ends_with(";base64") => Located::Base64 {
            data,
            declared: header.split(';').next(),
        },
        _ => Located::Missing,
    }
}

fn file_or_missing(source: &Value) -> Located<'_> {
    if str_at(source, "file_id").is_some() {
        Located::File
    } else {
        Located::Missing
    }
}

fn str_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}
