//! A dreamer task's change on the team store: a merge retires the others in favour of the
//! kept memory and rewrites it in one transaction, logged with the dreamer and the task; a
//! change about a permanent memory, an archived one, or a text that moved on is refused and
//! changes nothing, nor does a merge whose text another live memory states.

use mc_store::{
    Maintenance, MaintenanceKind, MemoryAction, MemorySource, MemoryStatus, StoreError, TeamWrite,
};
use mc_team_store::{Applied, TeamStoreError};

use crate::support::{NOW_MS, add, project, team_store};

fn merge(seen: &[(u64, &str)], content: &str) -> TeamWrite {
    TeamWrite::Maintain(Maintenance {
        change: MaintenanceKind::Merge {
            content: content.to_owned(),
        },
        seen: seen
            .iter()
            .map(|(id, text)| (*id, (*text).to_owned()))
            .collect(),
        task: "consolidate_memories".to_owned(),
        reason: "merged".to_owned(),
    })
}

fn refusal(error: TeamStoreError) -> StoreError {
    match error {
        TeamStoreError::Refused(error) => error,
        other => panic!("expected a refusal, got {other}"),
    }
}

#[tokio::test]
async fn a_merge_lands_whole_or_not_at_all_and_only_on_what_the_task_read() {
    let Some((team, _)) = team_store().await else {
        return;
    };
    let p = project("p-merge");
    let mut ids = Vec::new();
    for (n, text) in [
        "Use nextest.",
        "Run tests with nextest.",
        "Lint with clippy.",
    ]
    .into_iter()
    .enumerate()
    {
        let applied = team
            .apply(&format!("a{n}"), &p, &add(text), NOW_MS)
            .await
            .unwrap();
        ids.push(applied.memory_id());
    }
    let permanent = TeamWrite::Add {
        category: mc_core::head::MemoryCategory::ProjectRules,
        content: "Never push to main.".to_owned(),
        source: MemorySource::Operator,
        permanent: true,
    };
    let kept_by_operator = team
        .apply("a3", &p, &permanent, NOW_MS)
        .await
        .unwrap()
        .memory_id();
    let head = team.memory_log_head(&p).await.unwrap();

    // The text moved on since the task read it: nothing changes.
    let stale = merge(
        &[
            (ids[0], "Use nextest!"),
            (ids[1], "Run tests with nextest."),
        ],
        "Tests: nextest.",
    );
    let refused = refusal(team.apply("m0", &p, &stale, NOW_MS + 1).await.unwrap_err());
    assert!(
        matches!(refused, StoreError::MemoryRefused { id, .. } if id == ids[0]),
        "{refused}"
    );
    // A permanent memory is the operator's.
    let operator = merge(
        &[
            (ids[0], "Use nextest."),
            (kept_by_operator, "Never push to main."),
        ],
        "x y",
    );
    let refused = refusal(
        team.apply("m1", &p, &operator, NOW_MS + 1)
            .await
            .unwrap_err(),
    );
    assert_eq!(
        refused.to_string(),
        StoreError::MemoryRefused {
            id: kept_by_operator,
            reason: "it is permanent; only the operator retires it"
        }
        .to_string()
    );
    // The merged text another live memory states: refused after the retirements, rolled back.
    let clash = merge(
        &[
            (ids[0], "Use nextest."),
            (ids[1], "Run tests with nextest."),
        ],
        "Lint with clippy.",
    );
    let refused = refusal(team.apply("m2", &p, &clash, NOW_MS + 1).await.unwrap_err());
    assert!(
        matches!(refused, StoreError::DuplicateMemory { .. }),
        "{refused}"
    );
    assert!(
        team.changes_since(&p, head).await.unwrap().log.is_empty(),
        "nothing was applied"
    );

    let good = merge(
        &[
            (ids[0], "Use nextest."),
            (ids[1], "Run tests with nextest."),
        ],
        "Run the tests with nextest.",
    );
    assert_eq!(
        team.apply("m3", &p, &good, NOW_MS + 2).await.unwrap(),
        Applied::Now(mc_store::Added::Merged(ids[0]))
    );
    assert_eq!(
        team.apply("m3", &p, &good, NOW_MS + 3).await.unwrap(),
        Applied::Before(ids[0]),
        "replayed: lands once"
    );
    let changes = team.changes_since(&p, head).await.unwrap();
    let logged: Vec<_> = changes
        .log
        .iter()
        .map(|e| {
            (
                e.memory_id,
                e.action,
                e.actor,
                e.task.as_deref(),
                e.detail.clone(),
            )
        })
        .collect();
    let by = (Some(MemorySource::Dreamer), Some("consolidate_memories"));
    assert_eq!(
        logged,
        [
            (
                ids[1],
                MemoryAction::Superseded,
                by.0,
                by.1,
                Some(format!("by {}", ids[0]))
            ),
            (
                ids[0],
                MemoryAction::Changed,
                by.0,
                by.1,
                Some("content: merged".to_owned())
            ),
        ]
    );
    let state = |id: u64| {
        let memory = &changes.memories.iter().find(|(m, _)| m.id == id).unwrap().0;
        (
            memory.record.content.clone(),
            memory.record.status,
            memory.superseded_by,
        )
    };
    assert_eq!(
        state(ids[0]),
        (
            "Run the tests with nextest.".to_owned(),
            MemoryStatus::Active,
            None
        )
    );
    assert_eq!(
        state(ids[1]),
        (
            "Run tests with nextest.".to_owned(),
            MemoryStatus::Archived,
            Some(ids[0])
        )
    );

    // An archived memory is not archived again.
    let again = TeamWrite::Maintain(Maintenance {
        change: MaintenanceKind::Archive,
        seen: vec![(ids[1], "Run tests with nextest.".to_owned())],
        task: "archive_stale_memories".to_owned(),
        reason: "unused".to_owned(),
    });
    let refused = refusal(team.apply("m4", &p, &again, NOW_MS + 4).await.unwrap_err());
    assert!(
        matches!(
            refused,
            StoreError::MemoryRefused {
                reason: "it is already archived",
                ..
            }
        ),
        "{refused}"
    );
}
