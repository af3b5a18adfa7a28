//! Images and documents reach the provider as sent, counted as the provider counts them
//! (issue 27): a retina screenshot is about 1,600 tokens, not the two million its base64
//! would be as text, so a request carrying ten of them at a 64K window is sent, not refused.
//! Headers that lie, base64 that does not decode and unknown types are counted at the
//! provider's cap and forwarded untouched.

use axum::http::Method;
use serde_json::{Value, json};

use crate::support::{MODEL, Proxy, send, settings, sim, tap};

/// The window every test here runs at: small enough that one screenshot counted as text
/// would overflow it thirty times.
const WINDOW: u64 = 64_000;

/// Standard padded base64.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            out.push(if i <= chunk.len() {
                char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize])
            } else {
                '='
            });
        }
    }
    out
}

/// A PNG of `width`×`height` whose pixel data is `bytes` of noise (seeded by `seed`), the
/// size a retina screenshot is.
fn png(width: u32, height: u32, bytes: usize, seed: u32) -> Vec<u8> {
    let mut png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    png.extend_from_slice(&width.to_be_bytes());
    png.extend_from_slice(&height.to_be_bytes());
    png.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    png.extend_from_slice(&u32::try_from(bytes).unwrap().to_be_bytes());
    png.extend_from_slice(b"IDAT");
    let mut state = seed | 1;
    png.extend((0..bytes).map(|_| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state.to_le_bytes()[0]
    }));
    png.extend_from_slice(b"\0\0\0\0\0\0\0\0IEND\xae\x42\x60\x82");
    png
}

fn image(media_type: &str, data: String) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
}

async fn post_messages(proxy: &Proxy, body: &Value) -> crate::support::Reply {
    send(
        Method::POST,
        &proxy.url("/v1/messages"),
        &[
            ("content-type", "application/json"),
            ("x-api-key", "sk-ant-media"),
        ],
        body.to_string(),
    )
    .await
}

async fn proxy_at_window(upstream: &str) -> Proxy {
    let mut settings = settings(upstream);
    settings.context_window = Some(WINDOW);
    Proxy::start_with(settings).await
}

/// The image blocks of every message of `request`, tool results included, in order.
fn images(request: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for message in request["messages"].as_array().unwrap() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "image" {
                out.push(block.clone());
            }
            for inner in block["content"].as_array().into_iter().flatten() {
                if inner["type"] == "image" {
                    out.push(inner.clone());
                }
            }
        }
    }
    out
}

#[tokio::test]
async fn ten_two_megabyte_screenshots_at_a_64k_window_are_sent_not_refused() {
    let script = json!({"turns": [{"content": [{"type": "text", "text": "The button overlaps the header."}]}]});
    let sim = sim(&script, Some(WINDOW)).await;
    let (upstream, _) = tap(sim.local_addr()).await;
    let proxy = proxy_at_window(&upstream.url()).await;
    let mut content: Vec<Value> = (0..10)
        .map(|n| image("image/png", base64(&png(2_880, 1_800, 2_000_000, n + 1))))
        .collect();
    content.push(json!({"type": "text", "text": "Why does the layout break on these pages?"}));
    let body = json!({
        "model": MODEL,
        "max_tokens": 1024,
        "system": "You are a careful frontend engineer.",
        "messages": [{"role": "user", "content": content}],
    });
    assert!(body.to_string().len() > 26_000_000);

    let reply = post_messages(&proxy, &body).await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        &reply.text()[..reply.text().len().min(600)]
    );
    let ledger = sim.ledger();
    assert_eq!(ledger.len(), 1, "sent once, no overflow and retry");
    assert_eq!(ledger[0].status, 200);
    // Anthropic's rule: 2880×1800 scales to about 1,381×863, 1,590 tokens each.
    let rule = 10 * 1_590;
    assert!(
        (rule..rule + 500).contains(&ledger[0].prompt_tokens),
        "{}",
        ledger[0].prompt_tokens
    );
    // Every image went up byte for byte, in order.
    let seen = upstream.seen();
    assert!(
        images(&seen[0].json()) == images(&body),
        "the images changed"
    );
    // Recorded as one clean call: no overflow, no retry.
    let session = &proxy.session_ids()[0];
    let calls = proxy.calls(session, 1).await;
    assert_eq!(calls[0].prompt_tokens(), Some(ledger[0].prompt_tokens));
    assert!(!calls[0].overflow_retry);
}

#[tokio::test]
async fn lying_broken_and_unknown_images_are_counted_at_the_cap_and_forwarded_as_sent() {
    let script = json!({"turns": [{"content": [{"type": "text", "text": "Seen."}]}]});
    let sim = sim(&script, Some(WINDOW)).await;
    let (upstream, _) = tap(sim.local_addr()).await;
    let proxy = proxy_at_window(&upstream.url()).await;
    let lying = base64(&png(100_000, 100_000, 1_500_000, 7));
    let mut truncated = base64(&png(1_280, 720, 0, 1));
    truncated.truncate(20);
    let content = json!([
        image("image/png", lying),
        image("image/png", format!("{}%%%% not base64 %%%%", "A".repeat(1_000_000))),
        image("image/png", truncated),
        image("image/heic", base64(&[7_u8; 900_000])),
        {"type": "image", "source": {"type": "url", "url": "https://example.com/screenshot.png"}},
        {"type": "text", "text": "What do these show?"},
    ]);
    let body = json!({
        "model": MODEL,
        "max_tokens": 512,
        "messages": [{"role": "user", "content": content}],
    });
    let reply = post_messages(&proxy, &body).await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        &reply.text()[..reply.text().len().min(600)]
    );
    let seen = upstream.seen();
    assert_eq!(seen.len(), 1);
    assert!(
        images(&seen[0].json()) == images(&body),
        "the images changed"
    );
}

