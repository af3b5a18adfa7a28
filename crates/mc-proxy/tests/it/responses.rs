//! The OpenAI Responses route (what Codex speaks): managed like Chat, with the leading
//! instructions kept verbatim, the items after them managed and stored, `prompt_cache_key`
//! kept; stateful calls forwarded untouched; bad bodies refused in OpenAI's shape.

use axum::http::Method;
use mc_wire::responses::{Input, ResponsesRequest, to_conversation};
use serde_json::{Value, json};

use crate::hostile::stored_log;
use crate::support::{Proxy, Upstream, json_response, send, sim, sse_events, tap};

const THREAD: &str = "0199a1b2-thread";

/// Codex's leading developer items, long enough for the provider to cache.
fn instructions() -> Vec<Value> {
    let rules: String = (0..150)
        .map(|rule| format!("Rule {rule}: run the tests before you say a change is done.\n"))
        .collect();
    vec![
        json!({"type": "message", "id": "msg_i1", "role": "developer",
               "content": [{"type": "input_text", "text": format!("You are a coding agent.\n{rules}")}]}),
        json!({"type": "message", "id": "msg_i2", "role": "developer",
               "content": [{"type": "input_text", "text": "<permissions instructions>full</permissions instructions>"}]}),
    ]
}

fn user(text: &str) -> Value {
    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
}

fn request(input: &[Value], stream: bool) -> Value {
    json!({
        "model": "gpt-5",
        "stream": stream,
        "input": input,
        "tools": [
            {"type": "function", "name": "exec_command", "strict": false, "parameters": {"type": "object"}},
            {"type": "custom", "name": "apply_patch", "format": {"type": "text"}},
        ],
        "tool_choice": "auto",
        "store": false,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": THREAD,
    })
}

async fn post_responses(proxy: &Proxy, body: impl Into<String>) -> crate::support::Reply {
    send(
        Method::POST,
        &proxy.url("/v1/responses"),
        &[
            ("content-type", "application/json"),
            ("authorization", "Bearer sk-openai-test"),
            ("session-id", THREAD),
            ("user-agent", "codex_exec/0.171.0"),
        ],
        body.into(),
    )
    .await
}

/// The conversation the store keeps for `input`: everything after the instructions.
fn conversation(input: &[Value]) -> Vec<mc_core::Message> {
    let body = json!({"model": "gpt-5", "input": input}).to_string();
    let request = ResponsesRequest::decode(body.as_bytes(), usize::MAX).unwrap();
    let Some(Input::Items(items)) = &request.input else {
        panic!("items")
    };
    to_conversation(&items[2..])
}

