use proptest::prelude::*;
use serde_json::{Value, json};

use super::image_size::tests::{jpeg, png};
use super::*;

/// Standard padded base64, for building sources.
pub(crate) fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A screenshot-sized payload: a real header, then `total` bytes of noise.
fn screenshot(header: Vec<u8>, total: usize) -> Vec<u8> {
    let mut bytes = header;
    let mut state = 0x2545_f491_u32;
    while bytes.len() < total {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        bytes.push(state.to_le_bytes()[0]);
    }
    bytes
}

fn anthropic_image(bytes: &[u8], media_type: &str) -> Value {
    json!({"type": "base64", "media_type": media_type, "data": base64(bytes)})
}

fn words(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

#[test]
fn a_two_megabyte_screenshot_costs_its_pixels_not_its_base64() {
    let source = anthropic_image(&screenshot(png(2880, 1800), 2_000_000), "image/png");
    let facts = inspect_media(MediaKind::Image, &source);
    assert_eq!(facts.to_string(), "image 2880×1800 png");
    assert_eq!(facts.tokens(&words), 1_590);
    let small = anthropic_image(&png(1280, 720), "image/png");
    // 1280×720 / 750 = 1,228.8: under both of Anthropic's limits, the plain rule.
    assert_eq!(
        inspect_media(MediaKind::Image, &small).tokens(&words),
        1_229
    );
    assert_eq!(
        media_label(MediaKind::Image, &small),
        "[image 1280×720 png]"
    );
}

#[test]
fn openai_images_are_counted_by_tiles_and_detail() {
    let data = format!("data:image/jpeg;base64,{}", base64(&jpeg(1024, 1024)));
    let chat = json!({"url": data, "detail": "high"});
    let facts = inspect_media(MediaKind::Image, &chat);
    assert_eq!(facts.rule, ImageRule::OpenAi { low_detail: false });
    assert_eq!(facts.to_string(), "image 1024×1024 jpeg");
    assert_eq!(facts.tokens(&words), 765);
    let low = json!({"url": data, "detail": "low"});
    assert_eq!(inspect_media(MediaKind::Image, &low).tokens(&words), 85);
    let responses = json!({"type": "input_image", "image_url": data, "detail": "auto"});
    assert_eq!(
        inspect_media(MediaKind::Image, &responses).tokens(&words),
        765
    );
    let bare = Value::String(data);
    assert_eq!(inspect_media(MediaKind::Image, &bare).tokens(&words), 765);
}

#[test]
fn images_without_bytes_or_with_bad_ones_are_counted_at_the_cap() {
    let cap = |source: Value| {
        let facts = inspect_media(MediaKind::Image, &source);
        (facts.to_string(), facts.tokens(&words))
    };
    assert_eq!(
        cap(json!({"type": "url", "url": "https://example.com/a.png"})),
        ("image url".to_owned(), 1_600)
    );
    assert_eq!(
        cap(json!({"type": "file", "file_id": "file_1"})),
        ("image file".to_owned(), 1_600)
    );
    assert_eq!(
        cap(json!({"url": "https://example.com/a.png"})),
        ("image url".to_owned(), 1_445)
    );
    assert_eq!(
        cap(json!({"type": "input_image", "file_id": "f"})),
        ("image file".to_owned(), 1_445)
    );
    // Base64 that does not decode, a truncated header, an unknown type.
    assert_eq!(
        cap(json!({"type": "base64", "media_type": "image/png", "data": "%%%not base64%%%"})),
        ("image png".to_owned(), 1_600)
    );
    let truncated = base64(&png(1280, 720)[..18]);
    assert_eq!(
        cap(json!({"type": "base64", "media_type": "image/png", "data": truncated})),
        ("image png".to_owned(), 1_600)
    );
    assert_eq!(
        cap(json!({"type": "base64", "media_type": "image/heic", "data": base64(b"ftypheic....")})),
        ("image heic".to_owned(), 1_600)
    );
    // A header that lies about its size is held to the provider's downscale.
    assert_eq!(
        cap(anthropic_image(&png(100_000, 100_000), "image/png")),
        ("image 100000×100000 png".to_owned(), 1_590)
    );
    assert_eq!(cap(json!(null)), ("image".to_owned(), 1_445));
    assert_eq!(cap(json!({"type": "base64"})), ("image".to_owned(), 1_600));
}

#[test]
fn a_declared_type_reaches_labels_only_as_a_short_safe_word() {
    let source = json!({"type": "base64", "media_type": "image/x-<script>; q=1", "data": "@@"});
    assert_eq!(
        inspect_media(MediaKind::Image, &source).to_string(),
        "image x-script"
    );
}

#[test]
fn documents_are_counted_by_pages_or_text() {
    let pdf = b"%PDF-1.4\n<< /Type /Page >> << /Type /Page >>\n%%EOF";
    let anthropic = json!({"type": "base64", "media_type": "application/pdf", "data": base64(pdf)});
    let facts = inspect_media(MediaKind::Document, &anthropic);
    assert_eq!(facts.to_string(), "document pdf");
    assert_eq!(facts.tokens(&words), 2 * PDF_PAGE_TOKENS);
    let chat = json!({"file_data": format!("data:application/pdf;base64,{}", base64(pdf)), "filename": "a.pdf"});
    assert_eq!(
        inspect_media(MediaKind::Document, &chat).tokens(&words),
        2 * PDF_PAGE_TOKENS
    );
    let text = json!({"type": "text", "media_type": "text/plain", "data": "three plain words"});
    let facts = inspect_media(MediaKind::Document, &text);
    assert_eq!(
        (facts.to_string(), facts.tokens(&words)),
        ("document text".to_owned(), 3)
    );
    let content = json!({"type": "content", "content": [{"type": "text", "text": "a b"}, {"type": "text", "text": "c"}]});
    assert_eq!(
        inspect_media(MediaKind::Document, &content).tokens(&words),
        3
    );
    let linked = json!({"type": "input_file", "file_url": "https://example.com/a.pdf"});
    assert_eq!(
        inspect_media(MediaKind::Document, &linked).tokens(&words),
        UNKNOWN_DOCUMENT_PAGES * PDF_PAGE_TOKENS
    );
}

#[test]
fn audio_is_counted_by_its_length() {
    let clip = base64(&vec![0_u8; 160_000]);
    let chat = json!({"data": clip, "format": "wav"});
    let facts = inspect_media(MediaKind::Audio, &chat);
    assert_eq!(
        (facts.to_string(), facts.tokens(&words)),
        ("audio wav".to_owned(), 100)
    );
    let responses = json!({"type": "input_audio", "input_audio": {"data": clip, "format": "mp3"}});
    assert_eq!(
        inspect_media(MediaKind::Audio, &responses).tokens(&words),
        100
    );
}

fn arb_source() -> impl Strategy<Value = (MediaKind, Value)> {
    let kind = prop_oneof![
        Just(MediaKind::Image),
        Just(MediaKind::Document),
        Just(MediaKind::Audio)
    ];
    let payload = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..64).prop_map(|bytes| base64(&bytes)),
        (any::<u32>(), any::<u32>()).prop_map(|(w, h)| base64(&png(w, h))),
        (any::<u16>(), any::<u16>(), 0..40_usize).prop_map(|(w, h, cut)| {
            let bytes = jpeg(w, h);
            base64(&bytes[..bytes.len().saturating_sub(cut)])
        }),
        ".{0,40}",
    ];
    let shape = 0..5_u8;
    (kind, payload, shape).prop_map(|(kind, data, shape)| {
        let source = match shape {
            0 => json!({"type": "base64", "media_type": "image/png", "data": data}),
            1 => json!({"url": format!("data:image/png;base64,{data}"), "detail": "high"}),
            2 => json!({"type": "input_image", "image_url": data, "detail": "low"}),
            3 => json!({"file_data": data, "data": data}),
            _ => Value::String(data),
        };
        (kind, source)
    })
}

