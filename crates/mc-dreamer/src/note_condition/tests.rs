use proptest::prelude::*;

use super::*;

/// 2026-12-10 00:00 UTC.
const DEC_10_MS: i64 = 1_796_860_800_000;

#[test]
fn the_shapes_a_rule_can_check_are_read() {
    let day = |from_ms| Some(Condition::DayComes { from_ms });
    let cases = [
        ("2026-12-10", day(DEC_10_MS)),
        ("on 2026-12-10.", day(DEC_10_MS)),
        ("When it is 2026-12-10", day(DEC_10_MS)),
        ("after 2026-12-10", day(DEC_10_MS + DAY_MS)),
        ("once 2026-12-10 has passed", day(DEC_10_MS + DAY_MS)),
        (
            "when `src/new_parser.rs` exists",
            Some(Condition::FileExists("src/new_parser.rs".into())),
        ),
        (
            "if the file ./docs/MIGRATION.md is created",
            Some(Condition::FileExists("docs/MIGRATION.md".into())),
        ),
        (
            "when src/legacy.rs is deleted",
            Some(Condition::FileGone("src/legacy.rs".into())),
        ),
        (
            "when Cargo.lock changes",
            Some(Condition::FileChanged("Cargo.lock".into())),
        ),
        (
            "as soon as a commit mentions \"schema v26\"",
            Some(Condition::CommitMentions("schema v26".into())),
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(parse_condition(text), expected, "{text}");
    }
}

#[test]
fn plain_words_are_left_to_the_model() {
    for text in [
        "when CI config changes",
        "when tests slow down",
        "when the 2026-12-10 release ships",
        "when ../outside.rs exists",
        "when /etc/passwd exists",
        "when a commit mentions",
        "when ... changes",
        "before 2026-12-10",
    ] {
        assert_eq!(parse_condition(text), None, "{text}");
    }
}

fn commit(subject: &str, files: &[&str]) -> ProjectCommit {
    ProjectCommit {
        committed_ms: DEC_10_MS,
        subject: subject.into(),
        body: "Body mentions the rollout.".into(),
        files: files.iter().map(|file| (*file).to_owned()).collect(),
    }
}

#[test]
fn each_rule_is_checked_against_the_project() {
    let bump = commit("Bump deps", &["crates/app/Cargo.lock"]);
    let commits = [&bump];
    let exists = |path: &str| match path {
        "src/new.rs" => Some(true),
        "src/outside.rs" => None,
        _ => Some(false),
    };
    let now = ProjectNow {
        now_ms: DEC_10_MS + 1,
        commits: &commits,
        exists: &exists,
    };
    let check = |text: &str| holds(&parse_condition(text).unwrap(), &now);
    assert_eq!(
        check("on 2026-12-10").as_deref(),
        Some("it is 2026-12-10 now")
    );
    assert_eq!(check("after 2026-12-10"), None);
    assert_eq!(
        check("src/new.rs exists").as_deref(),
        Some("`src/new.rs` exists")
    );
    assert_eq!(check("src/old.rs exists"), None);
    assert_eq!(
        check("src/old.rs is removed").as_deref(),
        Some("`src/old.rs` is gone")
    );
    assert_eq!(
        check("src/outside.rs is removed"),
        None,
        "an unchecked path never holds"
    );
    assert_eq!(
        check("when Cargo.lock changes").as_deref(),
        Some("commit \"Bump deps\" touched `Cargo.lock`")
    );
    assert_eq!(check("when Cargo.toml changes"), None);
    assert_eq!(
        check("a commit mentions THE ROLLOUT").as_deref(),
        Some("commit \"Bump deps\" mentions \"THE ROLLOUT\"")
    );
    assert_eq!(check("a commit mentions the migration"), None);
}

proptest! {
    /// A day condition holds exactly from the start of its day (or the next one for
    /// "after"), whatever the time of asking.
    #[test]
    fn a_day_holds_exactly_from_its_start(offset_ms in -3 * DAY_MS..3 * DAY_MS, after in any::<bool>()) {
        let text = if after { "after 2026-12-10" } else { "on 2026-12-10" };
        let condition = parse_condition(text).unwrap();
        let now = ProjectNow { now_ms: DEC_10_MS + offset_ms, commits: &[], exists: &|_| None };
        let from = DEC_10_MS + if after { DAY_MS } else { 0 };
        prop_assert_eq!(holds(&condition, &now).is_some(), DEC_10_MS + offset_ms >= from);
    }

    /// Reading a condition never panics, whatever the agent wrote.
    #[test]
    fn any_text_reads_without_panicking(text in "\\PC{0,60}") {
        let _ = parse_condition(&text);
    }
}
