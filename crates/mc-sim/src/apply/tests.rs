use mc_wire::anthropic::MessagesRequest;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::prompt::{BlockPath, linearise};
use crate::tokens::CountTokens;

const SONNET: &str = "claude-sonnet-4-20250514";
const MINUTE_MS: u64 = 60_000;

/// Counts `~` characters, so a block's size is exactly what the test wrote.
struct Tildes;

impl CountTokens for Tildes {
    fn count_tokens(&self, text: &str) -> u64 {
        text.matches('~').count() as u64
    }
}

/// A text block of `tokens` tokens; `tag` tells equal-sized blocks apart.
fn text(tokens: u64, tag: &str, ttl: Option<Ttl>) -> Value {
    let mut block =
        json!({"type": "text", "text": format!("{tag}{}", "~".repeat(tokens as usize))});
    match ttl {
        None => {}
        Some(Ttl::FiveMinutes) => block["cache_control"] = json!({"type": "ephemeral"}),
        Some(Ttl::OneHour) => block["cache_control"] = json!({"type": "ephemeral", "ttl": "1h"}),
    }
    block
}

fn plain(tokens: u64) -> Value {
    text(tokens, "", None)
}

fn five(tokens: u64) -> Value {
    text(tokens, "", Some(Ttl::FiveMinutes))
}

/// The blocks of a request whose only message is a user turn holding `content`.
fn blocks(model: &str, content: Vec<Value>) -> Vec<PromptBlock> {
    let body = json!({
        "model": model,
        "max_tokens": 16,
        "messages": [{"role": "user", "content": content}],
    });
    let bytes = serde_json::to_vec(&body).unwrap();
    let request = MessagesRequest::decode(&bytes, 1 << 24).unwrap();
    linearise(&request, &Tildes)
}

fn run(state: &mut CacheState, content: Vec<Value>, now_ms: u64) -> CacheUsage {
    apply(state, &blocks(SONNET, content), SONNET, now_ms).unwrap()
}

fn usage(input: u64, write_5m: u64, write_1h: u64, read: u64) -> CacheUsage {
    CacheUsage {
        input_tokens: input,
        cache_creation_input_tokens: write_5m + write_1h,
        cache_creation_5m: write_5m,
        cache_creation_1h: write_1h,
        cache_read_input_tokens: read,
        prompt_tokens: input + write_5m + write_1h + read,
    }
}

#[test]
fn five_breakpoints_are_rejected_like_the_provider() {
    let mut state = CacheState::new();
    let request = blocks(SONNET, (0..5).map(|_| five(300)).collect());
    let error = apply(&mut state, &request, SONNET, 0).unwrap_err();
    assert_eq!(error, CacheError::TooManyBreakpoints { found: 5 });
    assert_eq!(
        error.to_body(),
        json!({"type": "error", "error": {
            "type": "invalid_request_error",
            "message": "A maximum of 4 blocks with cache_control may be provided. Found 5.",
        }})
    );
    assert_eq!(error.status(), 400);
    assert!(state.is_empty());
}

#[test]
fn four_breakpoints_are_accepted() {
    let mut state = CacheState::new();
    let found = run(&mut state, (0..4).map(|_| five(300)).collect(), 0);
    // 300 and 600 are below the minimum; 900 too; 1,200 is written.
    assert_eq!(found, usage(0, 1_200, 0, 0));
    assert_eq!(state.len(), 1);
}

#[test]
fn one_hour_after_five_minutes_is_rejected() {
    let mut state = CacheState::new();
    let content = vec![five(2_000), text(100, "", Some(Ttl::OneHour))];
    let error = apply(&mut state, &blocks(SONNET, content), SONNET, 0).unwrap_err();
    let path = BlockPath::Message {
        message: 0,
        block: Some(1),
    };
    assert_eq!(error, CacheError::TtlOrder { path });
    assert_eq!(
        error.to_string(),
        "messages.0.content.1.cache_control.ttl: a ttl='1h' cache_control block must not come \
         after a ttl='5m' cache_control block. Note that blocks are processed in the following \
         order: `tools`, `system`, `messages`."
    );
    assert!(state.is_empty());

    let content = vec![text(2_000, "", Some(Ttl::OneHour)), five(100)];
    assert_eq!(run(&mut state, content, 0), usage(0, 100, 2_000, 0));
}

/// The first request caches a 2,000-token block; the second ends `gap` small blocks later
/// with its only breakpoint on the last one.
fn lookback(gap: usize) -> CacheUsage {
    let mut state = CacheState::new();
    assert_eq!(run(&mut state, vec![five(2_000)], 0), usage(0, 2_000, 0, 0));
    let mut content = vec![plain(2_000)];
    content.extend((1..gap).map(|_| plain(10)));
    content.push(five(10));
    run(&mut state, content, MINUTE_MS)
}

#[test]
fn lookback_reaches_twenty_blocks_back() {
    assert_eq!(lookback(20), usage(0, 200, 0, 2_000));
}

#[test]
fn lookback_stops_at_twenty_one_blocks_back() {
    assert_eq!(lookback(21), usage(0, 2_210, 0, 0));
}

#[test]
fn entry_expires_at_exactly_five_minutes() {
    let mut state = CacheState::new();
    run(&mut state, vec![five(2_000)], 0);
    let mut before = state.clone();
    assert_eq!(
        run(&mut before, vec![five(2_000)], 5 * MINUTE_MS - 1),
        usage(0, 0, 0, 2_000)
    );
    assert_eq!(
        run(&mut state, vec![five(2_000)], 5 * MINUTE_MS),
        usage(0, 2_000, 0, 0)
    );
}

