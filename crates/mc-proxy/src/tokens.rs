//! Token estimates for the engine's planning.
//!
//! The provider's tokenizer is not public, so the proxy counts with o200k_base and scales by
//! a factor fitted on recorded Claude traffic (Claude's counts run about 6.4% above o200k's
//! on the same JSON). The provider's reported usage, not this estimate, decides when a pass
//! may bust; estimates size the work a bust removes.
//!
//! Counting runs on every new part of every request, so it uses the `tiktoken` crate: the
//! same o200k_base counts as tiktoken-rs 0.12's `encode_ordinary` (checked equal on every
//! text of the recorded sessions in `shared/data` and on generated edge cases), 6-7x faster
//! (~130 MB/s against ~20 MB/s on that text; 5.5x on texts under 256 bytes).
//! Counts are also memoised by content hash, since blake3 runs ~10x faster still: the
//! engine keeps a session's part counts only while the session stays in its cache, and a
//! session it evicted or a pass that failed is counted again from its first part.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use tiktoken::CoreBpe;

/// Claude's tokens per o200k token, fitted on recorded calls.
const CLAUDE_SCALE: f64 = 1.064;

/// Bytes a memoised count takes in the table: its 32-byte key, its count, and the table's
/// control byte and spare room (kept at most 7/8 full).
const MEMO_ENTRY_BYTES: usize = 48;

/// Texts shorter than this are counted directly: they take about a microsecond to count,
/// and leaving them out keeps the memo's entries few.
const MEMO_MIN_BYTES: usize = 256;

/// Counts tokens of texts, memoised.
pub struct TokenEstimator {
    memo: Mutex<HashMap<[u8; 32], u64>>,
    /// Most memoised counts kept; past this the memo starts over (a count is cheap to redo
    /// and memory stays bounded however long the process runs).
    memo_entries: usize,
}

/// o200k_base, loaded once per process (~100 ms); `None` if the build left its tables out
/// (a missing cargo feature), in which case estimates fall back to one token per four bytes
/// rather than refusing requests.
fn bpe() -> Option<&'static CoreBpe> {
    static BPE: OnceLock<Option<&'static CoreBpe>> = OnceLock::new();
    *BPE.get_or_init(|| {
        let bpe = tiktoken::get_encoding("o200k_base");
        if bpe.is_none() {
            tracing::error!("o200k tables not compiled in; estimating 4 bytes per token");
        }
        bpe
    })
}

impl TokenEstimator {
    /// An estimator; the tables load on a background thread so the proxy starts listening
    /// at once (a first request waits for them if it comes sooner).
    pub fn new() -> Self {
        Self::with_memo_bytes(mc_engine::CacheBudget::default().token_memo())
    }

    /// An estimator whose memo holds at most about `memo_bytes`.
    pub fn with_memo_bytes(memo_bytes: usize) -> Self {
        std::thread::spawn(bpe);
        Self {
            memo: Mutex::new(HashMap::new()),
            memo_entries: memo_bytes / MEMO_ENTRY_BYTES,
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
            return bpe.count(text) as u64;
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
        let count = bpe.count(text) as u64;
        if let Ok(mut memo) = self.memo.lock() {
            if memo.len() >= self.memo_entries {
                // Freed too, not only emptied: a table keeps its capacity when cleared.
                *memo = HashMap::new();
            }
            if self.memo_entries > 0 {
                memo.insert(key, count);
            }
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

    /// Counts taken with `tiktoken_rs::o200k_base().encode_ordinary(text).len()` (0.12.1):
    /// a change of tokenizer crate or version must keep every one of them.
    #[test]
    fn counts_equal_tiktoken_rs_o200k() {
        let pinned: [(&str, u64); 10] = [
            ("", 0),
            ("hello world", 2),
            ("<|endoftext|>", 7),
            ("They'll say it's the HTTPServer's fault; I'd disagree.", 13),
            (
                "fn main() {\n    let total: u64 = (1..=10).sum();\n    println!(\"{total}\");  \n}\n\n\n",
                27,
            ),
            (
                "{\"command\":\"grep -rn 'def get_prep_value' django/db/models/fields/__init__.py | head -20\",\"timeout\":120}",
                31,
            ),
            ("a  \n\n  b   \r\n\r\n\t x\u{a0}\u{3000}y    ", 12),
            (
                "1234567890 3.14159 \u{663}\u{664} \u{216b} \u{bd} 0x7fff_ffff",
                24,
            ),
            (
                "日本語のテキストと中文，还有한국어. Ｆｕｌｌｗｉｄｔｈ！ café naïve e\u{301} \
                 😀👨\u{200d}👩\u{200d}👧🇯🇵",
                48,
            ),
            (
                "Привет, мир! مرحبا بالعالم \u{200e}שלום עולם हिन\u{94d}दी ไทย",
                14,
            ),
        ];
        let estimator = TokenEstimator::new();
        let counted: Vec<(&str, u64)> = pinned
            .iter()
            .map(|&(text, _)| (text, estimator.count("gpt-4o", text)))
            .collect();
        assert_eq!(counted, pinned);
    }

    /// The same pin over a whole recorded agent run: 232 messages of shell output, code,
    /// diffs and prose. It runs wherever the data is found and fails on any other file.
    #[test]
    fn counts_equal_tiktoken_rs_o200k_on_a_recorded_run() -> Result<(), Box<dyn std::error::Error>>
    {
        let bytes = mc_testdata::read_published(
            "swe-trajectories/django__django-11138.traj.json",
            "06fbc1dc5c1cb786ca2014d6caf43762c4b0230e62a58090cac9255fadf22c4a",
        );
        let run: serde_json::Value = serde_json::from_slice(&bytes)?;
        let estimator = TokenEstimator::new();
        let contents: Vec<&str> = run["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|message| message["content"].as_str())
            .collect();
        let total: u64 = contents
            .iter()
            .map(|text| estimator.count("gpt-4o", text))
            .sum();
        assert_eq!((contents.len(), total), (232, 72_371));
        Ok(())
    }
}
