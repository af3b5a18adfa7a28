//! The dreamer's lease in the team store: two holders contend and one wins, the holder
//! renews, a holder that dies without releasing loses the lease once it lapses on the
//! server's clock, and a released lease is free at once.

use std::time::Duration;

use crate::support::team_store;

const DOMAIN: &str = "memories:git:team";

#[tokio::test]
async fn one_holder_at_a_time_renewed_by_its_owner_and_lapsing_when_it_dies() {
    let Some((team, url)) = team_store().await else {
        return;
    };
    // Another proxy of the team: its own pool on the same database.
    let other = crate::support::open(&url).await;
    const TTL_MS: i64 = 400;

    assert!(
        team.take_dreamer_lease(DOMAIN, "alice", TTL_MS)
            .await
            .unwrap()
    );
    assert!(
        !other
            .take_dreamer_lease(DOMAIN, "bob", TTL_MS)
            .await
            .unwrap()
    );
    // Another domain is another lease.
    assert!(
        other
            .take_dreamer_lease("memories:git:other", "bob", TTL_MS)
            .await
            .unwrap()
    );
    let first = team.dreamer_lease(DOMAIN).await.unwrap().unwrap();
    assert_eq!(first.owner, "alice");
    assert_eq!(first.expires_ms - first.acquired_ms, TTL_MS);

    // Renewing keeps when it was taken and moves when it lapses.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        team.take_dreamer_lease(DOMAIN, "alice", TTL_MS)
            .await
            .unwrap()
    );
    let renewed = team.dreamer_lease(DOMAIN).await.unwrap().unwrap();
    assert_eq!(renewed.acquired_ms, first.acquired_ms);
    assert!(
        renewed.expires_ms > first.expires_ms,
        "{renewed:?} {first:?}"
    );

    // Alice dies without releasing: Bob waits until the lease lapses, then holds it, and
    // Alice coming back cannot renew it.
    assert!(
        !other
            .take_dreamer_lease(DOMAIN, "bob", TTL_MS)
            .await
            .unwrap()
    );
    let left_ms = renewed.expires_ms - first.acquired_ms;
    tokio::time::sleep(Duration::from_millis(u64::try_from(left_ms).unwrap() + 50)).await;
    assert!(
        other
            .take_dreamer_lease(DOMAIN, "bob", TTL_MS)
            .await
            .unwrap()
    );
    assert!(
        !team
            .take_dreamer_lease(DOMAIN, "alice", TTL_MS)
            .await
            .unwrap()
    );
    assert_eq!(
        team.dreamer_lease(DOMAIN).await.unwrap().unwrap().owner,
        "bob"
    );

    // Released by someone else: nothing; by its holder: free at once.
    team.release_dreamer_lease(DOMAIN, "alice").await.unwrap();
    assert!(
        !team
            .take_dreamer_lease(DOMAIN, "alice", TTL_MS)
            .await
            .unwrap()
    );
    other.release_dreamer_lease(DOMAIN, "bob").await.unwrap();
    assert!(
        team.take_dreamer_lease(DOMAIN, "alice", TTL_MS)
            .await
            .unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_contenders_at_once_leave_exactly_one_holder() {
    let Some((team, _url)) = team_store().await else {
        return;
    };
    let contenders = (0..16).map(|n| {
        let team = team.clone();
        tokio::spawn(async move {
            team.take_dreamer_lease(DOMAIN, &format!("proxy-{n}"), 60_000)
                .await
                .unwrap()
        })
    });
    let mut granted = 0;
    for contender in contenders.collect::<Vec<_>>() {
        granted += usize::from(contender.await.unwrap());
    }
    assert_eq!(granted, 1);
}
