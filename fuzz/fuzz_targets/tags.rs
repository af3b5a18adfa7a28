//! The tag parsers: `strip_tag_imitations` (model output) and `parse_drop_spec` (the
//! model's `ctx_reduce(drop=…)`). No panic on any text; stripping leaves no imitation (a
//! second strip borrows) and never adds text; a parsed drop list is non-empty and within
//! its bounds, and writing its tags back as a list parses to the same tags.
#![no_main]

use std::borrow::Cow;

use libfuzzer_sys::fuzz_target;
use mc_core::reduction::{MAX_SPEC_TAGS, parse_drop_spec};
use mc_core::tags::strip_tag_imitations;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let stripped = strip_tag_imitations(&text);
    assert!(stripped.len() <= text.len(), "stripping added text");
    assert!(
        matches!(strip_tag_imitations(&stripped), Cow::Borrowed(_)),
        "stripped text still holds a tag imitation: {stripped:?}"
    );

    if let Ok(spec) = parse_drop_spec(&text) {
        let tags = spec.tags();
        assert!(!tags.is_empty(), "a parsed drop list names no tag");
        assert!(
            tags.len() <= MAX_SPEC_TAGS,
            "a drop list over the tag limit"
        );
        // Written back as runs ("3-5,9"): at most one per entry parsed, so within bounds.
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for tag in tags {
            match runs.last_mut() {
                Some((_, end)) if end.checked_add(1) == Some(tag.0) => *end = tag.0,
                _ => runs.push((tag.0, tag.0)),
            }
        }
        let written: Vec<String> = runs
            .iter()
            .map(|(start, end)| {
                if start == end {
                    start.to_string()
                } else {
                    format!("{start}-{end}")
                }
            })
            .collect();
        let written = written.join(",");
        let again = parse_drop_spec(&written);
        assert_eq!(
            again.as_ref().map(|spec| spec.tags()),
            Ok(tags),
            "{written:?}"
        );
    }
});
