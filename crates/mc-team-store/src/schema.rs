//! The team schema's versions and its fence.
//!
//! PostgreSQL has no `user_version`, so the version lives in a one-row table,
//! `mc_team_schema`. Each migration runs in its own transaction holding an advisory lock, so
//! proxies starting together apply it once; a schema newer than this binary is refused
//! untouched, as the local store's fence refuses a newer SQLite file.

use deadpool_postgres::{GenericClient, Object};

use crate::error::{Result, TeamStoreError, postgres};

/// One step of the team schema.
struct Migration {
    version: i32,
    sql: &'static str,
}

const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        sql: include_str!("migrations/0001_knowledge.sql"),
    },
    Migration {
        version: 2,
        sql: include_str!("migrations/0002_dreamer_leases.sql"),
    },
    Migration {
        version: 3,
        sql: include_str!("migrations/0003_memory_use.sql"),
    },
    Migration {
        version: 4,
        sql: include_str!("migrations/0004_smart_notes.sql"),
    },
    Migration {
        version: 5,
        sql: include_str!("migrations/0005_commits.sql"),
    },
];

/// The newest team schema this binary knows.
pub const TEAM_SCHEMA_VERSION: i32 = 5;

/// The key of the advisory lock migrations hold ("mc schema" in ASCII).
const SCHEMA_LOCK: i64 = 0x6d63_2073_6368_656d;

/// Brings the team schema to [`TEAM_SCHEMA_VERSION`], or refuses a newer one.
pub(crate) async fn migrate(client: &mut Object, url: &str) -> Result<i32> {
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS mc_team_schema (version integer NOT NULL);
             INSERT INTO mc_team_schema (version)
               SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM mc_team_schema)",
        )
        .await
        .map_err(postgres(url, "creating the schema fence"))?;
    for migration in MIGRATIONS {
        let tx = client
            .transaction()
            .await
            .map_err(postgres(url, "starting a migration"))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
            .await
            .map_err(postgres(url, "locking the schema"))?;
        let found = fenced_version(&tx, url).await?;
        if found >= migration.version {
            continue;
        }
        tx.batch_execute(migration.sql)
            .await
            .map_err(postgres(url, "migrating the team schema"))?;
        tx.execute(
            "UPDATE mc_team_schema SET version = $1",
            &[&migration.version],
        )
        .await
        .map_err(postgres(url, "recording the schema version"))?;
        tx.commit()
            .await
            .map_err(postgres(url, "committing a migration"))?;
    }
    fenced_version(&*client, url).await
}

/// The schema's version, or [`TeamStoreError::SchemaTooNew`] when this binary does not
/// know it.
async fn fenced_version(client: &impl GenericClient, url: &str) -> Result<i32> {
    let found: i32 = client
        .query_one("SELECT version FROM mc_team_schema", &[])
        .await
        .map_err(postgres(url, "reading the schema version"))?
        .get(0);
    if found > TEAM_SCHEMA_VERSION {
        return Err(TeamStoreError::SchemaTooNew {
            found,
            supported: TEAM_SCHEMA_VERSION,
        });
    }
    Ok(found)
}
