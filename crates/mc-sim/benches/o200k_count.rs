//! How fast `O200kCounter` counts real text, and what a content-hash memo costs beside it.
//!
//! The texts are every string in `shared/data` (recorded Claude Code traffic, SWE-bench agent
//! runs, LoCoMo dialogues): tool output, code, JSON bodies, prose. Their total is pinned to
//! the count tiktoken-rs 0.12's `encode_ordinary` gave on the same strings, so a tokenizer
//! that drifts from it fails here on 16 MB of text, not only on the unit tests' few lines.
//! blake3 over the texts of 256 bytes and more is the price of a memo lookup (the proxy's
//! memo threshold); its ratio to counting says whether memoising still pays. On a shared
//! machine read the ratio, not the absolute MB/s.
//!
//! Run: `cargo bench -p mc-sim --bench o200k_count`.

#![expect(clippy::print_stdout, reason = "a benchmark prints its figures")]

use std::error::Error;
use std::path::Path;
use std::time::Instant;

use mc_sim::{CountTokens, O200kCounter};
use serde_json::Value;

/// Total o200k tokens of the texts below, by tiktoken-rs 0.12.1 `encode_ordinary`.
const PINNED_TOKENS: u64 = 4_635_393;

/// The folders read, and the digest of the published ones ([`mc_testdata::corpus_digest`]):
/// the pin is checked on every run, and on other data the bench fails instead of skipping it.
const FOLDERS: [&str; 3] = ["anthropic-capture", "locomo", "swe-trajectories"];
const PUBLISHED_DIGEST: &str = "42465fe115dcd986a733e35895baee160897b35895a1e9ce6a45dfdb3c953df1";

/// Shortest text the proxy memoises (`MEMO_MIN_BYTES` in mc-proxy's `tokens.rs`).
const MEMO_MIN_BYTES: usize = 256;

/// Passes over the texts; the fastest counts, so a neighbour's burst is not measured.
const PASSES: usize = 3;

fn main() -> Result<(), Box<dyn Error>> {
    let digest = mc_testdata::corpus_digest(&FOLDERS);
    if digest != PUBLISHED_DIGEST {
        return Err(format!(
            "the data folder is not the published one (digest {digest}); the pinned total \
             {PINNED_TOKENS} holds only there: point MC_SHARED_DATA at it"
        )
        .into());
    }
    let texts = load_texts(&mc_testdata::dir())?;
    let bytes: usize = texts.iter().map(String::len).sum();
    let counter = O200kCounter::load()?;

    let mut tokens = 0;
    let count_secs = fastest(|| {
        tokens = texts.iter().map(|text| counter.count_tokens(text)).sum();
    });
    let memoised: Vec<&String> = texts
        .iter()
        .filter(|text| text.len() >= MEMO_MIN_BYTES)
        .collect();
    let memoised_bytes: usize = memoised.iter().map(|text| text.len()).sum();
    let hash_secs = fastest(|| {
        for text in &memoised {
            std::hint::black_box(blake3::hash(std::hint::black_box(text.as_bytes())));
        }
    });

    let count_mb_s = bytes as f64 / count_secs / 1e6;
    let hash_mb_s = memoised_bytes as f64 / hash_secs / 1e6;
    println!(
        "o200k_count: {} texts, {:.1} MB, {tokens} tokens",
        texts.len(),
        bytes as f64 / 1e6
    );
    println!("count  {count_mb_s:7.1} MB/s");
    println!(
        "blake3 {hash_mb_s:7.1} MB/s on texts >= {MEMO_MIN_BYTES} B ({:.1}x counting)",
        hash_mb_s / count_mb_s
    );
    if tokens != PINNED_TOKENS {
        return Err(format!("counted {tokens} tokens, tiktoken-rs counted {PINNED_TOKENS}").into());
    }
    Ok(())
}

/// Seconds of the fastest of `PASSES` runs of `pass`.
fn fastest(mut pass: impl FnMut()) -> f64 {
    (0..PASSES)
        .map(|_| {
            let start = Instant::now();
            pass();
            start.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// Every string in the data folder's JSON files (JSON Lines read line by line), in file order.
fn load_texts(dir: &Path) -> Result<Vec<String>, Box<dyn Error>> {
    let mut files = Vec::new();
    for folder in FOLDERS {
        for entry in std::fs::read_dir(dir.join(folder))? {
            files.push(entry?.path());
        }
    }
    files.sort();
    let mut texts = Vec::new();
    for file in files {
        let raw = std::fs::read_to_string(&file)?;
        match file.extension().and_then(|ext| ext.to_str()) {
            Some("json") => collect_strings(serde_json::from_str(&raw)?, &mut texts),
            Some("jsonl") => {
                for line in raw.lines().filter(|line| !line.trim().is_empty()) {
                    collect_strings(serde_json::from_str(line)?, &mut texts);
                }
            }
            _ => {}
        }
    }
    Ok(texts)
}

fn collect_strings(value: Value, texts: &mut Vec<String>) {
    match value {
        Value::String(text) => texts.push(text),
        Value::Array(items) => items
            .into_iter()
            .for_each(|item| collect_strings(item, texts)),
        Value::Object(fields) => fields
            .into_iter()
            .for_each(|(_, field)| collect_strings(field, texts)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}
