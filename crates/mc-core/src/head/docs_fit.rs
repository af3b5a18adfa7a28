//! The project docs `m[0]` carries, within their budget.
//!
//! A project's ARCHITECTURE.md and STRUCTURE.md tell a fresh session what a long one learnt
//! the hard way, but a long file would crowd out live work. Docs are taken in name order
//! (the order `m[0]` shows them in), each within what the budget has left; a doc that does
//! not fit is cut at the last heading that does (so the model gets whole sections), or at a
//! line when no heading fits, with one line saying where and how much is left out. A doc
//! that fits not even its first line is left out whole. Pure: the same docs and budget give
//! the same bytes, so a re-render of `m[0]` is byte-stable.

use super::rows::ProjectDoc;
use crate::config::Tokens;

/// The docs that fit `budget` tokens (as `count` counts them), in name order, each whole or
/// cut at a heading with a note.
pub fn fit_docs(
    docs: &[ProjectDoc],
    budget: Tokens,
    count: &dyn Fn(&str) -> u64,
) -> Vec<ProjectDoc> {
    let mut ordered: Vec<&ProjectDoc> = docs
        .iter()
        .filter(|doc| !doc.text.trim().is_empty())
        .collect();
    ordered.sort_by(|a, b| a.name.cmp(&b.name));
    let mut left = budget.get();
    let mut fitted = Vec::new();
    for doc in ordered {
        let text = doc.text.trim_end();
        let whole = count(text);
        if whole <= left {
            left -= whole;
            fitted.push(ProjectDoc {
                name: doc.name.clone(),
                text: text.to_owned(),
            });
            continue;
        }
        if let Some(cut) = cut_to_fit(&doc.name, text, left, count) {
            left = left.saturating_sub(count(&cut));
            fitted.push(ProjectDoc {
                name: doc.name.clone(),
                text: cut,
            });
        }
    }
    fitted
}

/// `text` cut at the last heading (else line) whose lead, with the note, fits `room`.
fn cut_to_fit(name: &str, text: &str, room: u64, count: &dyn Fn(&str) -> u64) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let with_note = |kept: usize| {
        let lead = lines[..kept].join("\n");
        let left_out = lines.len() - kept;
        format!(
            "{}\n[{name} is cut here to fit the context: {left_out} more line{} in the file]",
            lead.trim_end(),
            if left_out == 1 { "" } else { "s" }
        )
    };
    let fits = |kept: usize| count(&with_note(kept)) <= room;
    // The longest lead that fits, by halving: counting is monotone in the lines kept.
    let (mut low, mut high) = (0, lines.len());
    while low < high {
        let middle = (low + high).div_ceil(2);
        if fits(middle) {
            low = middle;
        } else {
            high = middle - 1;
        }
    }
    if low == 0 {
        return None;
    }
    // Prefer ending where a section ends: just before the last heading within the lead.
    let at_heading = (1..=low)
        .rev()
        .find(|&kept| kept < lines.len() && lines[kept].starts_with('#') && kept > 0);
    let kept = match at_heading {
        Some(kept) if lines[..kept].iter().any(|line| !line.trim().is_empty()) => kept,
        _ => low,
    };
    Some(with_note(kept))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn words(text: &str) -> u64 {
        text.split_whitespace().count() as u64
    }

    fn doc(name: &str, text: &str) -> ProjectDoc {
        ProjectDoc {
            name: name.to_owned(),
            text: text.to_owned(),
        }
    }

    const ARCHITECTURE: &str = "# Architecture\nThe proxy sits between agent and provider.\n\n\
        ## Crates\nmc-core is pure; shells are thin.\n\n## Store\nOne SQLite file holds \
        everything, in WAL mode, with one writer thread and readers on their own connections, \
        and every migration behind the schema fence.";

    #[test]
    fn docs_that_fit_come_whole_in_name_order() {
        let docs = [
            doc("STRUCTURE.md", "src/ holds the code."),
            doc("ARCHITECTURE.md", ARCHITECTURE),
        ];
        let fitted = fit_docs(&docs, Tokens(1_000), &words);
        assert_eq!(fitted.len(), 2);
        assert_eq!(fitted[0].name, "ARCHITECTURE.md");
        assert_eq!(fitted[0].text, ARCHITECTURE);
    }

    #[test]
    fn a_long_doc_is_cut_at_a_heading_with_a_note() {
        let fitted = fit_docs(&[doc("ARCHITECTURE.md", ARCHITECTURE)], Tokens(32), &words);
        assert_eq!(
            fitted[0].text,
            "# Architecture\nThe proxy sits between agent and provider.\n\n## Crates\nmc-core is \
             pure; shells are thin.\n[ARCHITECTURE.md is cut here to fit the context: 2 more \
             lines in the file]"
        );
    }

    #[test]
    fn a_doc_whose_first_line_does_not_fit_is_left_out() {
        assert!(fit_docs(&[doc("ARCHITECTURE.md", ARCHITECTURE)], Tokens(3), &words).is_empty());
    }

    proptest! {
        /// Whatever the docs and budget, what is kept fits the budget, keeps each doc's
        /// start, and is the same on every call.
        #[test]
        fn fitted_docs_stay_within_budget_and_are_stable(
            texts in prop::collection::vec("(#{0,2} ?[a-z ]{0,30}\n){0,30}", 0..4),
            budget in 0u64..200,
        ) {
            let docs: Vec<ProjectDoc> = texts
                .iter()
                .enumerate()
                .map(|(index, text)| doc(&format!("D{index}.md"), text))
                .collect();
            let fitted = fit_docs(&docs, Tokens(budget), &words);
            let total: u64 = fitted.iter().map(|doc| words(&doc.text)).sum();
            prop_assert!(total <= budget, "{total} > {budget}");
            prop_assert_eq!(&fitted, &fit_docs(&docs, Tokens(budget), &words));
            for kept in &fitted {
                let source = docs.iter().find(|doc| doc.name == kept.name).map(|doc| doc.text.trim_end());
                let lead = kept.text.split("\n[").next().unwrap_or_default();
                prop_assert!(source.is_some_and(|source| source.starts_with(lead.trim_end())));
            }
        }
    }
}
