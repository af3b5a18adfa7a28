//! The shared Claude Code capture loads to the 17 calls of its main agent.

use std::sync::Arc;

use mc_core::Role;
use mc_sim::recording::{self, RecordedUsage, RecordingFormat};

use crate::recording_data;

fn capture_path() -> std::path::PathBuf {
    recording_data::dir().join("anthropic-capture/claude-code-traffic.jsonl")
}

/// `(input, cache_creation, cache_read, output)` of each main call, read off the capture's
/// SSE streams (`message_start` usage; output from the final `message_delta`).
const RECORDED: [(u64, u64, u64, u64); 17] = [
    (4, 15_032, 0, 174),
    (6, 304, 15_032, 70),
    (5, 216, 15_336, 94),
    (6, 119, 15_552, 115),
    (4, 280, 15_671, 2_425),
    (4, 2_467, 15_951, 113),
    (3, 275, 18_418, 122),
    (0, 173, 18_693, 87),
    (2, 229, 18_866, 1_083),
    (2, 2_014, 19_095, 1_538),
    (2, 2_849, 21_109, 628),
    (2, 916, 23_958, 87),
    (1, 231, 24_874, 66),
    (3, 12_072, 0, 1_206), // the compaction call: its own system prompt and tools
    (4, 8_284, 13_515, 99),
    (8, 122, 21_799, 7),
    (4, 15, 21_921, 6),
];

#[test]
fn capture_loads_the_main_agent_calls_with_their_usage() {
    let recordings = recording::load(&capture_path(), None).unwrap();
    let [recording] = recordings.try_into().unwrap();
    assert_eq!(recording.name, "claude-code-traffic");
    assert_eq!(recording.format, RecordingFormat::AnthropicCapture);
    assert_eq!(recording.model, "claude-sonnet-4-20250514");
    assert!(recording.stand_ins.is_empty());
    let system_chars: Vec<usize> = recording.system.iter().map(String::len).collect();
    assert_eq!(system_chars, [57, 14_038]);
    assert_eq!(recording.tools.len(), 17);
    assert_eq!(recording.tools[1].name, "Bash");
    assert_eq!(recording.tools[1].input_schema["required"][0], "command");
    assert_eq!(recording.steps.len(), 17);

    let usage: Vec<(u64, u64, u64, u64)> = recording
        .steps
        .iter()
        .map(|step| {
            let recorded = step.recorded.unwrap();
            assert_eq!(
                recorded.prompt_tokens,
                recorded.input.unwrap()
                    + recorded.cache_write.unwrap()
                    + recorded.cache_read.unwrap()
            );
            (
                recorded.input.unwrap(),
                recorded.cache_write.unwrap(),
                recorded.cache_read.unwrap(),
                step.output_tokens.unwrap(),
            )
        })
        .collect();
    assert_eq!(usage, RECORDED);
    assert_eq!(
        recording.steps[0].recorded,
        Some(RecordedUsage {
            prompt_tokens: 15_036,
            cache_read: Some(0),
            cache_write: Some(15_032),
            input: Some(4),
        })
    );

    let lens: Vec<usize> = recording.steps.iter().map(|step| step.len).collect();
    assert_eq!(
        lens,
        [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 1, 3, 5]
    );
    // The history grows by appending until the compaction call, which Claude Code sends
    // with a rewritten first message (the CLAUDE.md reminder block left out); the fresh
    // history after it is a third one. Each rewrite starts a new shared history.
    for pair in recording.steps.windows(2) {
        let extends = pair[1]
            .request_messages()
            .starts_with(pair[0].request_messages());
        assert_eq!(Arc::ptr_eq(&pair[0].messages, &pair[1].messages), extends);
    }
    let history_starts: Vec<usize> = (0..17)
        .filter(|&index| {
            index == 0
                || !Arc::ptr_eq(
                    &recording.steps[index - 1].messages,
                    &recording.steps[index].messages,
                )
        })
        .collect();
    assert_eq!(history_starts, [0, 13, 14]);

    let times: Vec<u64> = recording.steps.iter().map(|step| step.at_ms).collect();
    assert_eq!(times[0], 0);
    assert!(times.windows(2).all(|pair| pair[0] <= pair[1]), "{times:?}");
    assert_eq!(times[16], 194_870);
    for step in &recording.steps {
        assert_eq!(step.response.role, Role::Assistant);
        assert!(!step.response.parts.is_empty());
    }
}

#[test]
fn explicit_format_loads_the_same_recording() {
    let detected = recording::load(&capture_path(), None).unwrap();
    let explicit =
        recording::load(&capture_path(), Some(RecordingFormat::AnthropicCapture)).unwrap();
    assert_eq!(detected, explicit);
}
