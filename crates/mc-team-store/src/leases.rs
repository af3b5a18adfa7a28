//! The dreamer's leases in the team store: one holder per conflict domain across every proxy
//! of the team, where the local store's lease (`mc-store`'s `dreamer_rows.rs`) only keeps
//! apart the proxies sharing one SQLite file.
//!
//! Taking and renewing is one `INSERT … ON CONFLICT … WHERE` statement, so two proxies racing
//! for a free or lapsed lease cannot both win. Expiry is reckoned on the server's clock,
//! never the caller's: machines of a team disagree about the time, and a lease judged on
//! each one's clock could be held twice. A holder that dies without releasing leaves the
//! lease to lapse after its time to live.

use mc_store::Lease;

use crate::client::TeamStore;
use crate::error::{Result, postgres};
use crate::sync::new_write_id;

/// The server's clock in unix milliseconds, in SQL.
const SERVER_NOW_MS: &str = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

/// A lease holder's name unique across the team: `process` (`serve-<pid>`, which machines
/// share) and 48 random bits.
pub fn lease_holder(process: &str) -> Result<String> {
    let random = new_write_id()?;
    Ok(format!("{process}-{}", &random[..12]))
}

impl TeamStore {
    /// Takes or renews the lease on `domain` for `owner` for `ttl_ms` from now on the
    /// server's clock: granted when it is free, lapsed, or already `owner`'s; `false` while
    /// another holder's lease runs. An unreachable server is an error: the caller must not
    /// take the lease as held.
    pub async fn take_dreamer_lease(&self, domain: &str, owner: &str, ttl_ms: i64) -> Result<bool> {
        const DOING: &str = "taking a dreamer lease";
        let url = self.redacted();
        let client = self.client(DOING).await?;
        let granted = client
            .query_opt(
                &format!(
                    "INSERT INTO mc_dreamer_leases AS held (domain, owner, acquired_ms, expires_ms)
                     SELECT $1, $2, now_ms, now_ms + $3 FROM (SELECT {SERVER_NOW_MS} AS now_ms) AS t
                     ON CONFLICT (domain) DO UPDATE SET
                       owner = excluded.owner,
                       acquired_ms = CASE WHEN held.owner = excluded.owner
                         THEN held.acquired_ms ELSE excluded.acquired_ms END,
                       expires_ms = excluded.expires_ms
                     WHERE held.owner = excluded.owner OR held.expires_ms <= excluded.acquired_ms
                     RETURNING owner"
                ),
                &[&domain, &owner, &ttl_ms.max(0)],
            )
            .await
            .map_err(postgres(url, DOING))?;
        Ok(granted.is_some())
    }

    /// Gives up `owner`'s lease on `domain` (nothing when someone else holds it).
    pub async fn release_dreamer_lease(&self, domain: &str, owner: &str) -> Result<()> {
        const DOING: &str = "releasing a dreamer lease";
        let url = self.redacted();
        let client = self.client(DOING).await?;
        client
            .execute(
                "DELETE FROM mc_dreamer_leases WHERE domain = $1 AND owner = $2",
                &[&domain, &owner],
            )
            .await
            .map_err(postgres(url, DOING))?;
        Ok(())
    }

    /// Every lease as stored, lapsed or not, by domain, with the server's clock now: a
    /// lease's expiry is read against the clock it was reckoned on, not the reader's.
    pub async fn dreamer_leases(&self) -> Result<(Vec<Lease>, i64)> {
        const DOING: &str = "listing the dreamer leases";
        let url = self.redacted();
        let client = self.client(DOING).await?;
        let rows = client
            .query(
                &format!(
                    "SELECT domain, owner, acquired_ms, expires_ms, {SERVER_NOW_MS}
                     FROM mc_dreamer_leases ORDER BY domain"
                ),
                &[],
            )
            .await
            .map_err(postgres(url, DOING))?;
        let now_ms = match rows.first() {
            Some(row) => row.get(4),
            None => client
                .query_one(&format!("SELECT {SERVER_NOW_MS}"), &[])
                .await
                .map_err(postgres(url, DOING))?
                .get(0),
        };
        let leases = rows
            .iter()
            .map(|row| Lease {
                domain: row.get(0),
                owner: row.get(1),
                acquired_ms: row.get(2),
                expires_ms: row.get(3),
            })
            .collect();
        Ok((leases, now_ms))
    }

    /// The lease on `domain` as stored, lapsed or not; times on the server's clock.
    pub async fn dreamer_lease(&self, domain: &str) -> Result<Option<Lease>> {
        const DOING: &str = "reading a dreamer lease";
        let url = self.redacted();
        let client = self.client(DOING).await?;
        let row = client
            .query_opt(
                "SELECT domain, owner, acquired_ms, expires_ms FROM mc_dreamer_leases
                 WHERE domain = $1",
                &[&domain],
            )
            .await
            .map_err(postgres(url, DOING))?;
        Ok(row.map(|row| Lease {
            domain: row.get(0),
            owner: row.get(1),
            acquired_ms: row.get(2),
            expires_ms: row.get(3),
        }))
    }
}
