//! The media readers: `mc_core::media::image_size` on raw bytes and on their base64 (read in
//! place), `pdf_pages`, and `inspect_media` on sources of every wire's shape. No panic on
//! any bytes; the in-place base64 reader agrees with the raw bytes; every count stays
//! within the provider's cap for its kind and every label is short and free of brackets.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mc_core::MediaKind;
use mc_core::media::{
    Base64Bytes, MAX_PDF_PAGES, PDF_PAGE_TOKENS, image_size, inspect_media, pdf_pages,
};
use serde_json::json;

/// Standard padded base64 of `bytes`.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            out.push(if i <= chunk.len() {
                char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize])
            } else {
                '='
            });
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let raw = image_size(data);
    if let Some(size) = raw {
        assert!(size.width > 0 && size.height > 0, "a zero-sized image");
    }
    let encoded = base64(data);
    assert_eq!(image_size(&Base64Bytes::new(&encoded)), raw, "base64 read differs");
    assert_eq!(Base64Bytes::new(&encoded).decode_all().as_deref(), Some(data));
    let pages = pdf_pages(data);
    assert!((1..=MAX_PDF_PAGES).contains(&pages), "{pages} pages");

    // The same bytes as each wire carries them, and as text that may not be base64 at all.
    let text = String::from_utf8_lossy(data);
    let data_url = format!("data:image/png;base64,{encoded}");
    let sources = [
        json!({"type": "base64", "media_type": "image/png", "data": encoded}),
        json!({"type": "base64", "media_type": text, "data": text}),
        json!({"url": data_url, "detail": "high"}),
        json!({"type": "input_image", "image_url": text, "detail": "low"}),
        json!({"file_data": data_url}),
        json!({"type": "input_audio", "input_audio": {"data": encoded, "format": text}}),
    ];
    for source in &sources {
        for kind in [MediaKind::Image, MediaKind::Document, MediaKind::Audio] {
            let facts = inspect_media(kind, source);
            let tokens = facts.tokens(&|text: &str| text.len() as u64 / 4);
            let cap = match kind {
                MediaKind::Image => 1_600,
                MediaKind::Document => MAX_PDF_PAGES * PDF_PAGE_TOKENS.max(text.len() as u64),
                MediaKind::Audio => 15_625,
            };
            assert!(tokens <= cap, "{kind:?} counted {tokens}");
            let label = facts.to_string();
            assert!(label.len() < 80, "label too long: {label:?}");
            assert!(!label.contains(['[', ']', '\n', '"']), "label {label:?}");
        }
    }
});
