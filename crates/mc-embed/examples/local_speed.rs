//! How fast the local model embeds: per-sentence time alone and in batches of 32.
//!
//! `MC_MINILM_DIR=... cargo run --release -p mc-embed --features local --example local_speed`
//! Sentences are distinct, short, and of realistic length (8–16 words), as memories are.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use mc_embed::LocalEmbedder;

const ROUNDS: usize = 5;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .or_else(|| std::env::var("MC_MINILM_DIR").ok())
        .map(PathBuf::from)
        .ok_or("pass the model directory or set MC_MINILM_DIR")?;
    let mut out = std::io::stdout().lock();

    let started = Instant::now();
    let model = LocalEmbedder::load(&dir)?;
    writeln!(out, "load: {:.0} ms", started.elapsed().as_secs_f64() * 1e3)?;

    let sentences: Vec<String> = (0..32 * ROUNDS)
        .map(|i| {
            format!(
                "Memory {i}: the proxy keeps session {} inside the window by compacting old turns",
                i * 7
            )
        })
        .collect();
    model.embed_blocking(&sentences[..4])?; // warm-up: first-touch allocations

    for batch in [1usize, 32] {
        let rounds = if batch == 1 { 32 } else { ROUNDS };
        let started = Instant::now();
        let mut count = 0usize;
        for chunk in sentences.chunks(batch).take(rounds) {
            count += model.embed_blocking(chunk)?.len();
        }
        let per_sentence_ms = started.elapsed().as_secs_f64() * 1e3 / count as f64;
        writeln!(
            out,
            "batch {batch:>2}: {per_sentence_ms:.2} ms per sentence ({count} sentences)"
        )?;
    }
    Ok(())
}