#[tokio::test]
async fn chat_screenshots_are_counted_by_tiles_and_sent() {
    let sim = sim(
        &json!({"turns": [{"content": [{"type": "text", "text": "ok"}]}]}),
        Some(WINDOW),
    )
    .await;
    let (upstream, _) = tap(sim.local_addr()).await;
    let proxy = proxy_at_window(&upstream.url()).await;
    let mut content: Vec<Value> = (0..10)
        .map(|n| {
            let url = format!(
                "data:image/png;base64,{}",
                base64(&png(2_880, 1_800, 2_000_000, n + 11))
            );
            json!({"type": "image_url", "image_url": {"url": url, "detail": "high"}})
        })
        .collect();
    content.push(json!({"type": "text", "text": "Compare these."}));
    let body = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": content}]});
    let reply = send(
        Method::POST,
        &proxy.url("/v1/chat/completions"),
        &[("content-type", "application/json")],
        body.to_string(),
    )
    .await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        &reply.text()[..reply.text().len().min(600)]
    );
    let ledger = sim.ledger();
    assert_eq!(ledger.len(), 1);
    // OpenAI's tiles: 2880×1800 fits 2048 as 2048×1280, then 1229×768: 3×2 tiles, 1,105.
    let rule = 10 * 1_105;
    assert!(
        (rule..rule + 500).contains(&ledger[0].prompt_tokens),
        "{}",
        ledger[0].prompt_tokens
    );
    // The screenshots went up as sent (after the engine's head messages); compared
    // without printing megabytes on failure.
    let sent = upstream.seen()[0].json();
    let last = sent["messages"].as_array().unwrap().last().unwrap().clone();
    let image_parts = |content: &Value| -> Vec<Value> {
        let parts = content.as_array().unwrap().iter();
        parts
            .filter(|part| part["type"] == "image_url")
            .cloned()
            .collect()
    };
    let sent_images = image_parts(&last["content"]);
    assert_eq!(sent_images.len(), 10);
    assert!(
        sent_images == image_parts(&body["messages"][0]["content"]),
        "the images changed"
    );
}

/// Turn `turn` of a frontend session: a tool call and a few KB of distinct output.
fn read_turn(turn: usize) -> [Value; 2] {
    let id = format!("toolu_read_{turn}");
    let output: String = (0..60)
        .map(|line| format!("{turn}:{line} <div class=\"card-{turn}-{line}\">{line}</div>\n"))
        .collect();
    [
        json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": id, "name": "Read", "input": {"path": format!("src/c{turn}.tsx")}}]}),
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": output}]}),
    ]
}

#[tokio::test]
async fn a_stale_screenshot_is_dropped_whole_with_a_placeholder_and_the_newest_kept() {
    let script = json!({"turns": [{"repeat": 200, "content": [{"type": "text", "text": "ok"}]}]});
    let sim = sim(&script, Some(24_000)).await;
    let (upstream, _) = tap(sim.local_addr()).await;
    let mut settings = settings(&upstream.url());
    settings.context_window = Some(24_000);
    let proxy = Proxy::start_with(settings).await;
    let old = image("image/png", base64(&png(2_880, 1_800, 2_000_000, 3)));
    let mut messages = vec![
        json!({"role": "user", "content": "Make the dashboard match the design."}),
        json!({"role": "assistant", "content": "Share a screenshot of the current page?"}),
        json!({"role": "user", "content": [{"type": "text", "text": "Here it is."}, old]}),
    ];
    let newest = image("image/png", base64(&png(1_280, 720, 500_000, 4)));
    let mut dropped_at = None;
    for turn in 0..30 {
        if turn > 0 {
            messages.extend(read_turn(turn));
        }
        if turn == 20 {
            messages.push(json!({"role": "assistant", "content": "Better now?"}));
            messages.push(json!({"role": "user", "content": [newest.clone()]}));
        }
        let body = json!({"model": MODEL, "max_tokens": 1024, "messages": messages});
        let reply = post_messages(&proxy, &body).await;
        assert_eq!(
            reply.status,
            200,
            "turn {turn}: {}",
            &reply.text()[..reply.text().len().min(400)]
        );
        let sent = upstream.seen().last().unwrap().json().to_string();
        if dropped_at.is_none() && sent.contains("image 2880×1800 png]") {
            dropped_at = Some(turn);
        }
    }
    // The first call carried the screenshot at about its rule's 1,590 tokens.
    let ledger = sim.ledger();
    assert!(ledger.iter().all(|call| call.status == 200));
    assert!(
        (1_590..3_000).contains(&ledger[0].prompt_tokens),
        "{}",
        ledger[0].prompt_tokens
    );
    // Later it went whole: no image block of its size, a placeholder that says what it was.
    let dropped_at = dropped_at.expect("the old screenshot was never dropped");
    let last = upstream.seen().last().unwrap().json();
    let text = last.to_string();
    let placeholder = text
        .split('"')
        .find(|piece| piece.starts_with("[dropped §") && piece.ends_with(": image 2880×1800 png]"));
    assert!(placeholder.is_some(), "turn {dropped_at}: no placeholder");
    // The newest image is still there, byte for byte, and only it.
    let shown = images(&last);
    assert_eq!(shown.len(), 1);
    assert!(shown[0] == newest, "the newest image changed");
}
