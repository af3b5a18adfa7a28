//! Stand-ins for what a recording does not keep: how large they are, and padding them.
//!
//! Claude Code session files keep neither the system prompt nor the tool definitions, so the
//! loader substitutes stand-ins of about 3K tokens where Claude Code sends 15–20K. Every
//! request carries them, so they weigh on every figure, mostly as cheap cache reads: a
//! report must say they were used and how large they were, and `--stand-in-tokens` can pad
//! them to a realistic size. The padding is one more system block of fixed text, so it sits
//! in the cached prefix as the real system prompt does, and the same target always gives the
//! same bytes.

use std::borrow::Cow;

use mc_sim::strategy::fixed_tokens;
use mc_sim::{ModelSpec, Recording, model_spec};

use crate::estimate::Estimate;
use crate::memo::MemoCounter;

/// What a report says about the stand-ins its recordings used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StandIn {
    /// How many recordings used a stand-in system prompt and tools.
    pub recordings: usize,
    /// Their mean size, system prompt and tool definitions, as the strategies estimate it.
    pub tokens: u64,
    /// Whether they were padded (`--stand-in-tokens`).
    pub padded: bool,
}

impl StandIn {
    /// One sentence for the report: what was substituted, how large, and why it matters.
    pub fn note(&self, files: usize) -> String {
        let size = if self.padded { "padded to" } else { "of" };
        format!(
            "{} of {files} recordings keep neither system prompt nor tools (Claude Code session \
             files): stand-ins {size} about {} tokens replaced them, where Claude Code sends \
             15-20K{}",
            self.recordings,
            crate::thousands(self.tokens),
            if self.padded {
                ""
            } else {
                "; pad them with --stand-in-tokens"
            }
        )
    }
}

/// `recordings` with each stand-in padded to at least `target_tokens` (system prompt and
/// tools, as the strategies estimate them for the model each is replayed on); recordings
/// without stand-ins, and stand-ins already that large, are left as they are.
pub(crate) fn pad<'r>(
    recordings: &'r [Recording],
    target_tokens: u64,
    model: Option<&str>,
    counter: &MemoCounter,
) -> Cow<'r, [Recording]> {
    if recordings
        .iter()
        .all(|recording| recording.stand_ins.is_empty())
    {
        return Cow::Borrowed(recordings);
    }
    let padded = recordings
        .iter()
        .map(|recording| {
            let spec = model_spec(model.unwrap_or(&recording.model));
            let mut padded = recording.clone();
            if !recording.stand_ins.is_empty()
                && let Some(padding) = padding(recording, target_tokens, &spec, counter)
            {
                padded.system.push(padding);
            }
            padded
        })
        .collect();
    Cow::Owned(padded)
}

/// The stand-ins of `recordings`, if any used one.
pub(crate) fn measure(
    recordings: &[Recording],
    model: Option<&str>,
    counter: &MemoCounter,
    padded: bool,
) -> Option<StandIn> {
    let sizes: Vec<u64> = recordings
        .iter()
        .filter(|recording| !recording.stand_ins.is_empty())
        .map(|recording| {
            let spec = model_spec(model.unwrap_or(&recording.model));
            size(recording, &recording.system, &spec, counter)
        })
        .collect();
    let count = u64::try_from(sizes.len()).ok().filter(|&count| count > 0)?;
    Some(StandIn {
        recordings: sizes.len(),
        tokens: sizes.iter().sum::<u64>().div_ceil(count),
        padded,
    })
}

/// One line of padding: fixed text with a fixed-width number, so every line counts alike and
/// no two lines are the same.
fn padding_line(index: usize) -> String {
    format!(
        "Stand-in line {index:05}: instructions and tool documentation of the client that the \
         session file does not keep.\n"
    )
}

/// The fewest padding lines that bring the stand-in to `target_tokens`, as one text; `None`
/// when it is that large already.
fn padding(
    recording: &Recording,
    target_tokens: u64,
    spec: &ModelSpec,
    counter: &MemoCounter,
) -> Option<String> {
    if size(recording, &recording.system, spec, counter) >= target_tokens {
        return None;
    }
    let text = |lines: usize| (0..lines).map(padding_line).collect::<String>();
    let reaches = |lines: usize| {
        let mut system = recording.system.clone();
        system.push(text(lines));
        size(recording, &system, spec, counter) >= target_tokens
    };
    // Every line is at least one token, so `target_tokens` lines always reach the target.
    let (mut low, mut high) = (1, usize::try_from(target_tokens).unwrap_or(usize::MAX));
    while low < high {
        let middle = low + (high - low) / 2;
        if reaches(middle) {
            high = middle;
        } else {
            low = middle + 1;
        }
    }
    Some(text(low))
}

/// The stand-in's size with `system` as its system prompt.
fn size(recording: &Recording, system: &[String], spec: &ModelSpec, counter: &MemoCounter) -> u64 {
    let estimate = Estimate::new(counter, spec);
    fixed_tokens(&estimate, spec.wire, system, &recording.tools)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use mc_sim::{O200kCounter, RecordingFormat};

    use super::*;

    fn recording(stand_ins: &[&str]) -> Recording {
        Recording {
            name: "r".into(),
            format: RecordingFormat::ClaudeCode,
            model: "claude-sonnet-4-5".into(),
            system: vec!["You are a coding agent.".into()],
            tools: Vec::new(),
            stand_ins: stand_ins.iter().map(|&name| name.to_owned()).collect(),
            steps: Vec::new(),
        }
    }

    #[test]
    fn pads_stand_ins_to_the_target_with_the_same_bytes_every_time() {
        let counter = MemoCounter::new(Arc::new(O200kCounter::load().unwrap()));
        let recordings = [recording(&["system prompt", "tools"]), recording(&[])];
        let padded = pad(&recordings, 5_000, None, &counter);
        assert_eq!(
            padded[0].system.len(),
            2,
            "one padding block after the prompt"
        );
        assert_eq!(
            padded[1], recordings[1],
            "a recording with its own prompt is kept"
        );
        let measured = measure(&padded, None, &counter, true).unwrap();
        assert_eq!(measured.recordings, 1);
        // At least the target, and by less than one line over it.
        assert!((5_000..5_030).contains(&measured.tokens), "{measured:?}");
        assert_eq!(pad(&recordings, 5_000, None, &counter), padded);
        // A target under the stand-in's own size changes nothing.
        assert_eq!(pad(&recordings, 10, None, &counter)[0], recordings[0]);
        assert_eq!(measure(&recordings[1..], None, &counter, false), None);
    }
}
