//! A client that compacts by itself goes on in a new conversation opening with its summary:
//! the proxy carries what the conversation before held into the new session's `m[0]`, so
//! the user's own words reach the model again.

use serde_json::Value;

use crate::support::{
    Proxy, Upstream, anthropic_message, anthropic_request, assistant, json_response, message_texts,
    post, user,
};

const TASK: &str = "build the weather page for Graz";
const CORRECTION: &str = "use a service that needs no api key";
const SUMMARY_REQUEST: &str = "Your task is to create a detailed summary of the conversation \
                               so far, paying close attention to the user's explicit requests";
const CONTINUED: &str = "This session is being continued from a previous conversation that \
                         ran out of context. The conversation is summarized below: a weather \
                         page was built.";

async fn call(proxy: &Proxy, headers: &[(&str, &str)], messages: &[Value]) {
    let reply = post(proxy, "/v1/messages", headers, &anthropic_request(messages)).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
}

/// The conversation before the compaction, the client's summary call (its history as
/// `history_in_summary_call` gives it), then the first call after: what went upstream for it.
async fn compact_and_continue(
    headers: &[(&str, &str)],
    history_in_summary_call: impl Fn(Vec<Value>) -> Vec<Value>,
) -> (Proxy, Vec<String>) {
    let upstream = Upstream::replying(|_, _| json_response(200, &anthropic_message("ok"))).await;
    let proxy = Proxy::start(&upstream.url()).await;
    let before = vec![
        user(TASK),
        assistant("Built weather/index.html."),
        user(CORRECTION),
    ];
    call(&proxy, headers, &before[..1]).await;
    call(&proxy, headers, &before).await;
    let mut summary_call = history_in_summary_call(before);
    summary_call.extend([assistant("Switched to Open-Meteo."), user(SUMMARY_REQUEST)]);
    call(&proxy, headers, &summary_call).await;
    call(&proxy, headers, &[user(CONTINUED)]).await;
    let sent = upstream.seen().last().map(|seen| seen.json()).unwrap();
    (proxy, message_texts(&sent))
}

fn assert_carried(texts: &[String]) {
    let head = texts.join("\n");
    assert!(head.contains("<earlier-conversation session=\""), "{head}");
    assert!(head.contains(&format!("<task>{TASK}</task>")), "{head}");
    assert!(head.contains(CORRECTION), "{head}");
    assert!(!head.contains(SUMMARY_REQUEST), "{head}");
}

#[tokio::test]
async fn claude_codes_compacted_conversation_reaches_the_one_that_continues_it() {
    let headers = [(
        "x-claude-code-session-id",
        "6f1c0b7e-5555-4a5b-8c9d-000000000005",
    )];
    let (proxy, texts) = compact_and_continue(&headers, |history| history).await;
    assert_carried(&texts);
    let lanes: Vec<String> = proxy
        .session_ids()
        .into_iter()
        .filter(|id| id.starts_with("cc-6f1c0b7e-5555-"))
        .collect();
    assert_eq!(lanes.len(), 2, "{lanes:?}");
}

#[tokio::test]
async fn without_a_client_id_the_conversation_of_the_same_scope_is_carried() {
    let (_proxy, texts) = compact_and_continue(&[], |history| history).await;
    assert_carried(&texts);
}

#[tokio::test]
async fn a_summary_call_that_branched_off_is_not_what_is_carried() {
    // The summary call resends the history changed (here its first answer), so it forks a
    // branch ending with the request for the summary: the conversation itself is carried.
    let headers = [(
        "x-claude-code-session-id",
        "6f1c0b7e-6666-4a5b-8c9d-000000000006",
    )];
    let (proxy, texts) = compact_and_continue(&headers, |mut history| {
        history[1] = assistant("Built weather/index.html, one file.");
        history
    })
    .await;
    assert_carried(&texts);
    let head = texts.join("\n");
    let branch = proxy
        .session_ids()
        .into_iter()
        .find(|id| id.contains('~'))
        .unwrap();
    assert!(!head.contains(&format!("session=\"{branch}\"")), "{head}");
}

#[tokio::test]
async fn a_continuation_under_a_new_client_id_carries_the_projects_last_conversation() {
    let upstream = Upstream::replying(|_, _| json_response(200, &anthropic_message("ok"))).await;
    let proxy = Proxy::start(&upstream.url()).await;
    let before = [
        (
            "x-claude-code-session-id",
            "6f1c0b7e-8888-4a5b-8c9d-000000000008",
        ),
        ("x-magic-context-project", "weather-app"),
    ];
    call(
        &proxy,
        &before,
        &[user(TASK), assistant("Built it."), user(CORRECTION)],
    )
    .await;
    let after = [
        (
            "x-claude-code-session-id",
            "6f1c0b7e-9999-4a5b-8c9d-000000000009",
        ),
        ("x-magic-context-project", "weather-app"),
    ];
    call(&proxy, &after, &[user(CONTINUED)]).await;
    let sent = upstream.seen().last().map(|seen| seen.json()).unwrap();
    assert_carried(&message_texts(&sent));
    // Another project's conversation is never carried.
    let elsewhere = [
        (
            "x-claude-code-session-id",
            "6f1c0b7e-aaaa-4a5b-8c9d-00000000000a",
        ),
        ("x-magic-context-project", "another-app"),
    ];
    call(&proxy, &elsewhere, &[user(CONTINUED)]).await;
    let sent = upstream.seen().last().map(|seen| seen.json()).unwrap();
    let head = message_texts(&sent).join("\n");
    assert!(!head.contains("earlier-conversation"), "{head}");
}

#[tokio::test]
async fn a_new_conversation_without_the_summary_carries_nothing() {
    let upstream = Upstream::replying(|_, _| json_response(200, &anthropic_message("ok"))).await;
    let proxy = Proxy::start(&upstream.url()).await;
    let headers = [(
        "x-claude-code-session-id",
        "6f1c0b7e-7777-4a5b-8c9d-000000000007",
    )];
    call(&proxy, &headers, &[user(TASK)]).await;
    call(&proxy, &headers, &[user("a different task altogether")]).await;
    let sent = upstream.seen().last().map(|seen| seen.json()).unwrap();
    let head = message_texts(&sent).join("\n");
    assert!(!head.contains("earlier-conversation"), "{head}");
    assert!(!head.contains(TASK), "{head}");
}
