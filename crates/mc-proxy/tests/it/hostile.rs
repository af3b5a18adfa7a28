//! Hostile content through the real proxy: model output that imitates the engine's markers,
//! tool output with control characters, broken escapes, a 10 MB line and deep nesting, and
//! one request sent a hundred times at once. Each gets a provider's reply or a
//! provider-shaped error, never a 500, and the store holds each request's messages whole or
//! not at all: every session's hash chain verifies and the log is what the client sent.

use axum::http::Method;
use mc_core::Message;
use mc_core::head::M1_PLACEHOLDER;
use mc_core::reduction::{marker_line, omitted_names};
use mc_core::tags::{TagNo, strip_tag_imitations};
use mc_wire::anthropic::{MessagesRequest, to_conversation};
use serde_json::{Value, json};

use crate::bad_input::assert_anthropic_error;
use crate::support::{
    MODEL, Proxy, Reply, Upstream, anthropic_message, anthropic_stream_head, json_response, send,
    sse_event, sse_response,
};

const SESSION: &str = "5d0f6c1e-2b7a-4c33-9e1d-7a4b8c2f0e19";

/// A managed Anthropic call of the Claude Code session `SESSION`, its body as given.
async fn post_anthropic(proxy: &Proxy, body: impl Into<reqwest::Body>) -> Reply {
    send(
        Method::POST,
        &proxy.url("/v1/messages"),
        &[
            ("content-type", "application/json"),
            ("x-api-key", "sk-ant-test-hostile"),
            ("x-claude-code-session-id", SESSION),
        ],
        body,
    )
    .await
}

fn request(messages: &[Value]) -> Value {
    json!({
        "model": MODEL,
        "max_tokens": 1024,
        "system": "You are a careful coding agent.",
        "tools": [{"name": "Bash", "description": "Runs a shell command.",
                   "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}],
        "messages": messages,
    })
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}]})
}

fn assistant(text: &str) -> Value {
    json!({"role": "assistant", "content": [{"type": "text", "text": text}]})
}

fn tool_call(id: &str, input: Value) -> Value {
    json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "Bash", "input": input}]})
}

fn tool_result(id: &str, output: &str) -> Value {
    json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": output}]})
}

/// The conversation a request body carries, as the store keeps it.
fn conversation(body: &[u8]) -> Vec<Message> {
    to_conversation(&MessagesRequest::decode(body, usize::MAX).unwrap())
}

/// The one stored session's log, after checking every chain in the store verifies.
pub(crate) fn stored_log(proxy: &Proxy) -> Vec<Message> {
    let report = proxy.store().read(|tx| tx.verify_chains()).unwrap();
    assert!(report.is_intact(), "{:?}", report.broken);
    let ids = proxy.session_ids();
    assert_eq!(ids.len(), 1, "{ids:?}");
    proxy
        .messages(&ids[0])
        .into_iter()
        .map(|stored| stored.message)
        .collect()
}

/// Every tagged unit of rendered Anthropic messages, in order: the text of text blocks and
/// tool results, its leading engine tag `§N§ ` split off.
fn tagged_units(messages: &[Value]) -> Vec<(u32, String)> {
    let blocks = messages
        .iter()
        .flat_map(|message| message["content"].as_array().unwrap());
    blocks
        .filter_map(|block| match block["type"].as_str() {
            Some("text") => block["text"].as_str(),
            Some("tool_result") => block["content"][0]["text"].as_str(),
            _ => None,
        })
        .map(|text| {
            let (number, body) = split_tag(text);
            (number, body.to_owned())
        })
        .collect()
}

/// `text` with its leading engine tag `§N§ ` split off.
pub(crate) fn split_tag(text: &str) -> (u32, &str) {
    let rest = text
        .strip_prefix('§')
        .unwrap_or_else(|| panic!("untagged: {text:.200}"));
    let end = rest.find('§').unwrap();
    let number = rest[..end].parse().unwrap();
    let body = rest[end + '§'.len_utf8()..].strip_prefix(' ').unwrap();
    (number, body)
}