proptest! {
    #[test]
    fn any_source_is_counted_within_its_bounds((kind, source) in arb_source()) {
        let facts = inspect_media(kind, &source);
        let tokens = facts.tokens(&words);
        let cap = match kind {
            MediaKind::Image => 1_600,
            MediaKind::Document => MAX_PDF_PAGES * PDF_PAGE_TOKENS,
            MediaKind::Audio => MAX_AUDIO_TOKENS,
        };
        prop_assert!(tokens <= cap, "{tokens} > {cap}");
        prop_assert!(kind == MediaKind::Document || tokens >= 1);
        let label = facts.to_string();
        prop_assert!(label.len() < 80, "{label}");
        prop_assert!(!label.contains(['<', '>', '[', ']', '"', '\n']), "{label}");
    }

    #[test]
    fn any_bytes_give_a_size_or_none_without_panicking(
        bytes in proptest::collection::vec(any::<u8>(), 0..256)
    ) {
        if let Some(size) = image_size(bytes.as_slice()) {
            prop_assert!(size.width > 0 && size.height > 0);
        }
        let encoded = base64(&bytes);
        prop_assert_eq!(Base64Bytes::new(&encoded).decode_all(), Some(bytes.clone()));
        prop_assert_eq!(image_size(&Base64Bytes::new(&encoded)), image_size(bytes.as_slice()));
    }
}
