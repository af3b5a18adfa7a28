//! Planning one pass of a 200K-token session: the bust permission, the reclaim lanes over
//! the whole session (from scratch, and as a pass plans them: with the session's kept
//! fingerprint index, one new turn since the last pass), and rendering the tagged tail,
//! against a baseline from the same run (serialising the same conversation once with
//! serde_json, which every upstream request costs anyway). Read the ratios, not the absolute
//! times.

use std::collections::BTreeSet;

use divan::{Bencher, black_box};
use mc_core::config::{CacheTtl, HistoryConfig, PassConfig, Tokens};
use mc_core::pass_plan::{PassInputs, PendingWork, plan_pass};
use mc_core::reclaim::{
    FingerprintIndex, ReclaimConfig, ReclaimInputs, plan_reclaim, plan_reclaim_with,
};
use mc_core::reduction::{DropState, Reshape, render_tail};
use mc_core::tags::{TagIndex, TagNo, assign_tags};
use mc_core::{Message, Part, Role};
use serde_json::json;

fn main() {
    divan::main();
}

/// Tokens are estimated as bytes / 4 throughout.
fn estimate(part: &Part) -> u64 {
    match part {
        Part::Text { text, .. } => text.len() as u64 / 4,
        Part::ToolResult { content, .. } => content.iter().map(estimate).sum(),
        other => serde_json::to_string(other).map_or(0, |text| text.len() as u64 / 4),
    }
}

/// A coding-agent session of about 200K tokens: tool loops over files and commands.
fn session() -> Vec<Message> {
    let mut messages = vec![Message::new(
        Role::User,
        vec![Part::text("Fix the failing parser test.")],
    )];
    let mut turn = 0;
    while messages
        .iter()
        .flat_map(|m| &m.parts)
        .map(estimate)
        .sum::<u64>()
        < 200_000
    {
        let id = format!("toolu_{turn}");
        let (name, input) = if turn % 3 == 0 {
            (
                "Read",
                json!({"file_path": format!("src/module_{}.rs", turn % 17)}),
            )
        } else {
            (
                "Bash",
                json!({"command": format!("cargo test -p crate_{} 2>&1 | tail -40", turn % 5)}),
            )
        };
        messages.push(Message::new(
            Role::Assistant,
            vec![
                Part::text(format!(
                    "Step {turn}: checking the next piece of the parser."
                )),
                Part::ToolCall {
                    id: id.clone(),
                    name: name.into(),
                    input,
                },
            ],
        ));
        let output =
            format!("line {turn} of output: fn parse(input: &str) -> Result<Ast, Error>\n")
                .repeat(40);
        messages.push(Message::new(
            Role::User,
            vec![Part::ToolResult {
                call_id: id,
                content: vec![Part::text(output)],
                is_error: turn % 11 == 0,
            }],
        ));
        turn += 1;
    }
    messages
}

/// The messages with their ordinals, as a tail is passed around.
fn with_ordinals(messages: &[Message]) -> Vec<(u64, &Message)> {
    (0u64..).zip(messages).collect()
}

fn tags_of(messages: &[Message]) -> TagIndex {
    let mut next = TagNo(1);
    let mut all = Vec::new();
    for (ordinal, message) in messages.iter().enumerate() {
        let assigned = assign_tags(next, ordinal as u64, message);
        if let Some(last) = assigned.last() {
            next = TagNo(last.tag.0 + 1);
        }
        all.extend(assigned);
    }
    TagIndex::new(all)
}

#[divan::bench]
fn plan_pass_alone(bencher: Bencher) {
    let inputs = PassInputs {
        now_ms: 10_000_000,
        last_call_ms: Some(9_940_000),
        last_usage_tokens: Tokens(200_000),
        usable_window: Some(Tokens(280_000)),
        ttl: CacheTtl::FiveMinutes,
        head_rendered: true,
        pending: PendingWork {
            queued_drop_tokens: Tokens(30_000),
            ..PendingWork::default()
        },
        prompt_tokens_estimate: Tokens(201_000),
        prefix_tokens_estimate: Tokens(190_000),
        ..PassInputs::default()
    };
    let (pass, history) = (PassConfig::default(), HistoryConfig::default());
    bencher.bench(|| plan_pass(black_box(&inputs), &pass, &history, "claude-sonnet-4-5").kind);
}

#[divan::bench]
fn reclaim_lanes(bencher: Bencher) {
    let messages = session();
    let tags = tags_of(&messages);
    let drops = DropState::default();
    let indexed = with_ordinals(&messages);
    let config = ReclaimConfig::default();
    bencher.bench(|| {
        let inputs = ReclaimInputs {
            messages: black_box(&indexed),
            tags: &tags,
            drops: &drops,
            newest_ordinal: indexed.len() as u64 - 1,
            token_estimate: &estimate,
            emergency: false,
        };
        plan_reclaim(&inputs, &config).len()
    });
}

#[divan::bench]
fn reclaim_lanes_kept_index(bencher: Bencher) {
    let messages = session();
    let tags = tags_of(&messages);
    let drops = DropState::default();
    let indexed = with_ordinals(&messages);
    let config = ReclaimConfig::default();
    let inputs = |newest_ordinal: u64| ReclaimInputs {
        messages: black_box(&indexed),
        tags: &tags,
        drops: &drops,
        newest_ordinal,
        token_estimate: &estimate,
        emergency: false,
    };
    let newest = indexed.len() as u64 - 1;
    // The index as the previous pass left it: everything but the newest call and result.
    let mut previous = FingerprintIndex::new(&config);
    plan_reclaim_with(&inputs(newest - 2), &config, &mut previous);
    let expected = plan_reclaim(&inputs(newest), &config);
    assert_eq!(
        plan_reclaim_with(&inputs(newest), &config, &mut previous.clone()),
        expected
    );
    bencher
        .with_inputs(|| previous.clone())
        .bench_local_refs(|index| plan_reclaim_with(&inputs(newest), &config, index).len());
}

#[divan::bench]
fn render_tail_with_drops(bencher: Bencher) {
    let messages = session();
    let tags = tags_of(&messages);
    let indexed = with_ordinals(&messages);
    let landed: BTreeSet<TagNo> = (1..tags.next_tag().0)
        .step_by(3)
        .map(TagNo)
        .take(200)
        .collect();
    bencher
        .bench(|| render_tail(black_box(&indexed), &tags, &landed, 20, &Reshape::default()).len());
}

#[divan::bench]
fn baseline_serialise_session(bencher: Bencher) {
    let messages = session();
    bencher.bench(|| serde_json::to_vec(black_box(&messages)).map_or(0, |bytes| bytes.len()));
}
