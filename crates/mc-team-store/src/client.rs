//! The connection pool to the team's PostgreSQL, opened once per process.

use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use tokio_postgres::NoTls;

use crate::error::{Result, TeamStoreError};
use crate::schema::migrate;
use mc_core::config::TeamStoreUrl;

/// How long a request may wait to connect or for a pooled connection before the team store
/// counts as unreachable. Short: the proxy falls back to its local cache rather than wait.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Connections per process: the proxy's background sync, the agent tools' writes and a
/// dreamer at once, with room to spare.
const POOL_SIZE: usize = 8;

/// A pool of connections to one team store, with its schema checked.
#[derive(Clone)]
pub struct TeamStore {
    pool: Pool,
    url: TeamStoreUrl,
}

impl std::fmt::Debug for TeamStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TeamStore").field("url", &self.url).finish()
    }
}

impl TeamStore {
    /// Builds the pool; no connection is made until one is needed, so a proxy starts
    /// while the server is down. Call [`TeamStore::migrate`] before the first query.
    pub fn new(url: TeamStoreUrl) -> Result<Self> {
        let mut config: tokio_postgres::Config =
            url.expose().parse().map_err(|_| TeamStoreError::BadUrl {
                reason: format!("PostgreSQL cannot read {url}"),
            })?;
        config.connect_timeout(CONNECT_TIMEOUT);
        config.application_name("magic-context");
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(CONNECT_TIMEOUT))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .recycle_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(|error| TeamStoreError::BadUrl {
                reason: error.to_string(),
            })?;
        Ok(Self { pool, url })
    }

    /// Connects, migrates the team schema (or refuses a newer one) and returns its version.
    pub async fn migrate(&self) -> Result<i32> {
        let mut client = self.client("migrating the team schema").await?;
        migrate(&mut client, self.url.redacted()).await
    }

    /// The URL, password redacted when printed.
    pub fn url(&self) -> &TeamStoreUrl {
        &self.url
    }

    /// Whether the server answers now.
    pub async fn is_reachable(&self) -> bool {
        match self.client("checking the team store").await {
            Ok(client) => client.simple_query("SELECT 1").await.is_ok(),
            Err(_) => false,
        }
    }

    /// A pooled connection, or [`TeamStoreError::Unreachable`].
    pub(crate) async fn client(&self, doing: &'static str) -> Result<Object> {
        self.pool
            .get()
            .await
            .map_err(|error| TeamStoreError::Unreachable {
                url: self.url.redacted().to_owned(),
                doing,
                source: Box::new(error),
            })
    }

    pub(crate) fn redacted(&self) -> &str {
        self.url.redacted()
    }
}
