//! A value that must never reach a log line, an error message or the store.

use std::fmt;

/// An API key, auth header value or any other credential.
///
/// `Debug` and `Display` both print `<redacted>`, so `tracing::info!(key = ?secret)`, `{:?}`
/// on a struct holding one, or an error that embeds one cannot leak it (DESIGN §7). There is
/// deliberately no `Serialize`: the only way to the bytes is [`Secret::expose`], which is
/// easy to grep for and is meant to be called only where the value is sent upstream.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// What every formatting of a secret prints.
    pub const REDACTED: &'static str = "<redacted>";

    /// Wraps a credential.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The credential itself, for the one place that sends it upstream.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(Self::REDACTED)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(Self::REDACTED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_formats_the_value() {
        #[derive(Debug)]
        #[expect(dead_code, reason = "only formatted")]
        struct Upstream {
            authorization: Secret,
        }
        let key = Secret::new("sk-ant-api03-very-secret");
        let shown = format!(
            "{key} {key:?} {key:#?} {:?}",
            Upstream {
                authorization: key.clone()
            }
        );
        assert!(!shown.contains("very-secret"), "{shown}");
        assert_eq!(shown.matches(Secret::REDACTED).count(), 4);
        assert_eq!(key.expose(), "sk-ant-api03-very-secret");
    }
}
