//! Media (images, documents, audio) as the provider sees them: what they cost and what to
//! call them.
//!
//! A pasted screenshot is two megabytes of base64, and counting that text as text made one
//! image "2 million tokens" and refused the call. Providers bill media by what it shows:
//! images by their pixels (the rules in [`ImageRule`]), PDFs by their pages, so this module
//! reads only what those rules need (an image header, the PDF's page objects) and never
//! lets the payload reach a tokenizer, a search index or a transcript: those get a label
//! such as `image 1280×720 png` instead ([`MediaFacts`]'s `Display`).
//!
//! Every failure is counted, never refused: a URL or file id (no bytes), a header that is
//! truncated or lies, base64 that does not decode and an unknown type are all counted at
//! the provider's cap for that kind of media, and the part is forwarded as sent.
//!
//! ```
//! use mc_core::MediaKind;
//! use mc_core::media::inspect_media;
//! use serde_json::json;
//!
//! // A 2×1 PNG header, base64, as Anthropic's image block carries it.
//! let source = json!({
//!     "type": "base64",
//!     "media_type": "image/png",
//!     "data": "iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAYAAAAAAAAA",
//! });
//! let facts = inspect_media(MediaKind::Image, &source);
//! assert_eq!(facts.to_string(), "image 2×1 png");
//! assert_eq!(facts.tokens(&|text: &str| text.len() as u64), 1);
//! ```

mod base64_bytes;
mod image_size;
mod image_tokens;
mod in_json;
mod pdf_pages;
mod source;

#[cfg(test)]
pub(crate) mod tests;

use std::fmt;

use serde_json::Value;

pub use base64_bytes::{Base64Bytes, ByteSource};
pub use image_size::{ImageFormat, ImageSize, image_size, sniff_format};
pub use image_tokens::ImageRule;
pub use in_json::without_media;
pub use pdf_pages::{MAX_PDF_PAGES, is_pdf, pdf_pages};

use crate::MediaKind;
use source::{Located, locate};

/// Tokens per PDF page. Anthropic documents 1,500–3,000 tokens of text per page plus the
/// page's image; measured text pages come to about 2,350 in all on Claude, scanned ones to
/// about 1,600 (the image alone). 2,500 errs a little high for text, which keeps a request
/// under the window; the learned correction absorbs the rest. OpenAI also sends each page
/// as its text and an image, and gets the same figure.
pub const PDF_PAGE_TOKENS: u64 = 2_500;

/// Pages assumed for a document whose bytes are not in the request (a URL, a file id) or do
/// not decode. Not [`MAX_PDF_PAGES`]: that would refuse every linked PDF at a small window,
/// while an estimate that proves low is corrected by the provider's overflow error and the
/// retry that follows it.
pub const UNKNOWN_DOCUMENT_PAGES: u64 = 5;

/// Audio bytes per token: about 10 tokens a second at 16 KB a second (16-bit 8 kHz WAV, or
/// 128 kbit/s compressed).
const AUDIO_BYTES_PER_TOKEN: u64 = 1_600;
/// Tokens of audio whose bytes are not in the request or do not decode (about 2.5 minutes).
const UNKNOWN_AUDIO_TOKENS: u64 = 1_500;
/// The most an audio clip is counted at: the providers' 25 MB upload limit.
const MAX_AUDIO_TOKENS: u64 = 25_000_000 / AUDIO_BYTES_PER_TOKEN;

/// What a media part is, read from its source without decoding its payload.
#[derive(Debug, Clone, PartialEq)]
pub struct MediaFacts<'a> {
    /// Image, document or audio.
    pub media: MediaKind,
    /// Whose rule counts it (read from the source's shape: Anthropic's `{"type": "base64",
    /// ...}` against OpenAI's `image_url` / `input_image`).
    pub rule: ImageRule,
    /// The format for the label: the header's (`png`), else the declared media type's
    /// subtype, else where the bytes are (`url`, `file`).
    pub format: Option<String>,
    /// An image's size, when its header could be read.
    pub size: Option<ImageSize>,
    located: Located<'a>,
}

