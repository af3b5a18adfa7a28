//! Scratch databases on a server: a fresh, empty database for each test or benchmark run,
//! so runs never see each other's rows.

use tokio_postgres::NoTls;

use crate::error::{Result, TeamStoreError, postgres};

/// Creates a database with a random name on the server `server_url` names (its user must
/// be allowed to create databases) and returns the URL naming it instead.
pub async fn create_scratch_database(server_url: &str) -> Result<String> {
    let shown = mc_core::config::redact_url(server_url);
    let (client, connection) = tokio_postgres::connect(server_url, NoTls)
        .await
        .map_err(postgres(&shown, "connecting to create a scratch database"))?;
    let driver = tokio::spawn(connection);
    let mut bytes = [0_u8; 8];
    getrandom::fill(&mut bytes).map_err(|error| TeamStoreError::Random(error.to_string()))?;
    let name: String = "mc_scratch_"
        .chars()
        .chain(bytes.iter().map(|byte| char::from(b'a' + byte % 26)))
        .collect();
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .map_err(postgres(&shown, "creating a scratch database"))?;
    drop(client);
    let _closed = driver.await;
    Ok(with_database(server_url, &name))
}

/// `url` with its database replaced by `name`.
fn with_database(url: &str, name: &str) -> String {
    let (before_query, query) = url
        .split_once('?')
        .map_or((url, None), |(a, b)| (a, Some(b)));
    let (scheme, rest) = before_query
        .split_once("://")
        .unwrap_or(("postgres", before_query));
    let authority = rest
        .split_once('/')
        .map_or(rest, |(authority, _)| authority);
    let mut named = format!("{scheme}://{authority}/{name}");
    if let Some(query) = query {
        named.push('?');
        named.push_str(query);
    }
    named
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_is_replaced_and_the_rest_kept() {
        assert_eq!(
            with_database("postgres://u:p@h:5/postgres?application_name=x", "mc_1"),
            "postgres://u:p@h:5/mc_1?application_name=x"
        );
        assert_eq!(
            with_database("postgres://u@h", "mc_1"),
            "postgres://u@h/mc_1"
        );
    }
}
