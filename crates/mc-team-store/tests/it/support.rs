//! A fresh database per test on the server `MC_TEST_PG_URL` names.

use mc_core::ProjectId;
use mc_core::head::MemoryCategory;
use mc_store::{MemorySource, TeamWrite};
use mc_team_store::{TeamStore, TeamStoreUrl, create_scratch_database};

pub const NOW_MS: i64 = 1_764_000_000_000;

/// The server's URL, or `None` (with a printed line) when the variable is absent.
pub fn server_url() -> Option<String> {
    match std::env::var("MC_TEST_PG_URL") {
        Ok(url) => Some(url),
        Err(_) => {
            eprintln!(
                "skipped: MC_TEST_PG_URL is not set (eval \"$(.ci/postgres-scratch start)\" sets it)"
            );
            None
        }
    }
}

/// A new, empty database on the server at `base`; returns its URL. A server that does not
/// answer fails the test: the variable says one should be there.
pub async fn fresh_database(base: &str) -> String {
    create_scratch_database(base)
        .await
        .unwrap_or_else(|error| panic!("MC_TEST_PG_URL is set but unusable: {error}"))
}

/// A migrated team store on a fresh database, or `None` when no server is configured.
pub async fn team_store() -> Option<(TeamStore, String)> {
    let base = server_url()?;
    let url = fresh_database(&base).await;
    let store = open(&url).await;
    Some((store, url))
}

/// A migrated team store at `url`.
pub async fn open(url: &str) -> TeamStore {
    let store = TeamStore::new(TeamStoreUrl::parse(url).unwrap()).unwrap();
    store.migrate().await.unwrap();
    store
}

pub fn project(id: &str) -> ProjectId {
    ProjectId::new(id).unwrap()
}

pub fn add(content: &str) -> TeamWrite {
    TeamWrite::Add {
        category: MemoryCategory::Constraints,
        content: content.to_owned(),
        source: MemorySource::Agent,
        permanent: false,
    }
}
