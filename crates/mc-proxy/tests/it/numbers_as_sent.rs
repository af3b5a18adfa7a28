//! Numbers and function-call arguments reach the provider as the client wrote them: a number
//! past 2^64 or with more digits than a double holds is not rounded, and `arguments` text is
//! not re-serialised (its spaces, duplicate keys and escapes are the client's). The bodies
//! here are written as text, since building them with `json!` would already round them.

use crate::support::*;

const BIG: &str = "18446744073709551617";
const PRECISE: &str = "0.10000000000000000555";

fn body_text(seen: &Seen) -> String {
    String::from_utf8(seen.body.to_vec()).expect("the upstream body is UTF-8")
}

/// What the client wrote with every byte that must survive, for each assertion.
fn assert_kept(upstream: &str, pieces: &[&str]) {
    for piece in pieces {
        assert!(
            upstream.contains(piece),
            "`{piece}` did not reach the provider as sent: {upstream}"
        );
    }
}

#[tokio::test]
async fn anthropic_numbers_in_fields_tool_inputs_and_schemas_go_up_as_sent() {
    let upstream = Upstream::replying(|_, _| json_response(200, &anthropic_message("ok"))).await;
    let proxy = Proxy::start(&upstream.url()).await;
    let body = format!(
        r#"{{"model":"{MODEL}","max_tokens":1024,"temperature":{PRECISE},
        "metadata":{{"user_id":"u1","trace":{BIG}}},
        "tools":[{{"name":"seek","description":"Seeks.","input_schema":{{"type":"object",
            "properties":{{"offset":{{"type":"integer","maximum":{BIG}}}}}}}}}],
        "messages":[
          {{"role":"user","content":[{{"type":"text","text":"Seek far."}}]}},
          {{"role":"assistant","content":[{{"type":"tool_use","id":"toolu_1","name":"seek",
            "input":{{"offset":{BIG},"ratio":{PRECISE},"small":1.0,"exp":-2.5e-3}}}}]}},
          {{"role":"user","content":[{{"type":"tool_result","tool_use_id":"toolu_1","content":"done"}}]}}
        ]}}"#
    );
    let reply = send(
        axum::http::Method::POST,
        &proxy.url("/v1/messages"),
        &[("content-type", "application/json")],
        body,
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let sent = body_text(&upstream.seen()[0]);
    assert_kept(
        &sent,
        &[
            &format!(r#""temperature":{PRECISE}"#),
            &format!(r#""trace":{BIG}"#),
            &format!(r#""maximum":{BIG}"#),
            &format!(r#""offset":{BIG}"#),
            &format!(r#""ratio":{PRECISE}"#),
            r#""small":1.0"#,
            r#""exp":-2.5e-3"#,
        ],
    );
}

#[tokio::test]
async fn chat_arguments_go_up_byte_for_byte() {
    let upstream = Upstream::replying(|_, _| {
        json_response(
            200,
            &crate::agent_tools_chat::answer(Some("ok"), Vec::new()),
        )
    })
    .await;
    let proxy = Proxy::start(&upstream.url()).await;
    // Spaces, a duplicate key, an escaped letter and a big number: all the client's own.
    let arguments = format!(r#"{{"path": "caf\u00e9.rs", "path": "b.rs", "offset": {BIG}}}"#);
    let body = format!(
        r#"{{"model":"gpt-4o","temperature":{PRECISE},"messages":[
          {{"role":"system","content":"You are a careful coding agent."}},
          {{"role":"user","content":"Read it."}},
          {{"role":"assistant","content":null,"tool_calls":[{{"id":"call_1","type":"function",
            "function":{{"name":"read_file","arguments":"{escaped}"}}}}]}},
          {{"role":"tool","tool_call_id":"call_1","content":"fn main() {{}}"}}
        ],"tools":[{{"type":"function","function":{{"name":"read_file","parameters":
          {{"type":"object","properties":{{"offset":{{"type":"integer","maximum":{BIG}}}}}}}}}}}]}}"#,
        escaped = arguments.replace('\\', "\\\\").replace('"', "\\\"")
    );
    let reply = send(
        axum::http::Method::POST,
        &proxy.url("/v1/chat/completions"),
        &[("content-type", "application/json")],
        body,
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let sent = upstream.seen()[0].json();
    let calls = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|message| message["tool_calls"].as_array())
        .expect("the assistant's call went up");
    assert_eq!(calls[0]["function"]["arguments"], arguments.as_str());
    let text = body_text(&upstream.seen()[0]);
    assert_kept(
        &text,
        &[
            &format!(r#""temperature":{PRECISE}"#),
            &format!(r#""maximum":{BIG}"#),
        ],
    );
}

#[tokio::test]
async fn responses_arguments_go_up_byte_for_byte() {
    let upstream = Upstream::replying(|_, _| {
        json_response(
            200,
            &crate::agent_tools_responses::answer(vec![crate::agent_tools_responses::said("ok")]),
        )
    })
    .await;
    let proxy = Proxy::start(&upstream.url()).await;
    let arguments = format!(r#"{{ "path" : "caf\u00e9.rs", "offset": {BIG} }}"#);
    let body = format!(
        r#"{{"model":"gpt-5","input":[
          {{"type":"message","role":"user","content":[{{"type":"input_text","text":"Read it."}}]}},
          {{"type":"function_call","call_id":"call_1","name":"read_file","arguments":"{escaped}"}},
          {{"type":"function_call_output","call_id":"call_1","output":"fn main() {{}}"}}
        ],"tools":[]}}"#,
        escaped = arguments.replace('\\', "\\\\").replace('"', "\\\"")
    );
    let reply = send(
        axum::http::Method::POST,
        &proxy.url("/v1/responses"),
        &[("content-type", "application/json")],
        body,
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let sent = upstream.seen()[0].json();
    let call = sent["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "function_call")
        .expect("the call went up");
    assert_eq!(call["arguments"], arguments.as_str());
}
