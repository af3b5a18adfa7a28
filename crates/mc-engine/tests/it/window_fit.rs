//! The window guarantee on concrete sessions: the learned token correction, protection
//! bounded by tokens, oversized parts, and tool inputs shown as skeletons.

use mc_core::{Message, Part, Role};
use serde_json::json;

use crate::support::{Call, Harness, MODEL, START_MS, rendered_tokens};

/// Drives `messages` one turn (two messages) at a time, reporting as usage what a provider
/// counting `scale` times the engine's estimate would report; returns every outcome.
fn drive_scaled(
    harness: &Harness,
    messages: &[Message],
    usable_window: u64,
    scale: f64,
) -> Vec<mc_engine::PassOutcome> {
    let mut outcomes: Vec<mc_engine::PassOutcome> = Vec::new();
    for end in (1..=messages.len()).step_by(2) {
        let fixed = harness.fixed_tokens.get();
        let reported = outcomes.last().map(|outcome| {
            ((rendered_tokens(&outcome.messages) + fixed) as f64 * scale).round() as u64
        });
        let call = Call {
            model: MODEL,
            messages: &messages[..end],
            now_ms: START_MS + end as u64 * 10_000,
            usable_window,
            last_usage_tokens: reported,
            operator_flush: false,
        };
        let usage_pass = outcomes.last().map(|outcome| outcome.seq);
        outcomes.push(harness.pass_reporting(&call, usage_pass).unwrap());
    }
    outcomes
}

#[test]
fn the_engine_learns_a_provider_that_counts_more_and_keeps_it_across_restarts() {
    let mut harness = Harness::new();
    let messages = large_outputs(12, 8_000);
    let outcomes = drive_scaled(&harness, &messages, 1_000_000, 1.25);
    let last = outcomes.last().unwrap();
    let rendered = rendered_tokens(&last.messages) as f64;
    let predicted = last.estimated_prompt_tokens as f64;
    assert!(
        (predicted / rendered - 1.25).abs() < 0.02,
        "the estimate is planned in the provider's tokens: {predicted} for {rendered} of ours"
    );
    // A restarted engine (same store) plans with what was learned.
    harness.restart();
    let more = large_outputs(13, 8_000);
    let call = Call {
        model: MODEL,
        messages: &more[..more.len() - 1],
        now_ms: START_MS + 1_000_000,
        usable_window: 1_000_000,
        last_usage_tokens: None,
        operator_flush: false,
    };
    let after = harness.pass(&call).unwrap();
    let ratio = after.estimated_prompt_tokens as f64 / rendered_tokens(&after.messages) as f64;
    assert!((ratio - 1.25).abs() < 0.02, "after a restart: {ratio}");
}

/// Twenty large outputs in a row: protected by count, they would outweigh the window.
fn large_outputs(turns: usize, bytes: usize) -> Vec<Message> {
    let mut messages = vec![Message::new(
        Role::User,
        vec![Part::text("Run every suite.")],
    )];
    for turn in 0..turns {
        let id = format!("toolu_{turn}");
        messages.push(Message::new(
            Role::Assistant,
            vec![Part::ToolCall {
                id: id.clone(),
                name: "Bash".into(),
                input: json!({"command": format!("./suite {turn}")}),
            }],
        ));
        let output: String = (0..bytes / 24)
            .map(|line| format!("suite {turn} line {line:>6}\n"))
            .collect();
        messages.push(Message::new(
            Role::User,
            vec![Part::ToolResult {
                call_id: id,
                content: vec![Part::text(output)],
                is_error: false,
            }],
        ));
    }
    messages
}

#[test]
fn twenty_large_protected_outputs_fit_a_small_window_as_excerpts() {
    let harness = Harness::new();
    // 20 outputs of about 3.5K tokens (14K bytes) each against a 36K-token usable window:
    // 70K tokens of protected output.
    let messages = large_outputs(20, 14_000);
    let outcomes = drive_scaled(&harness, &messages, 36_000, 1.0);
    for (index, outcome) in outcomes.iter().enumerate() {
        let tokens = rendered_tokens(&outcome.messages);
        assert!(tokens <= 36_000 * 21 / 20, "call {index}: {tokens} tokens");
    }
    let last = outcomes.last().unwrap();
    let texts: Vec<String> = last
        .messages
        .iter()
        .flat_map(|message| &message.parts)
        .filter_map(|part| match part {
            Part::ToolResult { content, .. } => content.iter().find_map(|inner| match inner {
                Part::Text { text, .. } => Some(text.clone()),
                _ => None,
            }),
            _ => None,
        })
        .collect();
    assert_eq!(texts.len(), 20, "every result keeps its call and its place");
    let excerpts = texts
        .iter()
        .filter(|text| text.contains("§ excerpt: "))
        .count();
    assert!(
        excerpts > 0,
        "protected units past the budget are shown as excerpts"
    );
    assert!(
        texts.iter().all(|text| !text.starts_with("[dropped")),
        "protected units are never dropped to make room"
    );
    // The newest result is whole: it is within the protection budget.
    assert!(!texts.last().unwrap().contains("§ excerpt: "));
}

