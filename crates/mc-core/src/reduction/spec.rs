//! Parsing the drop list the model (or the operator) writes: `"3-5,12"`.

use std::collections::BTreeSet;
use std::fmt;

use crate::tags::TagNo;

/// The longest spec accepted, in bytes; a drop list is a few dozen characters in practice.
pub const MAX_SPEC_BYTES: usize = 4 * 1024;
/// The most comma-separated entries accepted.
pub const MAX_SPEC_RANGES: usize = 64;
/// The most distinct tags one spec may name, so a typo like `1-999999` cannot queue the
/// whole session.
pub const MAX_SPEC_TAGS: usize = 1_000;

/// A parsed drop list: distinct tags, ascending. Overlapping ranges and repeats are merged.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DropSpec(BTreeSet<TagNo>);

impl DropSpec {
    /// The tags named, ascending.
    pub fn tags(&self) -> &BTreeSet<TagNo> {
        &self.0
    }

    /// How many distinct tags the spec names.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the spec names no tag (only possible through `Default`; parsing rejects it).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl FromIterator<TagNo> for DropSpec {
    /// A spec from tags chosen by code (automatic lanes, tests) rather than parsed text.
    fn from_iter<I: IntoIterator<Item = TagNo>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

/// Why a drop list was refused. Messages name the offending entry and where it starts, so
/// the model can fix its call without guessing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DropSpecError {
    /// Nothing but whitespace and commas.
    Empty,
    /// Longer than [`MAX_SPEC_BYTES`].
    TooLong {
        /// The input's length in bytes.
        bytes: usize,
    },
    /// More entries than [`MAX_SPEC_RANGES`].
    TooManyRanges {
        /// How many entries the input has.
        count: usize,
    },
    /// Names more than [`MAX_SPEC_TAGS`] distinct tags.
    TooManyTags {
        /// The entry that crossed the limit.
        token: String,
        /// Its character offset (0-based) in the input.
        position: usize,
    },
    /// An entry that is neither a number nor a range `a-b` of numbers.
    BadToken {
        /// The entry, trimmed.
        token: String,
        /// Its character offset (0-based) in the input.
        position: usize,
    },
    /// A range whose end is below its start (`5-3`).
    Descending {
        /// The entry, trimmed.
        token: String,
        /// Its character offset (0-based) in the input.
        position: usize,
    },
}

impl fmt::Display for DropSpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => write!(f, "drop list is empty; write tags like \"3-5,12\""),
            Self::TooLong { bytes } => write!(
                f,
                "drop list is {bytes} bytes, over the {MAX_SPEC_BYTES}-byte limit; use ranges like \"3-40\""
            ),
            Self::TooManyRanges { count } => write!(
                f,
                "drop list has {count} entries, over the limit of {MAX_SPEC_RANGES}; merge neighbours into ranges"
            ),
            Self::TooManyTags { token, position } => write!(
                f,
                "drop list entry \"{token}\" at character {position} takes it over {MAX_SPEC_TAGS} tags; drop less at once"
            ),
            Self::BadToken { token, position } => write!(
                f,
                "drop list entry \"{token}\" at character {position} is not a tag number or a range like 3-5"
            ),
            Self::Descending { token, position } => write!(
                f,
                "drop list range \"{token}\" at character {position} runs backwards; write the smaller tag first"
            ),
        }
    }
}

impl std::error::Error for DropSpecError {}

/// Parses `"3-5,12"`, also `"§3§-§5§, 12"`.
///
/// Entries are separated by commas; whitespace around entries, numbers and dashes is ignored;
/// each number may carry one `§` on either side; a range is `a-b` with `a ≤ b`, inclusive
/// (an en dash `–` works too). Empty entries between commas are skipped (`"3,,4,"`), but at
/// least one tag is required. Sizes are bounded ([`MAX_SPEC_BYTES`], [`MAX_SPEC_RANGES`],
/// [`MAX_SPEC_TAGS`]) before any range is expanded, so parsing is cheap whatever the input.
pub fn parse_drop_spec(input: &str) -> Result<DropSpec, DropSpecError> {
    if input.len() > MAX_SPEC_BYTES {
        return Err(DropSpecError::TooLong { bytes: input.len() });
    }
    let entries: Vec<(usize, &str)> = entries(input)
        .filter(|(_, entry)| !entry.is_empty())
        .collect();
    if entries.len() > MAX_SPEC_RANGES {
        return Err(DropSpecError::TooManyRanges {
            count: entries.len(),
        });
    }
    let mut tags = BTreeSet::new();
    for (position, token) in entries {
        let (start, end) = parse_entry(token).ok_or_else(|| DropSpecError::BadToken {
            token: token.to_owned(),
            position,
        })?;
        if end < start {
            return Err(DropSpecError::Descending {
                token: token.to_owned(),
                position,
            });
        }
        let too_many = || DropSpecError::TooManyTags {
            token: token.to_owned(),
            position,
        };
        let span = usize::try_from(end - start).map_err(|_| too_many())?;
        if span >= MAX_SPEC_TAGS {
            return Err(too_many());
        }
        tags.extend((start..=end).map(TagNo));
        if tags.len() > MAX_SPEC_TAGS {
            return Err(too_many());
        }
    }
    if tags.is_empty() {
        return Err(DropSpecError::Empty);
    }
    Ok(DropSpec(tags))
}

