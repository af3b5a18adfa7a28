use serde_json::{Value, json};

use super::*;

/// Room for every request of a test session.
pub(super) const TEST_BUDGET_BYTES: usize = 256 << 20;

fn body(messages: &[Value], one_hour_on_system: bool) -> ChunkedBody {
    let mut system = json!({"type": "text", "text": "You are careful."});
    if one_hour_on_system {
        system["cache_control"] = json!({"type": "ephemeral", "ttl": "1h"});
    }
    ChunkedBody::from(
        json!({"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": [system],
            "messages": messages, "stream": true, "metadata": {"user_id": "u"}})
        .to_string()
        .into_bytes(),
    )
}

fn turn(n: usize) -> Vec<Value> {
    vec![
        json!({"role": "assistant", "content": [
            {"type": "text", "text": format!("step {n}")},
            {"type": "tool_use", "id": format!("t{n}"), "name": "Bash", "input": {"command": format!("ls {n}")}}]}),
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": format!("t{n}"), "content": format!("out {n}")}]}),
    ]
}

pub(super) fn assert_same_as_full(decoded: &Decoded, body: &ChunkedBody) {
    let full = full_decode(body, usize::MAX).unwrap();
    assert_eq!(decoded.request, full.request);
    assert_eq!(decoded.conversation, full.conversation);
    assert_eq!(decoded.chain, full.chain);
    assert_eq!(decoded.client_ttl, full.client_ttl);
    if let Some(identity) = decoded.layout.prefix_identity() {
        assert_eq!(identity, full_prefix_identity(&full.request));
    }
}

/// The prefix identity as the pass takes it from a fully decoded request.
pub(super) fn full_prefix_identity(request: &MessagesRequest) -> String {
    let mut request = request.clone();
    anthropic::strip_client_markers(&mut request);
    anthropic::prefix_identity(&request)
}

/// Decodes `body` as the proxy does, checks it against a full decode (the same value, or
/// the same error), and remembers it when it decoded; returns whether it decoded with a
/// remembered head (the incremental path).
pub(super) fn decode_and_remember(recent: &RecentRequests, body: &ChunkedBody) -> bool {
    match (
        recent.decode(body, usize::MAX, None),
        full_decode(body, usize::MAX),
    ) {
        (Ok(decoded), Ok(_)) => {
            assert_same_as_full(&decoded, body);
            let incremental = decoded.layout.head.is_some();
            recent.remember(decoded.layout, decoded.conversation, decoded.chain);
            incremental
        }
        (Err(error), Err(full)) => {
            assert_eq!(error, full);
            false
        }
        (got, full) => panic!(
            "incremental decode {:?} but full decode {:?}",
            got.map(|_| ()),
            full.map(|_| ())
        ),
    }
}

/// `body` with its first U+FFFD (EF BF BD) made invalid UTF-8 (EF BF FF).
fn invalid_utf8(body: &ChunkedBody) -> ChunkedBody {
    let mut bytes = body.to_bytes().to_vec();
    let at = bytes.iter().position(|&b| b == 0xbd).unwrap();
    bytes[at] = 0xff;
    ChunkedBody::from(bytes)
}

fn conversation(turns: usize) -> Vec<Value> {
    let mut messages = vec![json!({"role": "user", "content": "fix the bug"})];
    (0..turns).for_each(|n| messages.extend(turn(n)));
    messages
}

/// `body` with its first `needle` replaced by `with`.
fn edited(body: &ChunkedBody, needle: &str, with: &str) -> ChunkedBody {
    let bytes = body.to_bytes();
    let text = std::str::from_utf8(&bytes).unwrap();
    assert!(text.contains(needle), "{needle} in {text}");
    ChunkedBody::from(text.replacen(needle, with, 1).into_bytes())
}