#[test]
fn a_part_larger_than_the_window_is_an_excerpt_from_its_first_appearance() {
    let harness = Harness::new();
    let paste: String = (0..20_000)
        .map(|line| format!("log line {line:>6}\n"))
        .collect();
    let messages = vec![Message::new(
        Role::User,
        vec![Part::text(format!("Why does this fail?\n{paste}"))],
    )];
    let outcome = harness
        .pass(&Call {
            model: MODEL,
            messages: &messages,
            now_ms: START_MS,
            usable_window: 40_000,
            last_usage_tokens: None,
            operator_flush: false,
        })
        .unwrap();
    let Part::Text { text, .. } = &outcome.messages[2].parts[0] else {
        panic!("the task is text");
    };
    assert!(text.starts_with("§1§ Why does this fail?\nlog line      0\n"));
    assert!(text.contains("[§1§ excerpt: "), "{:.200}", text);
    assert!(text.ends_with("log line  19999\n"));
    assert!(rendered_tokens(&outcome.messages) < 40_000 / 4);
    // The raw log keeps every byte.
    assert_eq!(harness.snapshot().raw_log(), messages);
}

#[test]
fn a_file_written_whole_is_clipped_once_a_later_write_supersedes_it() {
    let harness = Harness::new();
    let content = |version: usize| -> String {
        (0..2_000)
            .map(|line| format!("fn f{line}() {{ {version} }}\n"))
            .collect()
    };
    let mut messages = vec![Message::new(Role::User, vec![Part::text("Write lib.rs.")])];
    for version in 0..30 {
        let id = format!("toolu_{version}");
        messages.push(Message::new(
            Role::Assistant,
            vec![Part::ToolCall {
                id: id.clone(),
                name: "Write".into(),
                input: json!({"file_path": "src/lib.rs", "content": content(version)}),
            }],
        ));
        messages.push(Message::new(
            Role::User,
            vec![Part::ToolResult {
                call_id: id,
                content: vec![Part::text("File written")],
                is_error: false,
            }],
        ));
    }
    let outcomes = drive_scaled(&harness, &messages, 100_000, 1.0);
    let last = outcomes.last().unwrap();
    let inputs: Vec<&serde_json::Value> = last
        .messages
        .iter()
        .flat_map(|message| &message.parts)
        .filter_map(|part| match part {
            Part::ToolCall { input, .. } => Some(input),
            _ => None,
        })
        .collect();
    assert_eq!(inputs.len(), 30, "every call stays, with its result");
    let clipped = inputs
        .iter()
        .filter(|input| {
            input["content"]
                .as_str()
                .is_some_and(|text| text.contains("…[+"))
        })
        .count();
    assert!(clipped > 0, "superseded writes are shown as skeletons");
    assert_eq!(
        inputs.last().unwrap()["content"].as_str(),
        Some(content(29).as_str()),
        "the newest write is whole"
    );
    for input in &inputs {
        assert_eq!(
            input["file_path"], "src/lib.rs",
            "the path survives a skeleton"
        );
    }
}

#[test]
fn a_long_session_under_a_large_fixed_prompt_is_never_refused() {
    let harness = Harness::new();
    // A coding agent's system prompt and tools take most of a small window.
    harness.fixed_tokens.set(18_000);
    let messages = large_outputs(150, 14_000);
    // `drive_scaled` fails on a refusal; every request is inside the window as the provider
    // counts it (1.25 times ours), within the estimate's tolerance.
    let outcomes = drive_scaled(&harness, &messages, 36_000, 1.25);
    for (turn, outcome) in outcomes.iter().enumerate() {
        let provider = (rendered_tokens(&outcome.messages) + 18_000) * 5 / 4;
        assert!(
            provider <= 36_000 * 21 / 20,
            "turn {turn} sent {provider} provider tokens"
        );
    }
}

#[test]
fn a_branch_keeps_what_its_parent_reduced() {
    let harness = Harness::new();
    let messages = large_outputs(30, 2_000);
    let call = |end: usize, flush: bool| Call {
        model: MODEL,
        messages: &messages[..end],
        now_ms: START_MS + end as u64 * 1_000,
        usable_window: 1_000_000,
        last_usage_tokens: None,
        operator_flush: flush,
    };
    harness.pass(&call(59, false)).unwrap();
    // The model asked for §3§ (the second result) to go; a flush lands it.
    harness
        .engine
        .queue_drops(&harness.session, "3", "ctx_reduce", 1)
        .unwrap();
    let parent = harness.pass(&call(61, true)).unwrap();
    assert_eq!(parent.landed, [mc_core::tags::TagNo(3)]);
    // The client edits its latest message: a branch after 60 messages.
    let branch = harness
        .engine
        .fork(&harness.session, 60, START_MS + 100_000)
        .unwrap();
    let mut edited = messages[..60].to_vec();
    edited.push(Message::new(
        Role::User,
        vec![Part::text("Stop; summarise instead.")],
    ));
    let first = harness
        .pass_for(
            &branch,
            &Call {
                messages: &edited,
                ..call(60, false)
            },
        )
        .unwrap();
    assert_eq!(
        first.messages[6].parts,
        [Part::ToolResult {
            call_id: "toolu_1".into(),
            content: vec![Part::text("[dropped §3§: Bash ./suite 1, 83 lines]")],
            is_error: false,
        }],
        "the branch shares the history its parent reduced, and the reduction with it"
    );
}
