//! Token counting, behind a trait so rule tests can use exact fake counts.

use tiktoken::CoreBpe;

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

/// Raw tokens of a wire value read as its JSON, with any media in it counted by the
/// provider's rule (pixels, pages) instead of its base64 text ([`mc_core::media`]).
///
/// Most values hold no media: they are counted from their JSON text alone, and only a text
/// that names a media part type is read back as a value to find it.
pub(crate) fn json_tokens<T: serde::Serialize + ?Sized>(
    value: &T,
    counter: &dyn CountTokens,
) -> u64 {
    let text = serde_json::to_string(value).unwrap_or_default();
    const MEDIA_TYPES: [&str; 7] = [
        "\"image\"",
        "\"document\"",
        "\"image_url\"",
        "\"file\"",
        "\"input_image\"",
        "\"input_file\"",
        "\"input_audio\"",
    ];
    if !MEDIA_TYPES.iter().any(|name| text.contains(name)) {
        return counter.count_tokens(&text);
    }
    let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
        return counter.count_tokens(&text);
    };
    match mc_core::media::without_media(&value, &|text: &str| counter.count_tokens(text)) {
        Some((stripped, media_tokens)) => counter
            .count_tokens(&stripped.to_string())
            .saturating_add(media_tokens),
        None => counter.count_tokens(&text),
    }
}

/// o200k_base: the closest public stand-in for Claude's tokenizer, which is not published
/// (see the crate docs on the error this introduces).
///
/// Counted with the `tiktoken` crate, whose counts equal tiktoken-rs's `encode_ordinary` on
/// all of `shared/data` and which runs ~6x faster, so replays spend their time simulating
/// rather than tokenizing.
#[derive(Clone, Copy)]
pub struct O200kCounter {
    bpe: &'static CoreBpe,
}

impl std::fmt::Debug for O200kCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("O200kCounter")
    }
}

impl O200kCounter {
    /// The shared counter, loading the tables on first use (~100 ms, once per process: the
    /// crate keeps them in a static).
    pub fn load() -> Result<Self, TokenizerError> {
        match tiktoken::get_encoding("o200k_base") {
            Some(bpe) => Ok(Self { bpe }),
            None => Err(TokenizerError {
                reason: "the tiktoken crate was built without its o200k_base tables".to_owned(),
            }),
        }
    }
}

impl CountTokens for O200kCounter {
    fn count_tokens(&self, text: &str) -> u64 {
        // Ordinary counting: a block that quotes `<|endoftext|>` is text, not a control token.
        u64::try_from(self.bpe.count(text)).unwrap_or(u64::MAX)
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