/// The facts of the media part `source` of kind `media`. Cheap: an image's header is read in
/// place; nothing is decoded whole.
pub fn inspect_media(media: MediaKind, source: &Value) -> MediaFacts<'_> {
    let (rule, located) = locate(media, source);
    let size = match (&located, media) {
        (Located::Base64 { data, .. }, MediaKind::Image) => image_size(&Base64Bytes::new(data)),
        _ => None,
    };
    let format = match (&located, media) {
        _ if size.is_some() => size.map(|size| size.format.name().to_owned()),
        (Located::Base64 { data, declared }, _) => sniffed_name(&Base64Bytes::new(data))
            .map(str::to_owned)
            .or_else(|| declared.and_then(subtype)),
        (Located::Text(_), _) => Some("text".to_owned()),
        (Located::Url, _) => Some("url".to_owned()),
        (Located::File, _) => Some("file".to_owned()),
        (Located::Missing, _) => None,
    };
    MediaFacts {
        media,
        rule,
        format,
        size,
        located,
    }
}

impl MediaFacts<'_> {
    /// Tokens the provider bills for this part (framing excluded). `count_text` counts the
    /// text of a text document; nothing else reaches it.
    pub fn tokens(&self, count_text: &dyn Fn(&str) -> u64) -> u64 {
        match self.media {
            MediaKind::Image => match self.size {
                Some(size) => self.rule.tokens(size.width, size.height),
                None => self.rule.cap_tokens(),
            },
            MediaKind::Document => match &self.located {
                Located::Text(texts) => texts.iter().map(|text| count_text(text)).sum(),
                Located::Base64 { data, .. } => {
                    let pages = Base64Bytes::new(data)
                        .decode_all()
                        .filter(|bytes| is_pdf(bytes))
                        .map_or(UNKNOWN_DOCUMENT_PAGES, |bytes| pdf_pages(&bytes));
                    pages * PDF_PAGE_TOKENS
                }
                Located::Url | Located::File | Located::Missing => {
                    UNKNOWN_DOCUMENT_PAGES * PDF_PAGE_TOKENS
                }
            },
            MediaKind::Audio => match &self.located {
                Located::Base64 { data, .. } => {
                    let bytes = Base64Bytes::new(data).byte_len() as u64;
                    bytes
                        .div_ceil(AUDIO_BYTES_PER_TOKEN)
                        .clamp(1, MAX_AUDIO_TOKENS)
                }
                Located::Text(_) | Located::Url | Located::File | Located::Missing => {
                    UNKNOWN_AUDIO_TOKENS
                }
            },
        }
    }
}

/// `image 1280×720 png`, `image url`, `document pdf`, `audio wav`: what the part is, in a
/// few words, for placeholders, transcripts and the search index.
impl fmt::Display for MediaFacts<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.media {
            MediaKind::Image => "image",
            MediaKind::Document => "document",
            MediaKind::Audio => "audio",
        };
        f.write_str(kind)?;
        if let Some(size) = self.size {
            write!(f, " {}×{}", size.width, size.height)?;
        }
        if let Some(format) = &self.format {
            write!(f, " {format}")?;
        }
        Ok(())
    }
}

/// The format named by the first bytes: one of the image formats, or `pdf`.
fn sniffed_name(bytes: &Base64Bytes<'_>) -> Option<&'static str> {
    let is_pdf = (0..5).all(|at| bytes.byte_at(at) == b"%PDF-".get(at).copied());
    sniff_format(bytes)
        .map(ImageFormat::name)
        .or(is_pdf.then_some("pdf"))
}

/// `[image 1280×720 png]`: the label of a media part in brackets, as transcripts and the
/// search index show it in place of the payload.
pub fn media_label(media: MediaKind, source: &Value) -> String {
    format!("[{}]", inspect_media(media, source))
}

/// The subtype of a declared media type (`image/heic` → `heic`), kept to a short run of
/// letters and digits: it is written into prompts, so nothing a client sends reaches them
/// unchecked.
fn subtype(media_type: &str) -> Option<String> {
    let subtype = media_type.rsplit('/').next()?.split(';').next()?;
    let kept: String = subtype
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '.' || *c == '+')
        .take(24)
        .collect::<String>()
        .to_ascii_lowercase();
    (!kept.is_empty()).then_some(kept)
}
