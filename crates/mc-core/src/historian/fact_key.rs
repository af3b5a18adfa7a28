//! The normalised form two facts are the same under: the historian reads overlapping history
//! and restates facts in passing variations of case, spacing and final punctuation; those
//! are one fact seen again, not two.

/// `text` lowercased, whitespace runs collapsed to one space, trailing sentence punctuation
/// and surrounding whitespace removed.
pub fn fact_key(text: &str) -> String {
    let collapsed = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    collapsed
        .trim_end_matches(['.', '!', ';', ','])
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restatements_share_a_key_and_different_facts_do_not() {
        assert_eq!(
            fact_key("  Tests end in _test.  "),
            fact_key("tests   end in\n_TEST")
        );
        assert_ne!(
            fact_key("Tests end in _test"),
            fact_key("Tests end in _spec")
        );
    }
}
