use super::*;
use crate::config::Tokens;

/// A stand-in tokenizer: one token per 4 bytes, rounded up.
fn count(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

const DAY_MS: u64 = 86_400_000;
/// 2026-11-07 09:00 UTC.
const T0: u64 = 1_794_042_000_000;

fn compartment(start: u64, end: u64, day: u64, importance: u8, title: &str) -> Compartment {
    Compartment {
        start_ordinal: start,
        end_ordinal: end,
        start_ms: T0 + day * DAY_MS,
        end_ms: T0 + day * DAY_MS + 45 * 60_000,
        title: title.to_owned(),
        importance,
        episode: "feature".to_owned(),
        tiers: [
            format!(
                "{title}: full account. Read the failing test, traced the bug to the retry loop, \
                 rewrote the backoff to use the injected clock, and added a regression test \
                 covering the zero-delay case."
            ),
            format!("{title}: condensed. Backoff uses the injected clock; regression test added."),
            format!("{title}: paragraph. Backoff fixed."),
            format!("{title}: line."),
        ],
        quotes: Vec::new(),
        index: RangeIndex::default(),
    }
}

fn compartments() -> Vec<Compartment> {
    vec![
        compartment(1, 40, 0, 90, "Set up the workspace"),
        Compartment {
            quotes: vec![Quote {
                ordinal: 41,
                text: "The retry test fails one run in ten.\nFind out why; no sleeps.".to_owned(),
            }],
            ..compartment(41, 88, 3, 5, "Chase a flaky retry test")
        },
        compartment(89, 120, 5, 50, "Add the pinned-context section"),
    ]
}

fn memories() -> Vec<Memory> {
    vec![
        Memory {
            id: 2,
            category: MemoryCategory::ProjectRules,
            content: "Never run `cargo fmt --all`; format only your own files.".to_owned(),
            permanent: false,
            seen_count: 1,
        },
        Memory {
            id: 5,
            category: MemoryCategory::Constraints,
            content: "mc-core does no I/O and reads no clock.".to_owned(),
            permanent: false,
            seen_count: 1,
        },
        Memory {
            id: 7,
            category: MemoryCategory::ProjectRules,
            content: "Snapshot tests pin rendered bytes.\nReview every snapshot change.".to_owned(),
            permanent: false,
            seen_count: 1,
        },
        Memory {
            id: 9,
            category: MemoryCategory::Naming,
            content: "Units go in names: ttl_ms, budget_tokens.".to_owned(),
            permanent: false,
            seen_count: 1,
        },
    ]
}

fn pinned() -> Vec<PinnedBlock> {
    vec![
        PinnedBlock {
            source_ordinal: 57,
            text: "You are running in plan mode until told otherwise.".to_owned(),
        },
        PinnedBlock {
            source_ordinal: 0,
            text: "<system-reminder>\nContents of /repo/CLAUDE.md:\nUse cargo nextest.\n</system-reminder>"
                .to_owned(),
        },
    ]
}

fn profile() -> Vec<String> {
    vec![
        "Prefers terse answers.".to_owned(),
        "  ".to_owned(),
        "Works in UTC.".to_owned(),
    ]
}

fn docs() -> Vec<ProjectDoc> {
    vec![
        ProjectDoc {
            name: "STRUCTURE.md".to_owned(),
            text: "crates/mc-core: pure logic\n".to_owned(),
        },
        ProjectDoc {
            name: "ARCHITECTURE.md".to_owned(),
            text: "Proxy in front of the provider.".to_owned(),
        },
    ]
}

fn budgets(history: u64, memory: u64) -> HeadBudgets {
    HeadBudgets {
        history_tokens: Tokens(history),
        memory_tokens: Tokens(memory),
        key_files_tokens: Tokens(3_000),
    }
}

/// A whole small file and the first lines of a larger one, as the dreamer pins them.
fn key_files() -> Vec<KeyFile> {
    vec![
        KeyFile {
            path: "src/retry.rs".into(),
            text: "pub const MAX_RETRIES: u32 = 7;\n\npub fn backoff_ms(attempt: u32) -> u64 {\n    100 << attempt.min(6)\n}\n".into(),
            cut_lines: 0,
        },
        KeyFile {
            path: "src/config.rs".into(),
            text: "//! The proxy's settings.\n\npub struct Settings {\n    pub port: u16,".into(),
            cut_lines: 212,
        },
    ]
}

#[test]
fn m0_snapshot() {
    let (pinned, docs, profile, compartments, memories) =
        (pinned(), docs(), profile(), compartments(), memories());
    let key_files = key_files();
    let inputs = HeadInputs {
        pinned: &pinned,
        project_docs: &docs,
        key_files: &key_files,
        profile: &profile,
        earlier: None,
        compartments: &compartments,
        memories: &memories,
        shared_memories: &[],
    };
    let head = render_m0(&inputs, budgets(170, 4_000), &count);
    assert_eq!(
        head.tiers_chosen,
        vec![
            (1, DetailTier::Condensed),
            (41, DetailTier::Condensed),
            (89, DetailTier::Condensed)
        ]
    );
    assert_eq!(head.memory_ids, vec![2, 7, 5, 9]);
    assert_eq!(head.tokens, Tokens(count(&head.text)));
    insta::assert_snapshot!(head.text);
}

#[test]
fn m1_placeholder_snapshot() {
    let m1 = render_m1(&HeadDelta::default());
    assert_eq!(m1, M1_PLACEHOLDER);
    insta::assert_snapshot!(m1, @"<context-updates>none</context-updates>");
}

#[test]
fn m1_blank_profile_lines_are_nothing() {
    let profile = vec![" ".to_owned()];
    let delta = HeadDelta {
        profile: &profile,
        ..HeadDelta::default()
    };
    assert!(delta.is_empty());
    assert_eq!(render_m1(&delta), M1_PLACEHOLDER);
}

#[test]
fn m1_delta_snapshot() {
    let compartments = vec![compartment(121, 150, 6, 55, "Render m[1]")];
    let changes = vec![
        MemoryChange::Added(Memory {
            id: 11,
            category: MemoryCategory::Architecture,
            content: "m[1] folds into m[0] on a hard bust.".to_owned(),
            permanent: false,
            seen_count: 1,
        }),
        MemoryChange::Changed {
            id: 5,
            category: MemoryCategory::Constraints,
            content: "mc-core does no I/O, reads no clock and no env.".to_owned(),
        },
        MemoryChange::Superseded { id: 2, by: 12 },
        MemoryChange::Added(Memory {
            id: 12,
            category: MemoryCategory::ProjectRules,
            content: "Format with rustfmt on your own files only.".to_owned(),
            permanent: false,
            seen_count: 1,
        }),
        MemoryChange::Removed { id: 9 },
    ];
    let profile = vec!["Reviews diffs before merging.".to_owned()];
    let delta = HeadDelta {
        compartments: &compartments,
        memory_changes: &changes,
        profile: &profile,
        notes: &[],
    };
    assert!(!delta.is_empty());
    insta::assert_snapshot!(render_m1(&delta));
}

#[test]
fn m1_lists_open_notes_on_one_line_each() {
    let notes = vec![
        OpenNote {
            id: 7,
            content: "Re-run the flaky retry test\nafter the clock change.".to_owned(),
        },
        OpenNote {
            id: 3,
            content: "Ask before touching the schema.".to_owned(),
        },
    ];
    let delta = HeadDelta {
        notes: &notes,
        ..HeadDelta::default()
    };
    assert!(!delta.is_empty());
    insta::assert_snapshot!(render_m1(&delta), @r"
    <context-updates>
    <open-notes>
    - #3 Ask before touching the schema.
    - #7 Re-run the flaky retry test after the clock change.
    </open-notes>
    </context-updates>
    ");
}

#[test]
fn empty_m0_keeps_the_history_element() {
    let head = render_m0(&HeadInputs::default(), budgets(1_000, 1_000), &count);
    assert_eq!(head.text, "<history>\n</history>");
    assert!(head.tiers_chosen.is_empty());
}

#[test]
fn key_files_render_within_their_budget_in_rank_order() {
    let mut files = key_files();
    files.insert(
        1,
        KeyFile {
            path: "src/huge.rs".into(),
            text: "pub fn step() {}\n".repeat(200),
            cut_lines: 0,
        },
    );
    let render = |budget: u64| {
        let inputs = HeadInputs {
            key_files: &files,
            ..HeadInputs::default()
        };
        let mut budgets = budgets(1_000, 1_000);
        budgets.key_files_tokens = Tokens(budget);
        let text = render_m0(&inputs, budgets, &count).text;
        let start = text.find("<key-files>")?;
        let end = text.find("</key-files>")? + "</key-files>".len();
        Some(text[start..end].to_owned())
    };
    let roomy = render(100_000).unwrap();
    let order: Vec<&str> = roomy
        .lines()
        .filter_map(|line| line.strip_prefix("<file path=\""))
        .collect();
    assert_eq!(
        order,
        ["src/retry.rs\">", "src/huge.rs\">", "src/config.rs\">"],
        "rank order"
    );
    for budget in [70, 100, 120, 500] {
        let section = render(budget).unwrap();
        assert!(count(&section) <= budget, "{budget}: {section}");
        assert!(!section.contains("src/huge.rs"), "too large for {budget}");
        assert!(
            section.contains("src/retry.rs"),
            "the first fits in {budget}"
        );
    }
    assert_eq!(render(10), None, "nothing fits: no section");
    assert_eq!(render(0), None);
}

#[test]
fn rendering_is_deterministic_and_order_free() {
    let (pinned, docs, profile, compartments, memories) =
        (pinned(), docs(), profile(), compartments(), memories());
    let inputs = HeadInputs {
        pinned: &pinned,
        project_docs: &docs,
        key_files: &[],
        profile: &profile,
        earlier: None,
        compartments: &compartments,
        memories: &memories,
        shared_memories: &[],
    };
    let first = render_m0(&inputs, budgets(150, 4_000), &count);
    assert_eq!(first, render_m0(&inputs, budgets(150, 4_000), &count));

    let (mut pinned_r, mut docs_r, mut compartments_r, mut memories_r) = (
        pinned.clone(),
        docs.clone(),
        compartments.clone(),
        memories.clone(),
    );
    pinned_r.reverse();
    docs_r.reverse();
    compartments_r.reverse();
    memories_r.reverse();
    let reversed = HeadInputs {
        pinned: &pinned_r,
        project_docs: &docs_r,
        key_files: &[],
        profile: &profile,
        earlier: None,
        compartments: &compartments_r,
        memories: &memories_r,
        shared_memories: &[],
    };
    assert_eq!(first, render_m0(&reversed, budgets(150, 4_000), &count));
}

#[test]
fn decay_boundaries_at_neutral_importance() {
    // H = 24 at importance 50 and pressure 1: limits at ages 17.496, 31.728, 62.088; the
    // newest shows its condensed summary (the full one is `m[1]`'s).
    let cases = [
        (0, DetailTier::Condensed),
        (4, DetailTier::Condensed),
        (5, DetailTier::Condensed),
        (17, DetailTier::Condensed),
        (18, DetailTier::Paragraph),
        (31, DetailTier::Paragraph),
        (32, DetailTier::Line),
        (62, DetailTier::Line),
        (63, DetailTier::Heading),
        (u32::MAX, DetailTier::Heading),
    ];
    for (age, tier) in cases {
        assert_eq!(decay_tier(age, 50, 1.0), tier, "age {age}");
    }
}

#[test]
fn decay_importance_and_pressure_scale_the_half_life() {
    // Importance 75 doubles H (48): age 34 is z = 0.708, still condensed; 35 is 0.729.
    assert_eq!(decay_tier(34, 75, 1.0), DetailTier::Condensed);
    assert_eq!(decay_tier(35, 75, 1.0), DetailTier::Paragraph);
    // Pressure 2 halves H (12): age 8 is z = 0.667, age 9 is z = 0.75.
    assert_eq!(decay_tier(8, 50, 2.0), DetailTier::Condensed);
    assert_eq!(decay_tier(9, 50, 2.0), DetailTier::Paragraph);
    // Out-of-range inputs are clamped rather than rejected.
    assert_eq!(decay_tier(40, 0, 1.0), decay_tier(40, 1, 1.0));
    assert_eq!(decay_tier(40, 255, 1.0), decay_tier(40, 100, 1.0));
    assert_eq!(
        decay_tier(400, 50, f64::NAN),
        decay_tier(400, 50, PRESSURE_FLOOR)
    );
    assert_eq!(
        decay_tier(400, 50, -3.0),
        decay_tier(400, 50, PRESSURE_FLOOR)
    );
    assert_eq!(decay_tier(400, 50, f64::INFINITY), DetailTier::Heading);
    assert_eq!(decay_tier(0, 1, f64::INFINITY), DetailTier::Condensed);
}

#[test]
fn decay_is_monotonic() {
    let pressures = [0.0, 0.1, 0.5, 1.0, 1.7, 4.0, 25.0];
    for &pressure in &pressures {
        for importance in [1u8, 20, 50, 51, 80, 100] {
            for age in 0..400u32 {
                let tier = decay_tier(age, importance, pressure);
                assert!(tier > DetailTier::Full, "decay never shows full");
                assert!(
                    decay_tier(age + 1, importance, pressure) >= tier,
                    "older shows more"
                );
                if importance < 100 {
                    assert!(
                        decay_tier(age, importance + 1, pressure) <= tier,
                        "importance"
                    );
                }
                assert!(
                    decay_tier(age, importance, pressure * 2.0 + 0.01) >= tier,
                    "pressure"
                );
            }
        }
    }
}

#[test]
fn history_trims_to_its_budget_most_decayed_first_keeping_headings() {
    let compartments: Vec<Compartment> = (0..12)
        .map(|i| compartment(i * 10 + 1, i * 10 + 10, i, 50, &format!("Task {i}")))
        .collect();
    let inputs = HeadInputs {
        compartments: &compartments,
        ..HeadInputs::default()
    };
    let headings: u64 = compartments
        .iter()
        .map(|c| count(&history::render_compartment(c, DetailTier::Heading)))
        .sum();
    for budget in [0, headings, headings + 40, headings + 150, 100_000] {
        let head = render_m0(&inputs, budgets(budget, 0), &count);
        let history: u64 = compartments
            .iter()
            .zip(&head.tiers_chosen)
            .map(|(c, &(_, tier))| count(&history::render_compartment(c, tier)))
            .sum();
        assert!(
            history <= budget.max(headings),
            "budget {budget}: {history}"
        );
        // Same importance: older never shows more than newer.
        for pair in head.tiers_chosen.windows(2) {
            assert!(
                pair[0].1 >= pair[1].1,
                "budget {budget}: {:?}",
                head.tiers_chosen
            );
        }
        // Every heading survives.
        for c in &compartments {
            assert!(head.text.contains(&history::heading(c)));
        }
    }
    // With room for everything, every compartment shows the most decay ever shows.
    let roomy = render_m0(&inputs, budgets(100_000, 0), &count);
    assert!(
        roomy
            .tiers_chosen
            .iter()
            .all(|&(_, tier)| tier == DetailTier::Condensed)
    );
}

#[test]
fn memories_keep_the_newest_within_budget() {
    let memories: Vec<Memory> = (1..=40)
        .map(|id| Memory {
            id,
            category: MemoryCategory::ALL[usize::try_from(id % 5).unwrap_or(0)],
            content: format!("Fact number {id} about the project, stated plainly."),
            permanent: false,
            seen_count: 1,
        })
        .collect();
    let inputs = HeadInputs {
        memories: &memories,
        ..HeadInputs::default()
    };
    let head = render_m0(&inputs, budgets(1_000, 120), &count);
    let section = head
        .text
        .split("\n\n")
        .find(|s| s.starts_with("<project-memory>"))
        .unwrap_or_default();
    assert!(count(section) <= 120, "{}", count(section));
    let mut shown = head.memory_ids.clone();
    shown.sort_unstable();
    assert!(!shown.is_empty() && shown.len() < 40);
    // The shown ones are exactly the newest.
    let expected: Vec<u64> = (41 - shown.len() as u64..=40).collect();
    assert_eq!(shown, expected);

    let none = render_m0(&inputs, budgets(1_000, 0), &count);
    assert!(!none.text.contains("<project-memory>"));
    assert!(none.memory_ids.is_empty());
}

#[test]
fn a_short_memory_budget_keeps_permanent_then_restated_then_newest() {
    let memory = |id: u64, permanent: bool, seen_count: u64| Memory {
        id,
        category: MemoryCategory::ProjectRules,
        content: format!("Rule {id} of the project."),
        permanent,
        seen_count,
    };
    let memories = [
        memory(1, true, 1),
        memory(2, false, 5),
        memory(3, false, 1),
        memory(4, false, 1),
    ];
    let inputs = HeadInputs {
        memories: &memories,
        ..HeadInputs::default()
    };
    let one_item = count("<project-memory>\n")
        + count("</project-memory>")
        + count("## PROJECT_RULES\n")
        + count("- #1 Rule 1 of the project.\n");
    let rank = |budget: u64| {
        let mut shown = render_m0(&inputs, budgets(1_000, budget), &count).memory_ids;
        shown.sort_unstable();
        shown
    };
    let item = count("- #4 Rule 4 of the project.\n");
    assert_eq!(rank(one_item), [1]);
    assert_eq!(rank(one_item + item), [1, 2]);
    assert_eq!(rank(one_item + 2 * item), [1, 2, 4]);
}

mod properties {
    use proptest::prelude::*;

    use super::super::history::{heading, render_compartment};
    use super::*;

    fn arb_compartments() -> impl Strategy<Value = Vec<Compartment>> {
        let row = (
            0u8..=120,
            0u64..30,
            "[a-z ]{0,12}",
            prop::option::of("[a-z][a-z ]{0,40}"),
        );
        prop::collection::vec(row, 0..25).prop_map(|rows| {
            rows.into_iter()
                .enumerate()
                .map(|(i, (importance, day, title, said))| {
                    let start = i as u64 * 10;
                    Compartment {
                        quotes: said
                            .map(|text| Quote {
                                ordinal: start + 1,
                                text,
                            })
                            .into_iter()
                            .collect(),
                        ..compartment(start, start + 9, day, importance, &title)
                    }
                })
                .collect()
        })
    }

    proptest! {
        #[test]
        fn history_fits_or_is_all_bare_headings(compartments in arb_compartments(), budget in 0u64..3_000) {
            let inputs = HeadInputs { compartments: &compartments, ..HeadInputs::default() };
            let head = render_m0(&inputs, budgets(budget, 0), &count);
            prop_assert_eq!(head.tiers_chosen.len(), compartments.len());
            let cost: u64 = compartments
                .iter()
                .zip(&head.tiers_chosen)
                .map(|(c, &(_, tier))| count(&render_compartment(c, tier)))
                .sum();
            let all_bare = compartments
                .iter()
                .zip(&head.tiers_chosen)
                .all(|(c, &(_, t))| t == DetailTier::Title || (t == DetailTier::Heading && c.quotes.is_empty()));
            prop_assert!(cost <= budget || all_bare);
            // The user's words go only once every summary has: a compartment loses its
            // quotes only when none shows more than its heading.
            if head.tiers_chosen.iter().any(|&(_, t)| t == DetailTier::Title) {
                prop_assert!(head.tiers_chosen.iter().all(|&(_, t)| t >= DetailTier::Heading));
            }
            for (c, &(_, tier)) in compartments.iter().zip(&head.tiers_chosen) {
                prop_assert!(head.text.contains(&heading(c)));
                if tier != DetailTier::Title {
                    for quote in &c.quotes {
                        let quoted = format!("<user ordinal=\"{}\">{}</user>", quote.ordinal, quote.text);
                        prop_assert!(head.text.contains(&quoted));
                    }
                }
            }
            // The newest compartment never shows less than any older one of equal or lower
            // importance: no more faded summary, and no quotes lost before theirs.
            let summary = |tier: DetailTier| tier.min(DetailTier::Heading);
            if let Some((newest, &(_, newest_tier))) = compartments.last().zip(head.tiers_chosen.last()) {
                for (c, &(_, tier)) in compartments.iter().zip(&head.tiers_chosen) {
                    if c.importance.clamp(1, 100) <= newest.importance.clamp(1, 100) {
                        prop_assert!(summary(tier) >= summary(newest_tier));
                        if newest_tier == DetailTier::Title && !c.quotes.is_empty() {
                            prop_assert_eq!(tier, DetailTier::Title);
                        }
                    }
                }
            }
            prop_assert_eq!(render_m0(&inputs, budgets(budget, 0), &count), head);
        }
    }
}

/// Two compartments with indexes in `m[1]`: each shows its files, commands and names on one
/// line under the heading, and a name both list is shown once, by the newer.
#[test]
fn index_lines_snapshot() {
    let older = Compartment {
        index: RangeIndex {
            files: vec!["src/card_parser.py".into(), "tests/test_cards.py".into()],
            ran: vec!["pytest -k rounding tests/test_cards.py".into()],
            names: vec![
                "parse_card".into(),
                "round_half".into(),
                "MAX_RETRIES".into(),
            ],
        },
        ..compartment(10, 20, 1, 70, "Find the rounding bug")
    };
    let newer = Compartment {
        index: RangeIndex {
            files: vec!["src/card_parser.py".into()],
            ran: Vec::new(),
            names: vec!["round_half_even".into(), "round_half".into()],
        },
        ..compartment(21, 30, 2, 60, "Fix it")
    };
    let compartments = vec![older, newer];
    let delta = HeadDelta {
        compartments: &compartments,
        ..HeadDelta::default()
    };
    insta::assert_snapshot!(render_m1(&delta));
}

/// The user's words outlive every summary tier: the heading tier keeps the quotes (and no
/// index), and only the bare title tier, taken once every compartment is at its heading,
/// drops them.
#[test]
fn the_heading_tier_keeps_the_users_words_and_the_title_tier_does_not() {
    let said = Compartment {
        index: RangeIndex {
            files: vec!["src/retry.rs".into()],
            ran: Vec::new(),
            names: vec!["backoff_ms".into()],
        },
        ..compartments()[1].clone()
    };
    insta::assert_snapshot!(history::render_compartment(&said, DetailTier::Heading), @r#"
    ### 41-88 | 2026-11-10 09:00 to 2026-11-10 09:45 UTC | Chase a flaky retry test
    <user ordinal="41">The retry test fails one run in ten.
    Find out why; no sleeps.</user>
    "#);
    insta::assert_snapshot!(history::render_compartment(&said, DetailTier::Title), @"### 41-88 | 2026-11-10 09:00 to 2026-11-10 09:45 UTC | Chase a flaky retry test");
}

/// An index never shows at the heading tier, and a compartment without one renders as
/// before.
#[test]
fn the_heading_tier_shows_no_index() {
    let with_index = Compartment {
        index: RangeIndex {
            files: vec!["a/b.rs".into()],
            ran: vec!["make".into()],
            names: vec!["some_name".into()],
        },
        ..compartment(1, 2, 0, 50, "Title")
    };
    let plain = compartment(1, 2, 0, 50, "Title");
    assert_eq!(
        history::render_compartment(&with_index, DetailTier::Heading),
        history::render_compartment(&plain, DetailTier::Heading)
    );
    let full = history::render_compartment(&with_index, DetailTier::Full);
    assert!(
        full.contains("\nfiles: a/b.rs · ran: `make` · names: some_name\n"),
        "{full}"
    );
}

/// Five hundred compartments, each with a full index: the history still fits its budget
/// (indexes are counted in every tier above the heading, and sharing names across them only
/// shrinks the text), and a second render is the same bytes.
#[test]
fn a_head_of_500_indexed_compartments_fits_its_budget() {
    let compartments: Vec<Compartment> = (0..500u64)
        .map(|n| Compartment {
            index: RangeIndex {
                files: (0..8)
                    .map(|f| format!("src/dir_{}/file_{f}.rs", n % 7))
                    .collect(),
                ran: (0..4)
                    .map(|c| format!("cargo test -p crate_{} case_{c}", n % 5))
                    .collect(),
                names: (0..16).map(|k| format!("name_{}_{k}", n % 11)).collect(),
            },
            ..compartment(n * 10, n * 10 + 9, n / 20, 50, &format!("Episode {n}"))
        })
        .collect();
    let heading_floor: u64 = compartments
        .iter()
        .map(|c| count(&history::render_compartment(c, DetailTier::Heading)))
        .sum();
    for budget in [heading_floor, heading_floor + 5_000, heading_floor * 3] {
        let inputs = HeadInputs {
            compartments: &compartments,
            ..HeadInputs::default()
        };
        let head = render_m0(&inputs, budgets(budget, 1_000), &count);
        assert!(
            count(&head.text) <= budget + count("<history>\n</history>"),
            "budget {budget}: {}",
            count(&head.text)
        );
        assert_eq!(
            head.text,
            render_m0(&inputs, budgets(budget, 1_000), &count).text
        );
    }
}
