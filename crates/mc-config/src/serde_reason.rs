//! Rewrites serde's error messages into reasons a config file's author can act on.
//!
//! serde names Rust types (`expected u64`, `expected struct RawPass`) and lists every valid
//! field; users need "expected a whole number" and the one key they probably meant.

/// The user-facing reason for a serde error message about one key.
pub fn humanize(message: &str) -> String {
    if let Some(rest) = message.strip_prefix("unknown field `") {
        return unknown("key", rest);
    }
    if let Some(rest) = message.strip_prefix("unknown variant `") {
        return unknown("value", rest);
    }
    let mut reason = message.to_owned();
    for (rust, plain) in [
        // serde's wording for a string enum given an object, then for any other type
        (
            "invalid value: map, expected map with a single key",
            "invalid type: object, expected a string",
        ),
        ("expected string or map", "expected a string"),
        ("invalid type: map", "invalid type: object"),
        ("invalid type: sequence", "invalid type: list"),
        ("expected u64", "expected a whole number, 0 or more"),
        ("expected u32", "expected a whole number, 0 or more"),
        ("expected a sequence", "expected a list"),
        ("expected a map", "expected an object"),
        ("expected a borrowed string", "expected a string"),
    ] {
        reason = reason.replace(rust, plain);
    }
    if let Some(at) = reason.find("expected struct Raw") {
        reason.replace_range(at.., "expected an object");
    }
    if let Some(at) = reason.find("expected enum Raw") {
        reason.replace_range(at.., "expected a string");
    }
    reason
}

/// `rest` is serde's text after "unknown field `": "name`, expected one of `a`, `b`".
fn unknown(what: &str, rest: &str) -> String {
    let Some((name, expected)) = rest.split_once('`') else {
        return format!("unknown {what} `{rest}");
    };
    let candidates: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    if let Some(best) = closest(name, &candidates) {
        return format!("unknown {what} `{name}` (did you mean `{best}`?)");
    }
    if candidates.is_empty() {
        format!("unknown {what} `{name}`")
    } else {
        let list: Vec<String> = candidates.iter().map(|c| format!("`{c}`")).collect();
        format!(
            "unknown {what} `{name}`; expected one of {}",
            list.join(", ")
        )
    }
}

/// The candidate within a third of `name`'s length in edits, nearest first.
fn closest<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|candidate| (strsim::damerau_levenshtein(name, candidate), *candidate))
        .filter(|(distance, candidate)| {
            let longest = name.chars().count().max(candidate.chars().count());
            *distance > 0 && distance * 3 <= longest.max(3)
        })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_suggest_near_misses() {
        let message = "unknown field `execute_treshold_percent`, expected one of \
                       `execute_threshold_percent`, `execute_threshold_by_model`, `refusal_percent`, `working_set_tokens`, `working_set_horizon_turns`";
        assert_eq!(
            humanize(message),
            "unknown key `execute_treshold_percent` (did you mean `execute_threshold_percent`?)"
        );
        assert_eq!(
            humanize("unknown field `colour`, expected `percent` or `tokens`"),
            "unknown key `colour`; expected one of `percent`, `tokens`"
        );
        assert_eq!(
            humanize("unknown field `x`, there are no fields"),
            "unknown key `x`"
        );
    }

    #[test]
    fn unknown_variants_suggest_near_misses() {
        let message = "unknown variant `1hr`, expected one of `5m`, `1h`, `never`";
        assert_eq!(
            humanize(message),
            "unknown value `1hr` (did you mean `1h`?)"
        );
    }

    #[test]
    fn rust_type_names_become_plain_words() {
        assert_eq!(
            humanize("invalid type: string \"high\", expected u64"),
            "invalid type: string \"high\", expected a whole number, 0 or more"
        );
        assert_eq!(
            humanize("invalid type: integer `3`, expected struct RawPass"),
            "invalid type: integer `3`, expected an object"
        );
        assert_eq!(
            humanize("invalid type: sequence, expected string or map"),
            "invalid type: list, expected a string"
        );
    }
}
