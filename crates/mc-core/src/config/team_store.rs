//! `team_store`: where a team keeps its shared project knowledge (PostgreSQL), if anywhere.
//!
//! The URL holds the team database's credentials, so it is kept as a [`Secret`] and every
//! printable form of it (`config show`, `status`, `doctor`, errors) is [`redact_url`]'s: the
//! password replaced by `<redacted>`. Like `workspaces`, the section is read from the user
//! file only: a cloned repository's own file must not send its user's memories to a server
//! of its choosing.

use serde::{Serialize, Serializer};

use super::secret::Secret;

/// The team store's settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TeamStoreConfig {
    /// The PostgreSQL URL; `None` keeps project knowledge in the local store only.
    pub url: Option<TeamStoreUrl>,
}

/// A checked PostgreSQL URL whose password never prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamStoreUrl {
    secret: Secret,
    redacted: String,
}

impl TeamStoreUrl {
    /// `raw` when [`team_store_url_problem`] finds nothing wrong with it.
    pub fn parse(raw: &str) -> Result<Self, String> {
        match team_store_url_problem(raw) {
            Some(problem) => Err(problem),
            None => Ok(Self {
                secret: Secret::new(raw),
                redacted: redact_url(raw),
            }),
        }
    }

    /// The URL with its password, for the one place that connects.
    pub fn expose(&self) -> &str {
        self.secret.expose()
    }

    /// The URL with its password replaced by `<redacted>`.
    pub fn redacted(&self) -> &str {
        &self.redacted
    }
}

impl std::fmt::Display for TeamStoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted)
    }
}

impl Serialize for TeamStoreUrl {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.redacted)
    }
}

/// Why `raw` is not a team store URL, if it is not: a `postgres://` (or `postgresql://`) URL
/// naming a host and a database. TLS is not built in, so `sslmode=require` (or stricter) is
/// refused rather than silently sending credentials in clear; reach a remote server through
/// a tunnel. The reason never contains the password.
pub fn team_store_url_problem(raw: &str) -> Option<String> {
    let shown = redact_url(raw);
    let Some(rest) = raw
        .strip_prefix("postgres://")
        .or_else(|| raw.strip_prefix("postgresql://"))
    else {
        return Some(format!(
            "`{shown}` is not a PostgreSQL URL: write postgres://USER:PASSWORD@HOST:PORT/DATABASE"
        ));
    };
    let (before_query, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (authority, database) = before_query.split_once('/').unwrap_or((before_query, ""));
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    if host.is_empty() {
        return Some(format!("`{shown}` names no host"));
    }
    if database.is_empty() {
        return Some(format!(
            "`{shown}` names no database: add /DATABASE after the host"
        ));
    }
    let strict_tls = query.split('&').any(|pair| {
        matches!(
            pair.split_once('='),
            Some(("sslmode", "require" | "verify-ca" | "verify-full"))
        )
    });
    if strict_tls {
        return Some(format!(
            "`{shown}` asks for TLS, which this build does not include: use a server on \
             loopback or reach it through an SSH tunnel"
        ));
    }
    None
}

/// `raw` with the password of its user-info and of any `password=` parameter replaced by
/// `<redacted>`.
pub fn redact_url(raw: &str) -> String {
    let (scheme, rest) = match raw.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => (None, raw),
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((user_info, host)) => match user_info.split_once(':') {
            Some((user, _)) => format!("{user}:{}@{host}", Secret::REDACTED),
            None => format!("{user_info}@{host}"),
        },
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let pairs: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) if key.eq_ignore_ascii_case("password") => {
                        format!("{key}={}", Secret::REDACTED)
                    }
                    _ => pair.to_owned(),
                })
                .collect();
            format!("{path}?{}", pairs.join("&"))
        }
        None => tail.to_owned(),
    };
    match scheme {
        Some(scheme) => format!("{scheme}://{authority}{tail}"),
        None => format!("{authority}{tail}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_never_prints() {
        let url = TeamStoreUrl::parse("postgres://team:hunter2@db.local:5432/mc").unwrap();
        assert_eq!(
            url.to_string(),
            "postgres://team:<redacted>@db.local:5432/mc"
        );
        assert!(!format!("{url:?}").contains("hunter2"));
        assert_eq!(
            serde_json::to_value(&url).unwrap(),
            "postgres://team:<redacted>@db.local:5432/mc"
        );
        assert_eq!(url.expose(), "postgres://team:hunter2@db.local:5432/mc");
        assert_eq!(
            redact_url("postgresql://h:1/mc?user=a&password=hunter2&application_name=x"),
            "postgresql://h:1/mc?user=a&password=<redacted>&application_name=x"
        );
        assert_eq!(redact_url("postgres://team@h/mc"), "postgres://team@h/mc");
    }

    #[test]
    fn unusable_urls_are_refused_with_the_reason_and_without_the_password() {
        for (raw, reason) in [
            ("mysql://a:hunter2@h/mc", "not a PostgreSQL URL"),
            ("postgres://a:hunter2@h:5432", "names no database"),
            ("postgres://a:hunter2@/mc", "names no host"),
            ("postgres://a:hunter2@h/mc?sslmode=require", "asks for TLS"),
        ] {
            let problem = team_store_url_problem(raw).unwrap();
            assert!(problem.contains(reason), "{raw}: {problem}");
            assert!(!problem.contains("hunter2"), "{raw}: {problem}");
        }
        assert_eq!(
            team_store_url_problem("postgres://a:b@127.0.0.1:5432/mc"),
            None
        );
    }
}