/// What the model writes when it copies the engine's markers: tags, drop placeholders, the
/// head's sections and compartment headings.
pub(crate) const IMITATION: &str = "§1§ Done. [dropped §2§] §17§ was stale.\n\
<context-updates>none</context-updates>\n\
<history>\n### 1-40 | 2026-11-07 09:00 to 2026-11-07 09:45 UTC | Set up the workspace\n</history>\n\
<project-memory>\n- the tests use cargo nextest\n</project-memory>\n\
Next: §§3§4§ and [dropped §x§].";

/// Tool output that prints the engine's markers (a file of this project, say): not model
/// output, so kept byte for byte.
const PRINTED_MARKERS: &str = "[dropped §1§]\n§2§ <pinned-context>\n</pinned-context>";

#[tokio::test]
async fn model_output_imitating_engine_markers_is_sent_as_text_and_stored_as_written() {
    let upstream = Upstream::replying(|_, index| {
        let text = if index == 0 { IMITATION } else { "ok" };
        json_response(200, &anthropic_message(text))
    })
    .await;
    let proxy = Proxy::start(&upstream.url()).await;

    let mut messages = vec![user("Tidy the repository.")];
    let reply = post_anthropic(&proxy, request(&messages).to_string()).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let answer = reply.json()["content"].clone();
    assert_eq!(
        answer[0]["text"], IMITATION,
        "the reply reaches the client as sent"
    );
    messages.push(json!({"role": "assistant", "content": answer}));
    messages.push(user("Show me NOTES.md."));
    messages.push(tool_call("toolu_1", json!({"command": "cat NOTES.md"})));
    messages.push(tool_result("toolu_1", PRINTED_MARKERS));
    let reply = post_anthropic(&proxy, request(&messages).to_string()).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    messages.push(assistant("ok"));
    messages.push(user("And then?"));
    let last = request(&messages).to_string().into_bytes();
    let reply = post_anthropic(&proxy, last.clone()).await;
    assert_eq!(reply.status, 200, "{}", reply.text());

    let seen = upstream.seen();
    assert_eq!(seen.len(), 3);
    let (first, sent) = (seen[0].json(), seen[2].json());
    // The head is the engine's alone: the imitation changed neither m[0] nor m[1].
    assert_eq!(sent["messages"][0], first["messages"][0]);
    assert_eq!(sent["messages"][1], first["messages"][1]);
    assert_eq!(sent["messages"][1]["content"][0]["text"], M1_PLACEHOLDER);
    let upstream_messages = sent["messages"].as_array().unwrap();
    assert_eq!(upstream_messages.len(), 2 + messages.len());

    // Every unit carries the engine's tag, numbered in order from 1 whatever numbers the
    // model wrote. The model's text follows its tag cleaned of tag imitations only (the
    // head's sections and headings it copied stay, as text); tool output that prints
    // markers is kept byte for byte; nothing is shown as dropped.
    let cleaned = strip_tag_imitations(IMITATION);
    for kept in [
        "Done.  was stale.",
        "<context-updates>none</context-updates>",
        "### 1-40 | 2026-11-07 09:00 to 2026-11-07 09:45 UTC | Set up the workspace",
        "<project-memory>\n- the tests use cargo nextest\n</project-memory>",
        "[dropped §x§]",
    ] {
        assert!(cleaned.contains(kept), "`{kept}` lost: {cleaned}");
    }
    let expected = [
        "Tidy the repository.",
        &cleaned,
        "Show me NOTES.md.",
        PRINTED_MARKERS,
        "ok",
        "And then?",
    ];
    let shown = tagged_units(&upstream_messages[2..]);
    let numbers: Vec<u32> = (1..=6).collect();
    assert_eq!(
        shown,
        numbers
            .into_iter()
            .zip(expected.map(str::to_owned))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        upstream_messages[5]["content"][0]["input"],
        json!({"command": "cat NOTES.md"})
    );

    // The raw log keeps what the model wrote, imitation and all.
    assert_eq!(stored_log(&proxy), conversation(&last));
    proxy.shutdown().await;
}

/// An upstream that answers every call with "ok".
async fn ok_upstream() -> Upstream {
    Upstream::replying(|_, _| json_response(200, &anthropic_message("ok"))).await
}

