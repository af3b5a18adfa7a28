//! One proxy's writes: each lands once by its write id, is logged at a version a cursor
//! reads in order, follows the local store's rules, and is found by full text.

use mc_store::{Added, MemoryAction, MemorySource, MemoryStatus, StoreError, TeamWrite};
use mc_team_store::{Applied, TEAM_SCHEMA_VERSION, TeamStoreError};
use tokio_postgres::NoTls;

use crate::support::{NOW_MS, add, project, team_store};

#[tokio::test]
async fn a_write_lands_once_and_the_cursor_reads_each_change_once() {
    let Some((team, _)) = team_store().await else {
        return;
    };
    let p = project("p1");
    let first = team
        .apply("w-1", &p, &add("Never call the network in tests."), NOW_MS)
        .await
        .unwrap();
    let Applied::Now(Added::New(id)) = first else {
        panic!("expected a new memory, got {first:?}");
    };
    assert_eq!(
        team.apply("w-1", &p, &add("Never call the network in tests."), NOW_MS)
            .await
            .unwrap(),
        Applied::Before(id)
    );
    let all = team.changes_since(&p, 0).await.unwrap();
    assert_eq!(all.memories.len(), 1);
    assert_eq!(all.log.len(), 1);
    assert_eq!(all.head, team.memory_log_head(&p).await.unwrap());

    let edit = TeamWrite::Edit {
        id,
        category: None,
        content: Some("Tests never touch the network.".to_owned()),
        actor: MemorySource::Operator,
    };
    team.apply("w-2", &p, &edit, NOW_MS + 1).await.unwrap();
    let since = team.changes_since(&p, all.head).await.unwrap();
    let actions: Vec<_> = since
        .log
        .iter()
        .map(|e| (e.memory_id, e.action, e.actor))
        .collect();
    assert_eq!(
        actions,
        [(id, MemoryAction::Changed, Some(MemorySource::Operator))]
    );
    assert_eq!(
        since.memories[0].0.record.content,
        "Tests never touch the network."
    );
    assert!(
        team.changes_since(&p, since.head)
            .await
            .unwrap()
            .log
            .is_empty()
    );
    assert!(
        team.changes_since(&project("p2"), 0)
            .await
            .unwrap()
            .memories
            .is_empty()
    );
}

#[tokio::test]
async fn refusals_follow_the_local_stores_rules_and_record_nothing() {
    let Some((team, _)) = team_store().await else {
        return;
    };
    let p = project("p1");
    let a = team
        .apply("a", &p, &add("Alpha rule."), NOW_MS)
        .await
        .unwrap()
        .memory_id();
    let b = team
        .apply("b", &p, &add("Beta rule."), NOW_MS)
        .await
        .unwrap()
        .memory_id();
    let duplicate = TeamWrite::Edit {
        id: b,
        category: None,
        content: Some("alpha RULE".to_owned()),
        actor: MemorySource::Agent,
    };
    let refused = team.apply("c", &p, &duplicate, NOW_MS).await.unwrap_err();
    assert!(
        matches!(refused, TeamStoreError::Refused(StoreError::DuplicateMemory { existing, .. }) if existing == a),
        "{refused:?}"
    );
    assert!(!refused.is_retryable());
    let unknown = TeamWrite::Archive {
        id: a,
        actor: MemorySource::Agent,
    };
    let other = team
        .apply("d", &project("p2"), &unknown, NOW_MS)
        .await
        .unwrap_err();
    assert!(matches!(
        other,
        TeamStoreError::Refused(StoreError::UnknownMemory { .. })
    ));
    let merge = TeamWrite::Supersede {
        old: b,
        by: a,
        actor: MemorySource::Agent,
    };
    team.apply("e", &p, &merge, NOW_MS).await.unwrap();
    let retired = team.memory(&p, b).await.unwrap().unwrap();
    assert_eq!(
        (retired.record.status, retired.superseded_by),
        (MemoryStatus::Archived, Some(a))
    );
    let live = team.memories(&p, &[MemoryStatus::Active]).await.unwrap();
    assert_eq!(live.iter().map(|m| m.id).collect::<Vec<_>>(), [a]);
    let log = team.changes_since(&p, 0).await.unwrap().log;
    assert_eq!(
        log.len(),
        3,
        "two adds and a supersede; refusals log nothing: {log:?}"
    );
}

#[tokio::test]
async fn full_text_finds_live_memories_by_any_word() {
    let Some((team, _)) = team_store().await else {
        return;
    };
    let p = project("p1");
    let webhook = team
        .apply(
            "a",
            &p,
            &add("The billing service retries webhooks."),
            NOW_MS,
        )
        .await
        .unwrap()
        .memory_id();
    team.apply(
        "b",
        &p,
        &add("Tests run against a scratch cluster."),
        NOW_MS,
    )
    .await
    .unwrap();
    let hits = team
        .search_memories(
            &p,
            &["webhooks".to_owned(), "nothing'); drop".to_owned()],
            10,
        )
        .await
        .unwrap();
    assert_eq!(
        hits.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        [webhook]
    );
    team.apply(
        "c",
        &p,
        &TeamWrite::Archive {
            id: webhook,
            actor: MemorySource::Agent,
        },
        NOW_MS,
    )
    .await
    .unwrap();
    assert!(
        team.search_memories(&p, &["webhooks".to_owned()], 10)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_newer_team_schema_is_refused_untouched() {
    let Some((team, url)) = team_store().await else {
        return;
    };
    assert_eq!(team.migrate().await.unwrap(), TEAM_SCHEMA_VERSION);
    let (client, connection) = tokio_postgres::connect(&url, NoTls).await.unwrap();
    tokio::spawn(connection);
    client
        .batch_execute("UPDATE mc_team_schema SET version = 99")
        .await
        .unwrap();
    let refused = team.migrate().await.unwrap_err();
    assert!(
        matches!(
            refused,
            TeamStoreError::SchemaTooNew {
                found: 99,
                supported: TEAM_SCHEMA_VERSION
            }
        ),
        "{refused:?}"
    );
    assert!(refused.to_string().contains("upgrade magic-context"));
}
