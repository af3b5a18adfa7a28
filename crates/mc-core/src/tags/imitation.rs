//! Cleaning model output of text that looks like engine tags.
//!
//! Models copy what they see: after a few turns of `§N§ ` prefixes they start writing them
//! themselves. Stored output must stay pristine (tags are added at render time), and a
//! hand-written `§4§` or `[dropped §4§]` would mislead the model about which unit is which, so
//! only the engine may write them (DESIGN §5).

use std::borrow::Cow;

const SECTION: char = '§';
const PLACEHOLDER_OPEN: &str = "[dropped §";
const PLACEHOLDER_CLOSE: &str = "§]";

/// Removes tag imitations from model output.
///
/// Removed, anywhere in the text:
/// - a tag: `§`, one or more ASCII digits, `§`, together with one following space if there is
///   one (`"§12§ done"` → `"done"`, `"see §3§."` → `"see ."`);
/// - a placeholder: `[dropped §`, one or more ASCII digits, `§]` (the whole bracket, nothing
///   after it).
///
/// Everything else is kept, including lone `§` characters, `§` around non-digits (`§ 3 §`,
/// `§a§`) and `[dropped]`-like text without a tag. Removal repeats until nothing matches, so
/// the result never contains an imitation, even one formed by the removal itself
/// (`"§§1§2§"` → `"§2§"` would otherwise survive). Text with nothing to remove is borrowed.
pub fn strip_tag_imitations(text: &str) -> Cow<'_, str> {
    let Some(mut cleaned) = strip_once(text) else {
        return Cow::Borrowed(text);
    };
    // Each round removes at least one character, so this ends.
    while let Some(again) = strip_once(&cleaned) {
        cleaned = again;
    }
    Cow::Owned(cleaned)
}

/// One left-to-right pass; `None` when nothing matched.
fn strip_once(text: &str) -> Option<String> {
    let mut out: Option<String> = None;
    let mut copied_to = 0;
    let mut cursor = 0;
    while let Some(offset) = text[cursor..].find([SECTION, '[']) {
        let start = cursor + offset;
        let rest = &text[start..];
        let matched = placeholder_len(rest).or_else(|| tag_len(rest));
        match matched {
            Some(len) => {
                out.get_or_insert_with(String::new)
                    .push_str(&text[copied_to..start]);
                copied_to = start + len;
                cursor = copied_to;
            }
            None => {
                // Step over the matched character (`§` is two bytes, `[` one).
                cursor = start + rest.chars().next().map_or(1, char::len_utf8);
            }
        }
    }
    out.map(|mut cleaned| {
        cleaned.push_str(&text[copied_to..]);
        cleaned
    })
}

/// Length of `§digits§` plus an optional space at the start of `rest`.
fn tag_len(rest: &str) -> Option<usize> {
    let after_open = rest.strip_prefix(SECTION)?;
    let digits = leading_digits(after_open);
    if digits == 0 {
        return None;
    }
    let after_close = after_open[digits..].strip_prefix(SECTION)?;
    let space = usize::from(after_close.starts_with(' '));
    Some(rest.len() - after_close.len() + space)
}

/// Length of `[dropped §digits§]` at the start of `rest`.
fn placeholder_len(rest: &str) -> Option<usize> {
    let after_open = rest.strip_prefix(PLACEHOLDER_OPEN)?;
    let digits = leading_digits(after_open);
    if digits == 0 {
        return None;
    }
    let after_close = after_open[digits..].strip_prefix(PLACEHOLDER_CLOSE)?;
    Some(rest.len() - after_close.len())
}

fn leading_digits(text: &str) -> usize {
    text.bytes().take_while(u8::is_ascii_digit).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn removes_tags_and_placeholders() {
        let cases = [
            ("§12§ done", "done"),
            ("see §3§.", "see ."),
            ("§1§§2§x", "x"),
            ("a [dropped §4§] b", "a  b"),
            ("[dropped §4§][dropped §5§]", ""),
            ("§§1§2§", ""),
            ("§1§  two spaces", " two spaces"),
        ];
        for (input, expected) in cases {
            assert_eq!(strip_tag_imitations(input), expected, "input {input:?}");
        }
    }

    #[test]
    fn keeps_what_is_not_a_tag() {
        for text in [
            "§ 3 §",
            "§a§",
            "§",
            "§§",
            "§12",
            "[dropped]",
            "[dropped §x§]",
            "section § 4",
            "",
            "plain text",
        ] {
            assert!(
                matches!(strip_tag_imitations(text), Cow::Borrowed(kept) if kept == text),
                "{text:?} should be kept as is"
            );
        }
    }

    proptest! {
        #[test]
        fn result_is_clean_and_stable(text in "[§0-9a \\[\\]dropped]{0,40}") {
            let once = strip_tag_imitations(&text).into_owned();
            let twice = strip_tag_imitations(&once);
            prop_assert_eq!(twice.as_ref(), once.as_str());
        }
    }
}