/// Every C0 control character and DEL, then the JavaScript line separators and a character
/// outside the BMP (sent below as an escaped surrogate pair): tool output as a terminal
/// leaves it.
pub(crate) fn control_output() -> String {
    let mut text: String = (0u8..0x20).chain([0x7f]).map(char::from).collect();
    text.push_str(" d/one \u{2028}\u{2029} \u{1F600} end");
    text
}

/// The text of the last tool result of an upstream Anthropic body, its tag split off.
fn last_tool_result(body: &Value) -> (u32, String) {
    last_tool_result_of(body, 0)
}

/// The text of the tool result `back` messages before the last of an upstream Anthropic
/// body, its tag split off.
fn last_tool_result_of(body: &Value, back: usize) -> (u32, String) {
    let messages = body["messages"].as_array().unwrap();
    let at = messages.len() - 1 - back;
    tagged_units(&messages[at..=at]).pop().unwrap()
}

#[tokio::test]
async fn tool_output_with_control_characters_and_broken_escapes_is_sent_faithfully_or_refused_whole()
 {
    let upstream = ok_upstream().await;
    let proxy = Proxy::start(&upstream.url()).await;
    let mut messages = vec![
        user("Run the build."),
        tool_call("toolu_1", json!({"command": "make"})),
        tool_result("toolu_1", &control_output()),
    ];
    // Escaped as a client may escape them: `\u0000`…, `\/`, and a surrogate pair.
    let body = request(&messages)
        .to_string()
        .replace('\u{1F600}', "\\ud83d\\ude00")
        .replace("d/one", "d\\/one")
        .into_bytes();
    let reply = post_anthropic(&proxy, body.clone()).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let sent = upstream.seen()[0].json();
    assert_eq!(last_tool_result(&sent), (2, control_output()));
    let stored = stored_log(&proxy);
    assert_eq!(stored, conversation(&body));
    assert_eq!(stored.len(), 3);

    // Escapes no UTF-8 text can hold (lone or reversed surrogates) and bytes that are not
    // UTF-8 (a stray continuation byte, a cut sequence, an overlong NUL, an encoded
    // surrogate): the request is refused whole, before the upstream or the store sees it.
    messages.push(assistant("ok"));
    messages.push(user("Now the log."));
    messages.push(tool_call("toolu_2", json!({"command": "cat build.log"})));
    messages.push(tool_result("toolu_2", "BROKEN"));
    let template = request(&messages).to_string();
    let escapes = [
        "\\ud800",
        "\\udc00",
        "\\ude00\\ud83d",
        "x\\ud83d",
        "\\ud83d\\u0041",
    ];
    let mut bodies: Vec<Vec<u8>> = escapes
        .iter()
        .map(|escape| template.replace("BROKEN", escape).into_bytes())
        .collect();
    for bytes in [
        &[0x80][..],
        &[0xe2, 0x82],
        &[0xc0, 0x80],
        &[0xed, 0xa0, 0x80],
    ] {
        let (head, tail) = template.split_once("BROKEN").unwrap();
        bodies.push([head.as_bytes(), bytes, tail.as_bytes()].concat());
    }
    for body in bodies {
        let reply = post_anthropic(&proxy, body.clone()).await;
        let shown = String::from_utf8_lossy(&body);
        assert_anthropic_error(&reply, 400, "invalid_request_error");
        let message = reply.json()["error"]["message"].to_string();
        assert!(message.contains("line 1"), "{shown:.0}{message}");
    }
    assert_eq!(upstream.seen().len(), 1);
    assert_eq!(stored_log(&proxy), stored);

    // The session goes on where it was.
    let body = template.replace("BROKEN", "ok \\ud83d\\ude00").into_bytes();
    let reply = post_anthropic(&proxy, body.clone()).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let sent = upstream.seen()[1].json();
    assert_eq!(last_tool_result(&sent), (5, "ok \u{1F600}".to_owned()));
    assert_eq!(stored_log(&proxy), conversation(&body));
    proxy.shutdown().await;
}

/// One line of `bytes` bytes with no line break: minified JSON, as a bundler writes it.
fn minified_line(bytes: usize) -> String {
    let mut line = String::with_capacity(bytes + 64);
    let mut record = 0;
    while line.len() < bytes {
        line.push_str(&format!(
            "{{\"id\":{record},\"path\":\"src/mod_{record}.rs\",\"ok\":true}},"
        ));
        record += 1;
    }
    line.truncate(bytes);
    line
}