#[test]
fn hit_restarts_the_lifetime() {
    let mut state = CacheState::new();
    run(&mut state, vec![five(2_000)], 0);
    // A hit through the lookback, not at the breakpoint itself, refreshes the entry too.
    assert_eq!(
        run(&mut state, vec![plain(2_000), five(50)], 4 * MINUTE_MS),
        usage(0, 50, 0, 2_000)
    );
    let prefix = blocks(SONNET, vec![plain(2_000)])[0].prefix;
    assert_eq!(
        state.expires_at_ms(&prefix, 4 * MINUTE_MS),
        Some(9 * MINUTE_MS)
    );

    let mut before = state.clone();
    assert_eq!(
        run(&mut before, vec![five(2_000)], 9 * MINUTE_MS - 1),
        usage(0, 0, 0, 2_000)
    );
    assert_eq!(
        run(&mut state, vec![five(2_000)], 9 * MINUTE_MS),
        usage(0, 2_000, 0, 0)
    );
}

#[test]
fn evict_expired_drops_only_dead_entries() {
    let mut state = CacheState::new();
    run(&mut state, vec![five(2_000)], 0);
    run(&mut state, vec![text(3_000, "b", Some(Ttl::OneHour))], 0);
    state.evict_expired(5 * MINUTE_MS - 1);
    assert_eq!(state.len(), 2);
    state.evict_expired(5 * MINUTE_MS);
    assert_eq!(state.len(), 1);
}

#[test]
fn prefix_below_the_minimum_is_not_cached() {
    let mut state = CacheState::new();
    assert_eq!(run(&mut state, vec![five(1_023)], 0), usage(1_023, 0, 0, 0));
    assert!(state.is_empty());
    assert_eq!(run(&mut state, vec![five(1_024)], 0), usage(0, 1_024, 0, 0));

    let haiku = "claude-haiku-4-5-20251001";
    let mut state = CacheState::new();
    let request = blocks(haiku, vec![five(3_000)]);
    assert_eq!(
        apply(&mut state, &request, haiku, 0).unwrap(),
        usage(3_000, 0, 0, 0)
    );
    assert!(state.is_empty());
}

#[test]
fn changed_early_block_busts_every_later_prefix() {
    let content = |first: &str, second: &str| {
        vec![
            text(1_500, first, Some(Ttl::FiveMinutes)),
            text(100, second, None),
            five(100),
        ]
    };
    let mut state = CacheState::new();
    assert_eq!(run(&mut state, content("a", "b"), 0), usage(0, 1_700, 0, 0));
    let mut changed_first = state.clone();
    assert_eq!(
        run(&mut changed_first, content("A", "b"), MINUTE_MS),
        usage(0, 1_700, 0, 0)
    );
    assert_eq!(
        run(&mut state, content("a", "B"), MINUTE_MS),
        usage(0, 200, 0, 1_500)
    );
}

#[test]
fn cache_control_does_not_change_the_prefix() {
    let mut state = CacheState::new();
    run(&mut state, vec![plain(1_500), five(100)], 0);
    // The marker moved from the second block to the third: the old prefix still hits.
    assert_eq!(
        run(
            &mut state,
            vec![plain(1_500), plain(100), five(30)],
            MINUTE_MS
        ),
        usage(0, 30, 0, 1_600)
    );
}

#[test]
fn write_splits_by_the_ttl_covering_each_span() {
    let mut state = CacheState::new();
    let first = vec![text(2_000, "", Some(Ttl::OneHour)), five(500), plain(30)];
    assert_eq!(run(&mut state, first, 0), usage(30, 500, 2_000, 0));
    // Six minutes on, the 5m entry is gone but the 1h one hits, and the span after it is
    // written again under its own breakpoint's TTL.
    let second = vec![
        text(2_000, "", Some(Ttl::OneHour)),
        plain(500),
        plain(30),
        five(40),
    ];
    assert_eq!(
        run(&mut state, second, 6 * MINUTE_MS),
        usage(0, 570, 0, 2_000)
    );
}

#[test]
fn below_minimum_span_is_billed_to_the_next_written_breakpoint() {
    let mut state = CacheState::new();
    let content = vec![text(500, "", Some(Ttl::OneHour)), five(1_000)];
    assert_eq!(run(&mut state, content, 0), usage(0, 1_500, 0, 0));
}

proptest! {
    #[test]
    fn usage_adds_up(
        requests in prop::collection::vec(
            (prop::collection::vec((0u64..900, 0u8..8), 1..30), 0u64..10 * MINUTE_MS),
            1..8,
        ),
    ) {
        let mut state = CacheState::new();
        let mut now_ms = 0;
        for (spec, step_ms) in requests {
            now_ms += step_ms;
            // Marker codes 0 and 1 put a breakpoint (1h, 5m); the rest leave the block plain.
            let content: Vec<Value> = spec
                .iter()
                .map(|&(tokens, marker)| match marker {
                    0 => text(tokens, "", Some(Ttl::OneHour)),
                    1 => five(tokens),
                    _ => plain(tokens),
                })
                .collect();
            let request = blocks(SONNET, content);
            let Ok(found) = apply(&mut state, &request, SONNET, now_ms) else {
                continue;
            };
            let total: u64 = spec.iter().map(|&(tokens, _)| tokens).sum();
            prop_assert_eq!(found.prompt_tokens, total);
            prop_assert_eq!(
                found.input_tokens + found.cache_creation_input_tokens + found.cache_read_input_tokens,
                total
            );
            prop_assert_eq!(found.cache_creation_5m + found.cache_creation_1h, found.cache_creation_input_tokens);
        }
    }
}
