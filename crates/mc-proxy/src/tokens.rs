//! Token estimates for the engine's planning.
//!
//! The provider's tokenizer is not public, so the proxy counts with o200k_base and scales by
//! a factor fitted on recorded Claude traffic (Claude's counts run about 6.4% above o200k's
//! on the same JSON). The provider's reported usage, not this estimate, decides when a pass
//! may bust; estimates size the work a bust removes.
//!
//! A pass estimates every part of the session, and o200k encodes some 20–30 MB/s, so counts
//! are memoised by content hash: each part is encoded once for the life of the process.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use tiktoken_rs::CoreBPE;

/// Claude's tokens per o200k token, fitted on recorded calls.
const CLAUDE_SCALE: f64 = 1.064;

/// Most memoised counts kept; past this the memo starts over (a count is cheap to redo and
/// memory stays bounded however long the process runs).
const MEMO_ENTRIES: usize = 1 << 20;

/// Texts shorter than this are counted directly: hashing them costs as much as encoding.
const MEMO_MIN_BYTES: usize = 256;

/// Counts tokens of texts, memoised.
pub struct TokenEstimator {
    memo: Mutex<HashMap<[u8; 32], u64>>,
}

/// o200k_base, loaded once per process; `None` if the compiled-in tables fail to load (a
/// build problem), in which case estimates fall back to one token per four bytes rather
/// than refusing requests.
fn bpe() -> Option<&'static CoreBPE> {
    static BPE: OnceLock<Option<CoreBPE>> = OnceLock::new();
    BPE.get_or_init(|| match tiktoken_rs::o200k_base() {
        Ok(bpe) => Some(bpe),
        Err(error) => {
            tracing::error!(%error, "o200k tables failed to load; estimating 4 bytes per token");
            None
        }
    })
    .as_ref()
}

impl TokenEstimator {
    /// An estimator; the tables load on a background thread so the proxy starts listening
    /// at once (a first request waits for them if it comes sooner).
    pub fn new() -> Self {
        std::thread::spawn(bpe);
        Self {
            memo: Mutex::new(HashMap::new()),
        }
    }

    /// The estimated tokens of `text` for `model`.
    pub fn count(&self, model: &str, text: &str) -> u64 {
        let raw = self.raw_count(text);
        if model.contains("claude") {
            (raw as f64 * CLAUDE_SCALE).ceil() as u64
        } else {
            raw
        }
    }

    fn raw_count(&self, text: &str) -> u64 {
        let Some(bpe) = bpe() else {
            return text.len().div_ceil(4) as u64;
        };
        if text.len() < MEMO_MIN_BYTES {
            return bpe.encode_ordinary(text).len() as u64;
        }
        let key = *blake3::hash(text.as_bytes()).as_bytes();
        if let Some(&count) = self
            .memo
            .lock()
            .ok()
            .and_then(|memo| memo.get(&key).copied())
            .as_ref()
        {
            return count;
        }
        let count = bpe.encode_ordinary(text).len() as u64;
        if let Ok(mut memo) = self.memo.lock() {
            if memo.len() >= MEMO_ENTRIES {
                memo.clear();
            }
            memo.insert(key, count);
        }
        count
    }
}

impl Default for TokenEstimator {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_counts_run_above_o200k_and_memo_agrees() {
        let estimator = TokenEstimator::new();
        let text = "fn main() { println!(\"hello\"); }\n".repeat(40);
        let gpt = estimator.count("gpt-4o", &text);
        let claude = estimator.count("claude-sonnet-4-5", &text);
        assert!(gpt > 100, "{gpt}");
        assert!(claude > gpt);
        assert_eq!(
            estimator.count("gpt-4o", &text),
            gpt,
            "memoised count differs"
        );
    }
}