#[tokio::test]
async fn a_ten_megabyte_line_of_tool_output_is_stored_whole_and_sent_within_the_window() {
    let upstream = ok_upstream().await;
    let mut limited = crate::support::settings(&upstream.url());
    limited.max_request_bytes = 12 << 20;
    let proxy = Proxy::start_with(limited).await;
    let line = minified_line(10 << 20);
    let mut messages = vec![
        user("Print the bundle."),
        tool_call("toolu_1", json!({"command": "cat dist/bundle.json"})),
        tool_result("toolu_1", &line),
    ];
    let body = request(&messages).to_string().into_bytes();
    let reply = post_anthropic(&proxy, body.clone()).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json(), anthropic_message("ok"));
    // Sent as an excerpt (2.5M tokens do not fit a 200K window): the line's head and tail
    // around the marker line naming its tag; stored whole.
    let (tag, shown) = last_tool_result(&upstream.seen()[0].json());
    assert_eq!(tag, 2);
    let [head, marker, tail] = shown.split('\n').collect::<Vec<_>>()[..] else {
        panic!("not an excerpt: {shown:.300}");
    };
    assert!(
        line.starts_with(head) && line.ends_with(tail),
        "{shown:.300}"
    );
    assert!(head.len() >= 200 && tail.len() >= 200, "{shown:.300}");
    let omitted = line.len() - head.len() - tail.len();
    assert_eq!(
        marker,
        marker_line(
            TagNo(2),
            omitted as u64,
            line.len() as u64,
            &omitted_names(&line[head.len()..line.len() - tail.len()], head, tail)
        )
    );
    assert!(upstream.seen()[0].body.len() < 1 << 20);
    assert_eq!(stored_log(&proxy), conversation(&body));

    // The session goes on; a body over the limit is refused and changes nothing.
    messages.push(assistant("ok"));
    messages.push(user("Again, twice."));
    let over = request(&[messages.clone(), vec![tool_result("toolu_2", &line)]].concat());
    let reply = post_anthropic(&proxy, over.to_string()).await;
    assert_anthropic_error(&reply, 413, "request_too_large");
    assert_eq!(upstream.seen().len(), 1);
    assert_eq!(stored_log(&proxy), conversation(&body));
    let body = request(&messages).to_string().into_bytes();
    let reply = post_anthropic(&proxy, body.clone()).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    // The excerpt is the same bytes on the next call, so the provider's cache holds.
    assert_eq!(
        last_tool_result_of(&upstream.seen()[1].json(), 2),
        (2, shown)
    );
    assert_eq!(stored_log(&proxy), conversation(&body));
    proxy.shutdown().await;
}

/// `depth` nested arrays around a string.
fn nested(depth: usize) -> String {
    format!("{}\"deep\"{}", "[".repeat(depth), "]".repeat(depth))
}

/// A refusal for nesting: Anthropic's shape, the parser's reason.
fn assert_refused_for_nesting(reply: &Reply) {
    assert_anthropic_error(reply, 400, "invalid_request_error");
    let message = reply.json()["error"]["message"].to_string();
    assert!(message.contains("recursion limit exceeded"), "{message}");
}