#[test]
fn follow_ups_decode_as_a_full_decode_does() {
    let recent = RecentRequests::new(TEST_BUDGET_BYTES);
    let mut messages = vec![json!({"role": "user", "content": "fix the bug"})];
    for n in 0..6 {
        messages.extend(turn(n));
        // The client moves its marker to the newest message each turn.
        let mut sent = messages.clone();
        if let Some(last) = sent.last_mut() {
            last["content"][0]["cache_control"] = json!({"type": "ephemeral"});
        }
        let body = body(&sent, false);
        let decoded = recent.decode(&body, usize::MAX, None).unwrap();
        assert_same_as_full(&decoded, &body);
        assert_eq!(decoded.layout.ranges.len(), sent.len());
        recent.remember(decoded.layout, decoded.conversation, decoded.chain);
    }
    // An edit of an early message, and a one-hour marker in the middle.
    let mut edited = messages.clone();
    edited[1]["content"][0]["text"] = json!("another step");
    edited[3]["content"][0]["cache_control"] = json!({"type": "ephemeral", "ttl": "1h"});
    let body = body(&edited, false);
    let decoded = recent.decode(&body, usize::MAX, None).unwrap();
    assert_same_as_full(&decoded, &body);
    assert_eq!(
        decoded.layout.ranges.len(),
        edited.len(),
        "decoded incrementally"
    );
    assert_eq!(decoded.client_ttl, CacheTtlChoice::OneHour);
    let system_hour = self::body(&messages, true);
    let decoded = recent.decode(&system_hour, usize::MAX, None).unwrap();
    assert_same_as_full(&decoded, &system_hour);
    assert_eq!(decoded.client_ttl, CacheTtlChoice::OneHour);
}

#[test]
fn odd_bodies_take_the_full_decode_and_its_errors() {
    let recent = RecentRequests::new(TEST_BUDGET_BYTES);
    let empty = body(&[], false);
    let decoded = recent.decode(&empty, usize::MAX, None).unwrap();
    assert_same_as_full(&decoded, &empty);
    let bad_message = ChunkedBody::from(bytes::Bytes::from_static(
        br#"{"model":"m","max_tokens":1,"messages":[{"role":"robot","content":"x"}]}"#,
    ));
    let error = recent.decode(&bad_message, usize::MAX, None).unwrap_err();
    assert_eq!(error, full_decode(&bad_message, usize::MAX).unwrap_err());
    let syntax = ChunkedBody::from(bytes::Bytes::from_static(
        br#"{"model":"m","messages":[{"role":"user""#,
    ));
    let error = recent.decode(&syntax, usize::MAX, None).unwrap_err();
    assert_eq!(error, full_decode(&syntax, usize::MAX).unwrap_err());
    let spaced = ChunkedBody::from(bytes::Bytes::from_static(
        b"{ \"model\" : \"m\" , \"messages\" : [ {\"role\":\"user\",\"content\":\"hi\"} ] , \"max_tokens\" : 5 }",
    ));
    let decoded = recent.decode(&spaced, usize::MAX, None).unwrap();
    assert_same_as_full(&decoded, &spaced);
    assert_eq!(
        decoded.request.encode(),
        full_decode(&spaced, usize::MAX).unwrap().request.encode()
    );
}

#[test]
fn a_follow_up_extends_the_remembered_layout() {
    let recent = RecentRequests::new(TEST_BUDGET_BYTES);
    let first = body(&conversation(2), false);
    assert!(decode_and_remember(&recent, &first));
    let follow_up = body(&conversation(3), false);
    let remembered = recent.recent.lock().unwrap().back().unwrap().layout.clone();
    let equal = remembered.body().common_prefix_len(&follow_up, 0);
    let (split, shared) = remembered.extend_split(&follow_up, equal).unwrap();
    assert_eq!(split, Split::scan(&follow_up.to_bytes()).unwrap());
    assert_eq!(shared, 5);
    assert!(decode_and_remember(&recent, &follow_up));
    // The same bytes again, and a rewind to fewer messages.
    assert!(decode_and_remember(&recent, &follow_up));
    assert!(decode_and_remember(&recent, &body(&conversation(1), false)));
}

