//! The estimated size of what a request carries besides its messages: the system prompt and
//! tools. Every prompt the provider counts includes them (for a coding agent, 15–20K tokens),
//! so the engine plans with them; they change rarely, so each distinct prefix is counted once.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use crate::client_request::ClientRequest;

/// Distinct prefixes remembered; past this the memo starts over.
const ENTRIES: usize = 256;

/// Counts of system prompts and tools, by prefix identity and model.
#[derive(Debug, Default)]
pub struct FixedTokens {
    by_prefix: Mutex<HashMap<(String, String), u64>>,
}

impl FixedTokens {
    /// The estimated tokens of `client`'s system prompt and tools, whose identity is
    /// `prefix_identity`, counted with `count`.
    pub fn of(
        &self,
        client: &ClientRequest,
        prefix_identity: &str,
        count: &dyn Fn(&str) -> u64,
    ) -> u64 {
        let key = (prefix_identity.to_owned(), client.model().to_owned());
        if let Some(&tokens) = self
            .by_prefix
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
        {
            return tokens;
        }
        let tokens = client
            .system_texts()
            .into_iter()
            .chain(client.tool_definitions().iter().map(String::as_str))
            .map(count)
            .sum();
        let mut known = self
            .by_prefix
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if known.len() >= ENTRIES {
            known.clear();
        }
        known.insert(key, tokens);
        tokens
    }
}
