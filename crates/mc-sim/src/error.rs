//! What the simulated provider rejects, worded as the provider words it.
//!
//! A fake upstream must fail the same way the real one does, so that a proxy bug which would
//! earn a 400 in production earns the same 400, with the same message, in a test.

use crate::prompt::BlockPath;

/// A request the provider would refuse before running the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CacheError {
    /// More than 4 blocks carry `cache_control`; the proxy must never send this (DESIGN §5).
    #[error("A maximum of 4 blocks with cache_control may be provided. Found {found}.")]
    TooManyBreakpoints {
        /// How many breakpoints the request carried.
        found: usize,
    },
    /// A 1-hour breakpoint follows a 5-minute one in prefix order; the provider requires
    /// longer TTLs first.
    #[error(
        "{path}.cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Note that blocks are processed in the following order: `tools`, `system`, `messages`."
    )]
    TtlOrder {
        /// The offending 1-hour block.
        path: BlockPath,
    },
}

impl CacheError {
    /// The HTTP status the provider answers with.
    pub fn status(&self) -> u16 {
        match self {
            Self::TooManyBreakpoints { .. } | Self::TtlOrder { .. } => 400,
        }
    }

    /// The provider's `error.type`.
    pub fn error_type(&self) -> &'static str {
        match self {
            Self::TooManyBreakpoints { .. } | Self::TtlOrder { .. } => "invalid_request_error",
        }
    }

    /// The provider's error body, ready for a fake upstream to send.
    pub fn to_body(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "error",
            "error": { "type": self.error_type(), "message": self.to_string() },
        })
    }
}

/// The o200k tables are missing from the build; a build problem, not a request one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "could not load the o200k_base tokenizer ({reason}); rebuild with the tiktoken crate's \
     `vocab-o200k_base` feature"
)]
pub struct TokenizerError {
    /// Why the tables could not be had.
    pub reason: String,
}

/// A token scale (`--token-scale`) that is not a finite number above 0.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the token scale must be a finite number above 0, such as 1.25; got `{given}`")]
pub struct InvalidTokenScale {
    /// What was given, as written.
    pub given: String,
}