/// The texts of every `input_text` / `output_text` part of a sent body's items.
fn texts(sent: &Value) -> Vec<String> {
    sent["input"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|part| part["text"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn streamed_responses_are_managed_and_the_second_call_hits_the_cache() {
    let script = json!({"turns": [
        {"content": [{"type": "text", "text": "The parser lives in src/parse.rs."}]},
        {"content": [{"type": "text", "text": "It has forty tests."}]},
    ]});
    let sim = sim(&script, None).await;
    let (upstream, relayed) = tap(sim.local_addr()).await;
    let proxy = Proxy::start(&upstream.url()).await;

    let mut input = instructions();
    input.push(user(
        "<environment_context>\n  <cwd>/tmp/work</cwd>\n</environment_context>",
    ));
    input.push(user("Where is the parser?"));
    let answers = ["The parser lives in src/parse.rs.", "It has forty tests."];
    for (call, expected) in answers.iter().enumerate() {
        let reply = post_responses(&proxy, request(&input, true).to_string()).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(reply.body, relayed.lock().unwrap()[call].1, "call {call}");
        let events = sse_events(&reply.body);
        let text: String = events
            .iter()
            .filter(|(_, data)| data["type"] == "response.output_text.delta")
            .filter_map(|(_, data)| data["delta"].as_str())
            .collect();
        assert_eq!(text, *expected);
        let completed = &events.last().unwrap().1;
        assert_eq!(completed["type"], "response.completed");
        let cached = completed["response"]["usage"]["input_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap();
        if call == 1 {
            assert!(cached > 0, "the second call reads the cache: {completed}");
        }
        // The model's answer goes back as the output item it came as.
        input.push(completed["response"]["output"][0].clone());
        input.push(user("How many tests does it have?"));

        let sent = upstream.seen()[call].json();
        let items = sent["input"].as_array().unwrap();
        assert_eq!(
            items[..2],
            instructions()[..],
            "call {call}: instructions verbatim"
        );
        assert!(
            items[2..]
                .iter()
                .all(|item| item["role"] != "developer" && item["role"] != "system"),
            "{sent}"
        );
        assert_eq!(sent["prompt_cache_key"], THREAD);
        assert_eq!(sent["include"], json!(["reasoning.encrypted_content"]));
        let texts = texts(&sent);
        let question = texts
            .iter()
            .find(|text| text.ends_with("Where is the parser?"))
            .unwrap_or_else(|| panic!("question missing: {sent}"));
        assert!(question.starts_with('§'), "untagged: {question}");
        // m[0] and m[1] come before the conversation.
        assert_eq!(items.len(), 2 + 2 + 2 + 2 * call, "{sent}");
    }
    let ledger = sim.ledger();
    assert_eq!(ledger.len(), 2);
    assert!(ledger[1].cache_read > 0, "{ledger:?}");

    let ids = proxy.session_ids();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert!(ids[0].starts_with(&format!("codex-{THREAD}-")), "{ids:?}");
    let rows = proxy.calls(&ids[0], 2).await;
    assert!(rows.iter().all(|row| row.route == "openai_responses"));
    assert_eq!(rows[1].cache_read_tokens, Some(ledger[1].cache_read));
    // The reported usage teaches the token correction, as on the other wires.
    let mut learned = Vec::new();
    for _ in 0..250 {
        learned = proxy.store().read(|tx| tx.token_corrections()).unwrap();
        if !learned.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(
        learned.iter().any(|(model, _)| model == "gpt-5"),
        "{learned:?}"
    );
    let sent = &input[..input.len() - 2];
    let stored: Vec<_> = proxy
        .messages(&ids[0])
        .into_iter()
        .map(|stored| stored.message)
        .collect();
    assert_eq!(stored, conversation(sent));
}

#[tokio::test]
async fn reasoning_and_custom_calls_go_up_as_they_came() {
    let answer = json!({"id": "resp_1", "object": "response", "status": "completed", "error": null,
        "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}],
        "usage": {"input_tokens": 1500, "input_tokens_details": {"cached_tokens": 1024}, "output_tokens": 2, "total_tokens": 1502}});
    let upstream = Upstream::replying(move |_, _| json_response(200, &answer)).await;
    let proxy = Proxy::start(&upstream.url()).await;
    let reasoning = json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA-opaque"});
    let mut input = instructions();
    input.extend([
        user("Patch the README."),
        reasoning.clone(),
        json!({"type": "custom_tool_call", "id": "ctc_1", "status": "completed", "call_id": "call_p", "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch"}),
        json!({"type": "custom_tool_call_output", "call_id": "call_p", "output": "Success."}),
        json!({"type": "function_call", "id": "fc_1", "call_id": "call_x", "name": "exec_command", "arguments": "{\"cmd\":\"git diff\"}"}),
        json!({"type": "function_call_output", "call_id": "call_x", "output": "diff --git a/README.md"}),
    ]);
    let reply = post_responses(&proxy, request(&input, false).to_string()).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["output"][0]["content"][0]["text"], "Done.");

    let sent = upstream.seen()[0].json();
    let items = sent["input"].as_array().unwrap();
    assert!(
        items.contains(&reasoning),
        "reasoning goes up whole: {sent}"
    );
    let kinds: Vec<&str> = items
        .iter()
        .filter_map(|item| item["type"].as_str())
        .collect();
    for kind in [
        "custom_tool_call",
        "custom_tool_call_output",
        "function_call",
        "function_call_output",
    ] {
        assert!(kinds.contains(&kind), "{kind} missing: {sent}");
    }
    let patch = items
        .iter()
        .find(|item| item["type"] == "custom_tool_call")
        .unwrap();
    assert_eq!(patch["input"], "*** Begin Patch\n*** End Patch");
    let ids = proxy.session_ids();
    let rows = proxy.calls(&ids[0], 1).await;
    assert_eq!(rows[0].cache_read_tokens, Some(1024));
    assert_eq!(rows[0].uncached_tokens, Some(476));
}

/// Function-call arguments go up as Codex wrote them whatever JSON they hold, a bare JSON
/// string (`"ls"`, quotes included) too, and the stored conversation is what was sent.
#[tokio::test]
async fn function_call_arguments_of_every_json_kind_go_up_as_written() {
    let answer = json!({"id": "resp_1", "object": "response", "status": "completed", "error": null,
        "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}],
        "usage": {"input_tokens": 1500, "output_tokens": 2, "total_tokens": 1502}});
    let upstream = Upstream::replying(move |_, _| json_response(200, &answer)).await;
    for arguments in [
        r#""ls""#,
        r#""{\"cmd\":\"ls\"}""#,
        "7",
        "null",
        "{\"cmd\":\"ls\"}",
    ] {
        let proxy = Proxy::start(&upstream.url()).await;
        let mut input = instructions();
        input.extend([
            user("List the files."),
            json!({"type": "function_call", "id": "fc_1", "call_id": "call_x", "name": "exec_command", "arguments": arguments}),
            json!({"type": "function_call_output", "call_id": "call_x", "output": "README.md"}),
        ]);
        let reply = post_responses(&proxy, request(&input, false).to_string()).await;
        assert_eq!(reply.status, 200, "{arguments}: {}", reply.text());
        let sent = upstream.seen().pop().unwrap().json();
        let call = sent["input"]
            .as_array()
            .unwrap()
            .iter()
            .find(|item| item["type"] == "function_call")
            .cloned()
            .unwrap();
        assert_eq!(call["arguments"], arguments);
        assert_eq!(stored_log(&proxy), conversation(&input), "{arguments}");
        proxy.shutdown().await;
    }
}

#[tokio::test]
async fn a_stateful_call_goes_up_untouched_and_is_not_stored() {
    let script = json!({"turns": [{"content": [{"type": "text", "text": "unused"}]}]});
    let sim = sim(&script, None).await;
    let (upstream, _relayed) = tap(sim.local_addr()).await;
    let proxy = Proxy::start(&upstream.url()).await;
    // Odd spacing on purpose: the bytes must arrive exactly as sent.
    let body = r#"{"model":"gpt-5",  "previous_response_id":"resp_prior","input":[{"role":"user","content":"and then?"}],"store":true}"#;
    let reply = post_responses(&proxy, body).await;
    assert_eq!(reply.status, 400, "{}", reply.text());
    assert_eq!(reply.json()["error"]["code"], "previous_response_not_found");
    let seen = upstream.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].body, body.as_bytes());
    assert_eq!(seen[0].uri, "/v1/responses");
    assert!(
        proxy.session_ids().is_empty(),
        "nothing is managed or stored"
    );
    // Its ledger row says why, for `status`.
    let mut rows = Vec::new();
    for _ in 0..250 {
        rows = proxy.store().read(|tx| tx.unattributed_calls(10)).unwrap();
        if !rows.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].route, mc_proxy::STATEFUL_RESPONSES_ROUTE);
    assert_eq!(rows[0].status, 400);
}

#[tokio::test]
async fn a_malformed_body_gets_an_openai_shaped_400() {
    let upstream = Upstream::replying(|_, _| json_response(200, &json!({}))).await;
    let proxy = Proxy::start(&upstream.url()).await;
    let bad_role =
        json!({"model": "gpt-5", "input": [{"role": "tool", "content": "x"}]}).to_string();
    for body in [
        bad_role.as_str(),
        "{\"model\": \"gpt-5\", \"input\": ",
        "[]",
    ] {
        let reply = post_responses(&proxy, body).await;
        assert_eq!(reply.status, 400, "{body}: {}", reply.text());
        let error = &reply.json()["error"];
        assert_eq!(error["type"], "invalid_request_error", "{body}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .starts_with("magic-context: "),
            "{error}"
        );
        assert!(error.get("param").is_some() && error.get("code").is_some());
    }
    assert!(upstream.seen().is_empty(), "nothing bad goes upstream");
}

#[tokio::test]
async fn a_context_length_error_is_retried_with_a_smaller_request() {
    let upstream = Upstream::replying(|_, index| {
        if index == 0 {
            json_response(400, &json!({"error": {
                "message": "Your input exceeds the context window of this model. This model's maximum context length is 30,000 tokens. However, your messages resulted in 41,000 tokens.",
                "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}}))
        } else {
            json_response(200, &json!({"id": "resp_ok", "object": "response", "status": "completed", "error": null,
                "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "fits now"}]}]}))
        }
    })
    .await;
    let proxy = Proxy::start(&upstream.url()).await;
    let mut input = vec![
        json!({"role": "developer", "content": "Be brief."}),
        user("Read every file."),
    ];
    for round in 0..40 {
        let id = format!("call_{round}");
        input.push(
            json!({"type": "function_call", "call_id": id, "name": "exec_command",
            "arguments": format!("{{\"cmd\":\"cat f{round}\"}}")}),
        );
        let output: String = (0..100)
            .map(|line| format!("file {round} line {line}\n"))
            .collect();
        input.push(json!({"type": "function_call_output", "call_id": id, "output": output}));
    }
    let reply = post_responses(&proxy, request(&input, false).to_string()).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["output"][0]["content"][0]["text"], "fits now");
    let seen = upstream.seen();
    assert_eq!(seen.len(), 2);
    assert!(seen[1].body.len() < seen[0].body.len() * 3 / 4);
}

#[tokio::test]
async fn codexs_compaction_call_passes_through_verbatim() {
    let answer = json!({"id": "resp_c", "object": "response", "status": "completed", "error": null, "output": []});
    let upstream = Upstream::replying(move |_, _| json_response(200, &answer)).await;
    let proxy = Proxy::start(&upstream.url()).await;
    let mut input = instructions();
    input.push(user("Fix the build."));
    input.push(user(
        "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary.",
    ));
    let mut body = request(&input, false);
    body["tools"] = json!([]);
    body["parallel_tool_calls"] = json!(false);
    let body = body.to_string();
    let reply = send(
        Method::POST,
        &proxy.url("/v1/responses"),
        &[
            ("content-type", "application/json"),
            ("session-id", THREAD),
            (
                "x-codex-turn-metadata",
                r#"{"request_kind":"compaction","window_number":0}"#,
            ),
        ],
        body.clone(),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(upstream.seen()[0].body, body.as_bytes());
    assert!(proxy.session_ids().is_empty());
}
