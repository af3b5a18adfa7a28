//! `promote_user_profile` through the runner: no model and no folder needed, observations
//! seen often enough in all (across projects) join the profile once, the run names them, a
//! second run adds nothing and a line the user removed never comes back.

use std::collections::HashMap;

use mc_dreamer::{Limits, Runner, Task, TaskSettings};
use mc_store::{DreamerRun, RunOutcome, Store};
use proptest::prelude::*;

use crate::fixture::{EVENING_MS, project};
use crate::scheduler::NoModel;

fn run(store: &Store, sightings: u32) -> DreamerRun {
    let clock = || EVENING_MS;
    let runner = Runner {
        calls: &crate::fixture::NoCalls,
        store,
        model: &NoModel,
        owner: "promote-test",
        clock: &clock,
        limits: Limits::default(),
        settings: TaskSettings {
            profile_sightings: sightings,
            ..TaskSettings::default()
        },
        team: None,
    };
    runner
        .run(Task::PromoteUserProfile, &project(), None)
        .unwrap()
}

fn observe(store: &Store, scope: &str, text: &str, at_ms: i64) {
    store
        .write(|tx| tx.store_observations(scope, &[text.to_owned()], at_ms))
        .unwrap();
}

fn profile(store: &Store) -> Vec<String> {
    store
        .read(|tx| tx.profile_lines(false))
        .unwrap()
        .into_iter()
        .map(|line| line.text)
        .collect()
}

#[test]
fn observations_seen_three_times_join_the_profile_once_and_the_run_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("context.db")).unwrap();
    observe(&store, "project:git:a", "Prefers short answers.", 1);
    observe(&store, "project:git:a", "prefers short answers", 2);
    observe(&store, "project:git:b", "Prefers short answers.", 3);
    observe(&store, "project:git:a", "Writes Rust.", 4);

    let first = run(&store, 3);
    assert_eq!(
        (first.outcome, first.changes, first.model_calls),
        (RunOutcome::Done, 1, 0),
        "{:?}",
        first.detail
    );
    assert_eq!(
        first.detail.as_deref(),
        Some("1 observations seen 3 times joined the profile: #1 \"Prefers short answers.\"")
    );
    assert_eq!(profile(&store), ["Prefers short answers."]);
    assert_eq!(
        store.read(|tx| tx.dreamer_lease("user_profile")).unwrap(),
        None,
        "the store-wide lease is released"
    );

    let again = run(&store, 3);
    assert_eq!((again.outcome, again.changes), (RunOutcome::Done, 0));
    assert_eq!(
        again.detail.as_deref(),
        Some("no observation newly seen 3 times")
    );

    store.write(|tx| tx.remove_profile_line(1, 5)).unwrap();
    observe(&store, "project:git:a", "Prefers short answers.", 6);
    assert_eq!(run(&store, 3).changes, 0, "a removed line stays removed");
    assert!(profile(&store).is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// After a run the profile holds exactly the observations seen often enough in all, and
    /// a second run adds nothing.
    #[test]
    fn promotion_is_exact_and_idempotent(
        sightings in proptest::collection::vec((0usize..4, 0usize..3), 0..20),
        threshold in 1u32..5,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        let mut seen: HashMap<usize, u32> = HashMap::new();
        for (at, (observation, scope)) in sightings.iter().enumerate() {
            let at_ms = i64::try_from(at).unwrap();
            observe(&store, &format!("project:git:{scope}"), &format!("Habit number {observation}."), at_ms);
            *seen.entry(*observation).or_default() += 1;
        }
        let first = run(&store, threshold);
        let mut expected: Vec<String> = seen
            .iter()
            .filter(|(_, count)| **count >= threshold)
            .map(|(observation, _)| format!("Habit number {observation}."))
            .collect();
        expected.sort();
        let mut promoted = profile(&store);
        promoted.sort();
        prop_assert_eq!(&promoted, &expected);
        prop_assert_eq!(first.changes as usize, expected.len());
        prop_assert_eq!(run(&store, threshold).changes, 0);
    }
}