/// The comma-separated entries, trimmed, each with the character offset of its first
/// non-blank character.
fn entries(input: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut char_offset = 0;
    input.split(',').map(move |raw| {
        let leading = raw.len() - raw.trim_start().len();
        let position = char_offset + raw[..leading].chars().count();
        // The comma itself is one character.
        char_offset += raw.chars().count() + 1;
        (position, raw.trim())
    })
}

/// `(start, end)` of one entry, `None` when it is malformed.
fn parse_entry(token: &str) -> Option<(u32, u32)> {
    match token.split_once(['-', '–']) {
        Some((start, end)) => Some((parse_number(start)?, parse_number(end)?)),
        None => parse_number(token).map(|tag| (tag, tag)),
    }
}

/// A decimal tag number with at most one `§` on each side, whitespace allowed around it.
fn parse_number(text: &str) -> Option<u32> {
    let text = text.trim();
    let text = text.strip_prefix('§').unwrap_or(text);
    let text = text.strip_suffix('§').unwrap_or(text);
    let text = text.trim();
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn never_panics_and_stays_bounded(input in "[0-9§, \\-–a]{0,80}") {
            if let Ok(spec) = parse_drop_spec(&input) {
                prop_assert!(!spec.is_empty() && spec.len() <= MAX_SPEC_TAGS);
            }
        }

        #[test]
        fn written_ranges_parse_back(ranges in proptest::collection::vec((1u32..500, 0u32..5), 1..10)) {
            let text = ranges
                .iter()
                .map(|(start, len)| format!("§{start}§ - {}", start + len))
                .collect::<Vec<_>>()
                .join(" , ");
            let expected: BTreeSet<TagNo> = ranges
                .iter()
                .flat_map(|(start, len)| (*start..=start + len).map(TagNo))
                .collect();
            prop_assert_eq!(parse_drop_spec(&text).map(|spec| spec.tags().clone()), Ok(expected));
        }
    }

    fn tags(spec: &DropSpec) -> Vec<u32> {
        spec.tags().iter().map(|tag| tag.0).collect()
    }

    #[test]
    fn parses_ranges_and_singles() {
        let spec = parse_drop_spec("3-5,12").unwrap();
        assert_eq!(tags(&spec), [3, 4, 5, 12]);
    }

    #[test]
    fn tolerates_section_signs_and_spaces() {
        for input in [
            "§3§-§5§, 12",
            " 3 - 5 ,§12§ ",
            "§3-5§,12",
            "3–5,12,",
            "5,4,3,12,3-4",
        ] {
            assert_eq!(
                tags(&parse_drop_spec(input).unwrap()),
                [3, 4, 5, 12],
                "{input:?}"
            );
        }
    }

    #[test]
    fn single_tag_range_is_fine() {
        assert_eq!(tags(&parse_drop_spec("7-7").unwrap()), [7]);
    }

    #[test]
    fn bad_tokens_name_token_and_position() {
        let cases = [
            ("3,x", "x", 2),
            ("3, §§4", "§§4", 3),
            ("3-", "3-", 0),
            ("-3", "-3", 0),
            ("1-2-3", "1-2-3", 0),
            ("§1§,  4a", "4a", 6),
            ("99999999999", "99999999999", 0),
            ("3 4", "3 4", 0),
        ];
        for (input, token, position) in cases {
            assert_eq!(
                parse_drop_spec(input),
                Err(DropSpecError::BadToken {
                    token: token.into(),
                    position
                }),
                "{input:?}"
            );
        }
        let message = parse_drop_spec("3,x").unwrap_err().to_string();
        assert!(
            message.contains("\"x\"") && message.contains("character 2"),
            "{message}"
        );
    }

    #[test]
    fn descending_range_is_an_error() {
        assert_eq!(
            parse_drop_spec("1, 5-3"),
            Err(DropSpecError::Descending {
                token: "5-3".into(),
                position: 3
            })
        );
    }

    #[test]
    fn empty_input_is_an_error() {
        assert_eq!(parse_drop_spec(""), Err(DropSpecError::Empty));
        assert_eq!(parse_drop_spec(" , ,"), Err(DropSpecError::Empty));
    }

    #[test]
    fn sizes_are_bounded() {
        let long = "1,".repeat(MAX_SPEC_BYTES);
        assert_eq!(
            parse_drop_spec(&long),
            Err(DropSpecError::TooLong { bytes: long.len() })
        );
        let many = (1..=65)
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(",");
        assert_eq!(
            parse_drop_spec(&many),
            Err(DropSpecError::TooManyRanges { count: 65 })
        );
        assert_eq!(
            parse_drop_spec("1-1000").map(|spec| spec.len()),
            Ok(MAX_SPEC_TAGS)
        );
        assert_eq!(
            parse_drop_spec("1-1001"),
            Err(DropSpecError::TooManyTags {
                token: "1-1001".into(),
                position: 0
            })
        );
        assert_eq!(
            parse_drop_spec("1-600, 2000-2600"),
            Err(DropSpecError::TooManyTags {
                token: "2000-2600".into(),
                position: 7
            })
        );
        // Overlaps are merged before counting.
        assert_eq!(
            parse_drop_spec("1-1000,1-1000").map(|spec| spec.len()),
            Ok(MAX_SPEC_TAGS)
        );
        assert_eq!(
            parse_drop_spec("0-4294967295"),
            Err(DropSpecError::TooManyTags {
                token: "0-4294967295".into(),
                position: 0
            })
        );
    }
}
