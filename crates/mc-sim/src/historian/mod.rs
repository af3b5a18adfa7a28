//! The simulator playing the historian (DESIGN §5): given the user message of a historian
//! call, the `record_history` input an honest small model would write.
//!
//! Replay prices historian calls and end-to-end runs publish what they answer, so the answer
//! must look like a real one where it matters: compartments covering the chunk without gap
//! or overlap, episodes cut where the user speaks again, titles and tiers taken from the
//! transcript's own words (files, commands, tools, the user's requests quoted) and sized like
//! a model's, and a fact only when the user stated a rule. It is a pure function of the
//! message, so a replay prices the same answer every run.
//!
//! ```
//! use mc_core::historian::{Chunk, historian_user_message, parse_answer, validate};
//! use mc_sim::historian::historian_answer;
//!
//! let chunk = Chunk { start: 3, end: 5 };
//! let transcript = "#3 user: add a --json flag\n#4 assistant: → Edit({\"file_path\":\"cli.rs\"})\n#5 user: ← ok\n";
//! let answer = historian_answer(&historian_user_message(chunk, transcript, Default::default())).unwrap();
//! let output = parse_answer(&answer).unwrap();
//! assert!(validate(&output, chunk, 0).is_ok());
//! assert_eq!(output.compartments[0].title, "add a --json flag");
//! assert_eq!(historian_answer("What is the weather like?"), None);
//! ```

mod compartment;
mod episode;
mod facts;
mod read;

use mc_core::historian::HistorianOutput;
use serde_json::Value;

use self::compartment::write_compartment;
use self::episode::{digest, split_episodes};
use self::read::read_transcript;

/// Time before a historian model's first output token, in milliseconds: the request is long
/// and non-streaming, and small models still read it all first.
const FIRST_TOKEN_MS: u64 = 1_500;
/// Output speed of a small model, in tokens per second.
const OUTPUT_TOKENS_PER_S: u64 = 80;

/// The `record_history` input for the historian user message `user_message`
/// (`Transcript of ordinals A to B:` and one `#N role: content` line per message), or `None`
/// when the message is not a historian transcript.
///
/// For every transcript `mc_core::historian::render_transcript` can produce, the answer
/// passes `parse_answer` and `validate` (proven by a property test): the first compartment
/// starts at A, each next one right after the previous, and the last ends at B.
pub fn historian_answer(user_message: &str) -> Option<Value> {
    let transcript = read_transcript(user_message)?;
    let episodes = split_episodes(&transcript);
    let digests: Vec<_> = episodes.iter().map(digest).collect();
    let user_texts: Vec<&str> = digests
        .iter()
        .flat_map(|digest| digest.user_texts.iter().copied())
        .collect();
    let facts = facts::rules(&user_texts);
    let compartments = episodes
        .iter()
        .zip(&digests)
        .map(|(episode, digest)| {
            let states_rule = !facts::rules(&digest.user_texts).is_empty();
            write_compartment(episode, digest, states_rule)
        })
        .collect();
    let output = HistorianOutput {
        compartments,
        facts,
        observations: Vec::new(),
    };
    serde_json::to_value(output).ok()
}

/// The output tokens of a historian call that answered `answer`: the serialised tool input,
/// counted by `count` (the model's tokenizer, or an estimate of it).
pub fn historian_output_tokens(answer: &Value, count: &dyn Fn(&str) -> u64) -> u64 {
    count(&answer.to_string())
}

/// How long a small model takes to answer a historian call of `output_tokens`, in
/// milliseconds, for replay's simulated clock: a fixed wait for the first token, then the
/// output at a small model's speed.
pub fn historian_latency_ms(output_tokens: u64) -> u64 {
    FIRST_TOKEN_MS.saturating_add(output_tokens.saturating_mul(1_000) / OUTPUT_TOKENS_PER_S)
}

#[cfg(test)]
mod tests;