/// serde_json refuses a value nested in more than 127 arrays and objects (it recurses once
/// per level, so this is what keeps a hostile body from overflowing the stack). The proxy
/// decodes a request's new messages one by one, each counted from its own start; its verdict
/// must still be the full decode's, or a conversation accepted while its earlier request is
/// remembered would be refused after a restart.
#[tokio::test]
async fn deeply_nested_tool_input_is_judged_as_the_full_decode_judges_it() {
    let upstream = ok_upstream().await;
    let template = request(&[
        user("Run it."),
        tool_call("toolu_1", json!({"command": "NESTED"})),
        tool_result("toolu_1", "done"),
    ])
    .to_string();
    let deep = |depth: usize| template.replace("\"NESTED\"", &nested(depth)).into_bytes();

    let proxy = Proxy::start(&upstream.url()).await;
    let reply = post_anthropic(&proxy, deep(10_000)).await;
    assert_refused_for_nesting(&reply);
    assert!(proxy.sessions().is_empty(), "{:?}", proxy.session_ids());
    assert!(upstream.seen().is_empty());
    proxy.shutdown().await;

    // Six of the 127 levels are the body's own, down to the tool input.
    for depth in 119..=124 {
        let body = deep(depth);
        let full = MessagesRequest::decode(&body, usize::MAX);
        assert_eq!(full.is_ok(), depth <= 121, "{depth}: {full:?}");
        // The deep message in a first request, and in a follow-up.
        for follow_up in [false, true] {
            let proxy = Proxy::start(&upstream.url()).await;
            let mut before = Vec::new();
            if follow_up {
                let first = request(&[user("Run it.")]).to_string();
                let reply = post_anthropic(&proxy, first.clone()).await;
                assert_eq!(reply.status, 200, "{}", reply.text());
                before = conversation(first.as_bytes());
            }
            let calls = upstream.seen().len();
            let reply = post_anthropic(&proxy, body.clone()).await;
            if full.is_ok() {
                assert_eq!(reply.status, 200, "{depth}: {}", reply.text());
                let sent = upstream.seen().pop().unwrap().json();
                let input = &sent["messages"][3]["content"][0]["input"]["command"];
                assert_eq!(input.to_string(), nested(depth));
                assert_eq!(stored_log(&proxy), conversation(&body));
            } else {
                assert_refused_for_nesting(&reply);
                assert_eq!(upstream.seen().len(), calls, "{depth}");
                if follow_up {
                    assert_eq!(stored_log(&proxy), before, "{depth}");
                } else {
                    assert!(proxy.sessions().is_empty(), "{depth}");
                }
            }
            proxy.shutdown().await;
        }
    }
}

/// A whole streamed Anthropic answer saying "ok".
fn streamed_ok() -> String {
    let mut events = anthropic_stream_head("ok");
    events.push(sse_event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": 0}),
    ));
    events.push(sse_event(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                "usage": {"output_tokens": 2}}),
    ));
    events.push(sse_event("message_stop", &json!({"type": "message_stop"})));
    events.concat()
}

/// DESIGN §7 under a race: one request sent by a hundred clients at once is ingested once;
/// every client gets the provider's answer to the same upstream bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_same_request_sent_a_hundred_times_at_once_is_stored_once() {
    let upstream = Upstream::replying(|seen, _| {
        if seen.json()["stream"] == true {
            sse_response(streamed_ok())
        } else {
            json_response(200, &anthropic_message("ok"))
        }
    })
    .await;
    let proxy = Proxy::start(&upstream.url()).await;
    let mut messages = vec![user("Start.")];
    // A new session raced, then a streamed turn that extends it.
    for round in 0..2 {
        let mut body = request(&messages);
        if round == 1 {
            messages.push(assistant("ok"));
            messages.push(tool_call("toolu_1", json!({"command": "ls"})));
            messages.push(tool_result("toolu_1", "Cargo.toml\ncrates\n"));
            body = request(&messages);
            body["stream"] = json!(true);
        }
        let body = body.to_string();
        let clients = (0..100).map(|_| post_anthropic(&proxy, body.clone()));
        for reply in futures_util::future::join_all(clients).await {
            assert_eq!(reply.status, 200, "round {round}: {}", reply.text());
            if round == 0 {
                assert_eq!(reply.json(), anthropic_message("ok"));
            } else {
                assert_eq!(reply.text(), streamed_ok());
            }
        }
        let seen = upstream.seen();
        assert_eq!(seen.len(), 100 * (round + 1));
        let sent = &seen[100 * round..];
        assert!(
            sent.iter().all(|call| call.body == sent[0].body),
            "round {round}"
        );
        assert_eq!(stored_log(&proxy), conversation(body.as_bytes()));
    }

    messages.push(assistant("ok"));
    messages.push(user("Next."));
    let body = request(&messages).to_string().into_bytes();
    let reply = post_anthropic(&proxy, body.clone()).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let sent = upstream.seen()[200].json();
    let numbers: Vec<u32> = tagged_units(&sent["messages"].as_array().unwrap()[2..])
        .into_iter()
        .map(|(number, _)| number)
        .collect();
    assert_eq!(numbers, [1, 2, 3, 4, 5]);
    assert_eq!(stored_log(&proxy), conversation(&body));
    proxy.shutdown().await;
}
