//! Token counting, behind a trait so rule tests can use exact fake counts.

use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

use crate::error::TokenizerError;

/// Counts the tokens of one block's canonical text.
pub trait CountTokens {
    /// The token count of `text`.
    fn count_tokens(&self, text: &str) -> u64;
}

impl<T: CountTokens + ?Sized> CountTokens for &T {
    fn count_tokens(&self, text: &str) -> u64 {
        (**self).count_tokens(text)
    }
}

impl<T: CountTokens + ?Sized> CountTokens for std::sync::Arc<T> {
    fn count_tokens(&self, text: &str) -> u64 {
        (**self).count_tokens(text)
    }
}

/// o200k_base via tiktoken-rs: the closest public stand-in for Claude's tokenizer, which is
/// not published (see the crate docs on the error this introduces).
#[derive(Clone, Copy)]
pub struct O200kCounter {
    bpe: &'static CoreBPE,
}

impl std::fmt::Debug for O200kCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("O200kCounter")
    }
}

/// The loaded tables, shared by every counter: loading takes ~150 ms, so it happens once per
/// process. A failure is remembered too, so it is reported the same way each time.
static O200K: OnceLock<Result<CoreBPE, String>> = OnceLock::new();

impl O200kCounter {
    /// The shared counter, loading the tables on first use.
    pub fn load() -> Result<Self, TokenizerError> {
        match O200K.get_or_init(|| tiktoken_rs::o200k_base().map_err(|error| error.to_string())) {
            Ok(bpe) => Ok(Self { bpe }),
            Err(reason) => Err(TokenizerError {
                reason: reason.clone(),
            }),
        }
    }
}

impl CountTokens for O200kCounter {
    fn count_tokens(&self, text: &str) -> u64 {
        // Ordinary encoding: a block that quotes `<|endoftext|>` is text, not a control token.
        u64::try_from(self.bpe.count_ordinary(text)).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_with_o200k() -> Result<(), TokenizerError> {
        let counter = O200kCounter::load()?;
        assert_eq!(counter.count_tokens(""), 0);
        assert_eq!(counter.count_tokens("hello world"), 2);
        assert_eq!(counter.count_tokens("<|endoftext|>"), 7);
        Ok(())
    }
}