#[test]
fn bytes_after_the_shared_ones_are_checked_as_a_full_decode_would() {
    let recent = RecentRequests::new(TEST_BUDGET_BYTES);
    let base = body(&conversation(2), false);
    assert!(decode_and_remember(&recent, &base));
    let grown = body(&conversation(3), false);
    let cases = [
        // A second `messages` key after the list: the full decode keeps the last one.
        edited(&grown, r#""stream":true"#, r#""stream":true,"messages":[]"#),
        edited(
            &grown,
            r#""stream":true"#,
            r#""stream":true,"messages":[{"role":"user","content":"x"}]"#,
        ),
        // Trailing bytes, a truncated body, a missing comma, a bad value, invalid UTF-8.
        ChunkedBody::from([&grown.to_bytes()[..], b" x"].concat()),
        grown.slice(0..grown.len() - 1).unwrap(),
        edited(
            &grown,
            r#"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2""#,
            r#"}{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2""#,
        ),
        edited(
            &grown,
            r#"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2""#,
            r#"}:{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2""#,
        ),
        edited(&grown, r#"}]}],"#, r#"}]},7],"#),
        edited(&grown, r#"}]}],"#, r#"}]}]]"#),
        edited(&grown, "out 2", "out \u{fffd}"),
        invalid_utf8(&edited(&grown, "out 2", "out \u{fffd}")),
        // Odd whitespace around the new message, a changed model, system or parameter.
        edited(
            &grown,
            r#"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2""#,
            " } ,\n\t{ \"role\" : \"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t2\"",
        ),
        edited(&grown, "claude-sonnet-4-5", "claude-opus-4-5"),
        edited(&grown, "You are careful.", "You are careless."),
        edited(&grown, r#""max_tokens":1024"#, r#""max_tokens":null"#),
        edited(&grown, r#""max_tokens":1024"#, r#""max_tokens":1024 "#),
    ];
    for case in cases {
        decode_and_remember(&recent, &case);
        assert!(decode_and_remember(&recent, &base));
    }
}

#[test]
fn another_conversation_with_the_same_head_reuses_it() {
    let recent = RecentRequests::new(TEST_BUDGET_BYTES);
    assert!(decode_and_remember(&recent, &body(&conversation(2), false)));
    let other = vec![json!({"role": "user", "content": "write the docs"})];
    let other = body(&other, false);
    let decoded = recent.decode(&other, usize::MAX, None).unwrap();
    assert_same_as_full(&decoded, &other);
    let remembered = recent
        .recent
        .lock()
        .unwrap()
        .back()
        .unwrap()
        .layout
        .head
        .clone();
    assert!(Arc::ptr_eq(
        decoded.layout.head.as_ref().unwrap(),
        remembered.as_ref().unwrap()
    ));
}

#[test]
fn remembered_requests_stay_within_their_byte_budget() {
    let budget = 40_000;
    let recent = RecentRequests::new(budget);
    for conversation in 0..12 {
        let mut messages = vec![json!({"role": "user", "content": format!("task {conversation}")})];
        (0..conversation).for_each(|n| messages.extend(turn(n)));
        let body = body(&messages, false);
        let decoded = recent.decode(&body, usize::MAX, None).unwrap();
        recent.remember(decoded.layout, decoded.conversation, decoded.chain);
        let held: usize = recent
            .recent
            .lock()
            .unwrap()
            .iter()
            .map(|entry| entry.held_bytes)
            .sum();
        assert!(held <= budget, "{held} > {budget}");
    }
    // A request larger than the whole budget is not remembered, and decodes all the same.
    let mut long = vec![json!({"role": "user", "content": "x".repeat(budget)})];
    long.extend(turn(0));
    let body = body(&long, false);
    let decoded = recent.decode(&body, usize::MAX, None).unwrap();
    assert_same_as_full(&decoded, &body);
    recent.remember(decoded.layout, decoded.conversation, decoded.chain);
    let kept = recent.recent.lock().unwrap();
    assert!(kept.iter().all(|entry| entry.held_bytes <= budget));
    assert!(!kept.is_empty(), "smaller requests are still remembered");
}

/// A message decoded on its own starts serde_json's nesting count afresh; in the body it
/// sits two levels down. Tool inputs nested up to and past the full decode's limit decode,
/// or are refused, exactly as the full decode does them, on a first request and a follow-up.
#[test]
fn nesting_near_the_parsers_limit_is_judged_as_the_full_decode_does() {
    for depth in 118..=126 {
        let input = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        let deep = |n: usize| {
            let mut messages = conversation(n);
            messages.extend(turn(n));
            let text = body(&messages, false);
            edited(&text, &format!("{{\"command\":\"ls {n}\"}}"), &input)
        };
        let recent = RecentRequests::new(TEST_BUDGET_BYTES);
        decode_and_remember(&recent, &deep(0));
        decode_and_remember(&recent, &body(&conversation(1), false));
        decode_and_remember(&recent, &deep(1));
    }
}
