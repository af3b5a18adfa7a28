use serde_json::{Value, json};

use super::*;

const MINUTE_MS: u64 = 60_000;

/// Counts `~` characters, so a message's size is exactly what the test wrote.
struct Tildes;

impl CountTokens for Tildes {
    fn count_tokens(&self, text: &str) -> u64 {
        text.matches('~').count() as u64
    }
}

/// A user message of `tokens` tokens; `tag` tells equal-sized messages apart.
fn user(tokens: u64, tag: &str) -> Value {
    json!({"role": "user", "content": format!("{tag}{}", "~".repeat(tokens as usize))})
}

fn prompt_with(model: &str, extra: Value, messages: Vec<Value>) -> ChatPrompt {
    let mut body = json!({"model": model, "messages": messages});
    if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
        body.extend(extra);
    }
    let bytes = serde_json::to_vec(&body).unwrap();
    let request = ChatRequest::decode(&bytes, 1 << 24).unwrap();
    linearise_chat(&request, &Tildes, Calibration::IDENTITY)
}

fn prompt(messages: Vec<Value>) -> ChatPrompt {
    prompt_with("gpt-4o", json!({}), messages)
}

#[test]
fn segments_count_content_tool_calls_and_template() {
    let body = json!({
        "model": "gpt-4o",
        "tools": [{"type": "function", "function": {"name": "~~", "parameters": {}}}],
        "messages": [
            {"role": "system", "content": "~~~"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "~", "arguments": "{\"a\":\"~~\"}"}}]},
            {"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "~~~~"}]},
        ],
    });
    let request = ChatRequest::decode(&serde_json::to_vec(&body).unwrap(), 1 << 20).unwrap();
    let prompt = linearise_chat(&request, &Tildes, Calibration::OPENAI);
    let tokens: Vec<u64> = prompt.segments.iter().map(|s| s.tokens).collect();
    // Tools carry no per-message template; each message carries 3; the reply's priming 3.
    assert_eq!(tokens, vec![2, 3 + 3, 3 + 3, 4 + 3]);
    assert_eq!(prompt.reply_tokens, 3);
    assert_eq!(prompt.prompt_tokens(), 2 + 6 + 6 + 7 + 3);
}

#[test]
fn below_1024_tokens_nothing_is_cached() {
    let mut cache = OpenAiCache::new();
    let small = prompt(vec![user(1_000, "a")]);
    assert_eq!(cache.apply(&small, 0), 0);
    assert_eq!(cache.apply(&small, 1_000), 0);
    assert!(
        cache.is_empty(),
        "a prefix under the minimum is never stored"
    );
    // Exactly 1,024 is the first cacheable length.
    let edge = prompt(vec![user(1_024, "b")]);
    assert_eq!(cache.apply(&edge, 2_000), 0);
    assert_eq!(cache.apply(&edge, 3_000), 1_024);
}

#[test]
fn cached_tokens_round_down_to_128() {
    let mut cache = OpenAiCache::new();
    let first = prompt(vec![user(1_500, "a"), user(700, "b")]);
    assert_eq!(cache.apply(&first, 0), 0, "a cold cache reuses nothing");
    // The same prompt again: 2,200 tokens stored, 17 full steps reused.
    assert_eq!(cache.apply(&first, MINUTE_MS), 2_176);
    // The next turn extends it: the match ends at the old last message, 2,200 → 2,176.
    let next = prompt(vec![user(1_500, "a"), user(700, "b"), user(300, "c")]);
    assert_eq!(cache.apply(&next, 2 * MINUTE_MS), 2_176);
    assert_eq!(
        cache.cached_tokens(&next, 3 * MINUTE_MS),
        2_432,
        "2,500 → 2,432"
    );
}

#[test]
fn a_changed_message_ends_the_match_at_the_boundary_before_it() {
    let mut cache = OpenAiCache::new();
    cache.apply(&prompt(vec![user(1_500, "a"), user(700, "b")]), 0);
    let edited = prompt(vec![user(1_500, "a"), user(700, "B"), user(300, "c")]);
    assert_eq!(
        cache.cached_tokens(&edited, MINUTE_MS),
        1_408,
        "1,500 → 1,408"
    );
    let short_first = prompt(vec![user(900, "a"), user(700, "b")]);
    assert_eq!(cache.cached_tokens(&short_first, MINUTE_MS), 0);
}

#[test]
fn entries_expire_after_ten_idle_minutes() {
    let mut cache = OpenAiCache::new();
    let request = prompt(vec![user(2_048, "a")]);
    cache.apply(&request, 0);
    assert_eq!(cache.cached_tokens(&request, 10 * MINUTE_MS - 1), 2_048);
    assert_eq!(cache.cached_tokens(&request, 10 * MINUTE_MS), 0);
    // A use restarts the idle clock.
    assert_eq!(cache.apply(&request, 9 * MINUTE_MS), 2_048);
    assert_eq!(cache.cached_tokens(&request, 18 * MINUTE_MS), 2_048);
    assert_eq!(cache.cached_tokens(&request, 19 * MINUTE_MS), 0);
    cache.evict_expired(19 * MINUTE_MS);
    assert!(cache.is_empty());
}

#[test]
fn entries_expire_an_hour_after_their_write_however_used() {
    let mut cache = OpenAiCache::new();
    let request = prompt(vec![user(2_048, "a")]);
    assert_eq!(cache.apply(&request, 0), 0);
    let hits: Vec<u64> = (1..=12)
        .map(|step| cache.apply(&request, step * 5 * MINUTE_MS))
        .collect();
    // Hits every 5 minutes until the hour is up; at 60 minutes it misses and is rewritten.
    let mut expected = vec![2_048; 11];
    expected.push(0);
    assert_eq!(hits, expected);
    assert_eq!(cache.apply(&request, 65 * MINUTE_MS), 2_048);
}

#[test]
fn caches_are_per_model_and_prompt_cache_key() {
    let mut cache = OpenAiCache::new();
    let messages = || vec![user(2_048, "a")];
    cache.apply(&prompt(messages()), 0);
    let other_model = prompt_with("gpt-5", json!({}), messages());
    let keyed = prompt_with("gpt-4o", json!({"prompt_cache_key": "s1"}), messages());
    assert_eq!(cache.cached_tokens(&prompt(messages()), 1), 2_048);
    assert_eq!(cache.cached_tokens(&other_model, 1), 0);
    assert_eq!(cache.cached_tokens(&keyed, 1), 0);
    cache.apply(&keyed, 2);
    assert_eq!(cache.cached_tokens(&keyed, 3), 2_048);
}
