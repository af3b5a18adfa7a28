//! Session resolution over HTTP: Claude Code's ids in their three forms, side calls under
//! one id, rewinds that fork a branch without touching the original, and the hash-chain
//! fallback for clients that send no id, scoped by the system prompt.

use mc_core::{Host, SessionId};
use mc_store::ForkPoint;
use mc_wire::anthropic::{MessagesRequest, to_conversation};
use serde_json::{Value, json};

use crate::support::{
    Proxy, Upstream, anthropic_message, anthropic_request, assistant, json_response, post, user,
};

async fn upstream() -> Upstream {
    Upstream::replying(|_, _| json_response(200, &anthropic_message("ok"))).await
}

/// Sends `messages` as one Anthropic call, with `headers` and `metadata.user_id` if given.
async fn call(proxy: &Proxy, headers: &[(&str, &str)], user_id: Option<&str>, messages: &[Value]) {
    let mut body = anthropic_request(messages);
    if let Some(user_id) = user_id {
        body["metadata"] = json!({"user_id": user_id});
    }
    let reply = post(proxy, "/v1/messages", headers, &body).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
}

/// The messages a client sent, in the neutral model the store keeps.
fn conversation(messages: &[Value]) -> Vec<mc_core::Message> {
    let body = anthropic_request(messages).to_string();
    to_conversation(&MessagesRequest::decode(body.as_bytes(), usize::MAX).unwrap())
}

fn stored(proxy: &Proxy, session: &str) -> Vec<mc_core::Message> {
    proxy
        .messages(session)
        .into_iter()
        .map(|stored| stored.message)
        .collect()
}

/// The stored ids that start with `prefix`.
fn ids_with(proxy: &Proxy, prefix: &str) -> Vec<String> {
    proxy
        .session_ids()
        .into_iter()
        .filter(|id| id.starts_with(prefix))
        .collect()
}

/// A two-turn conversation whose first message is `first`.
fn turns(first: &str) -> (Vec<Value>, Vec<Value>) {
    let one = vec![user(first)];
    let two = vec![user(first), assistant("ok"), user("and then?")];
    (one, two)
}

#[tokio::test]
async fn claude_code_ids_in_every_form_name_one_session_each() {
    let upstream = upstream().await;
    let proxy = Proxy::start(&upstream.url()).await;
    let by_header = "6f1c0b7e-1111-4a5b-8c9d-000000000001";
    let by_legacy = "6f1c0b7e-2222-4a5b-8c9d-000000000002";
    let by_json = "6f1c0b7e-3333-4a5b-8c9d-000000000003";
    let legacy = format!("user_5e8a_account_77aa_session_{by_legacy}");
    let json_id =
        json!({"device_id": "dev-1", "account_uuid": "acc-1", "session_id": by_json}).to_string();

    for (id, header, user_id) in [
        (by_header, Some(by_header), None),
        (by_legacy, None, Some(legacy.as_str())),
        (by_json, None, Some(json_id.as_str())),
    ] {
        let headers: Vec<(&str, &str)> = header
            .map(|id| ("x-claude-code-session-id", id))
            .into_iter()
            .collect();
        let (one, two) = turns(&format!("task {id}"));
        call(&proxy, &headers, user_id, &one).await;
        call(&proxy, &headers, user_id, &two).await;
        let ids = ids_with(&proxy, &format!("cc-{id}-"));
        assert_eq!(ids.len(), 1, "{id}: {:?}", proxy.session_ids());
        assert_eq!(stored(&proxy, &ids[0]), conversation(&two), "{id}");
    }
    assert_eq!(proxy.sessions().len(), 3, "{:?}", proxy.session_ids());
    assert!(
        proxy
            .sessions()
            .iter()
            .all(|session| session.host == Host::ClaudeCode)
    );

    // Claude Code sends both the header and the metadata: the same session either way.
    let (_, two) = turns(&format!("task {by_header}"));
    let mut three = two.clone();
    three.extend([assistant("ok"), user("finish it")]);
    let legacy_form = format!("user_5e8a_account_77aa_session_{by_header}");
    call(&proxy, &[], Some(&legacy_form), &three).await;
    let ids = ids_with(&proxy, &format!("cc-{by_header}-"));
    assert_eq!(ids.len(), 1, "{:?}", proxy.session_ids());
    assert_eq!(stored(&proxy, &ids[0]).len(), 5);
}

#[tokio::test]
async fn the_explicit_header_wins_over_the_client_id() {
    let upstream = upstream().await;
    let proxy = Proxy::start(&upstream.url()).await;
    let headers = [
        ("x-magic-context-session", "operator-chosen"),
        (
            "x-claude-code-session-id",
            "6f1c0b7e-4444-4a5b-8c9d-000000000004",
        ),
    ];
    call(&proxy, &headers, None, &[user("hello")]).await;
    assert_eq!(proxy.session_ids(), vec!["operator-chosen".to_owned()]);
}

#[tokio::test]
async fn side_calls_under_one_id_get_their_own_session() {
    let upstream = upstream().await;
    let proxy = Proxy::start(&upstream.url()).await;
    let id = "9d2e4f60-aaaa-4bbb-8ccc-dddddddddddd";
    let headers = [("x-claude-code-session-id", id)];
    let (one, two) = turns("fix the flaky test");
    call(&proxy, &headers, None, &one).await;
    // Claude Code's title call: same id, a conversation of its own.
    let title = [user(
        "Write a 5-word title for this conversation: fix the flaky test",
    )];
    call(&proxy, &headers, None, &title).await;
    call(&proxy, &headers, None, &two).await;

    let ids = ids_with(&proxy, &format!("cc-{id}-"));
    assert_eq!(ids.len(), 2, "{ids:?}");
    let mut logs: Vec<Vec<mc_core::Message>> = ids.iter().map(|id| stored(&proxy, id)).collect();
    logs.sort_by_key(Vec::len);
    assert_eq!(logs, vec![conversation(&title), conversation(&two)]);
    assert!(
        ids.iter().all(|id| !id.contains('~')),
        "a side call is not a fork: {ids:?}"
    );
}

#[tokio::test]
async fn a_rewind_forks_a_branch_and_the_original_is_untouched() {
    let upstream = upstream().await;
    let proxy = Proxy::start(&upstream.url()).await;
    let headers = [(
        "x-claude-code-session-id",
        "1c5e9a7b-5555-4e6f-8a9b-0c1d2e3f4a5b",
    )];
    let original = vec![
        user("refactor the parser"),
        assistant("which part?"),
        user("the tokenizer"),
        assistant("done"),
        user("now add tests"),
    ];
    call(&proxy, &headers, None, &original[..1]).await;
    call(&proxy, &headers, None, &original[..3]).await;
    call(&proxy, &headers, None, &original).await;
    let ids = proxy.session_ids();
    assert_eq!(ids.len(), 1, "{ids:?}");
    let base = ids[0].clone();
    let before = proxy.messages(&base);
    assert_eq!(before.len(), 5);

    // The user edits their second message.
    let mut edited = original[..2].to_vec();
    edited.push(user("the lexer, not the tokenizer"));
    call(&proxy, &headers, None, &edited).await;
    let branch = format!("{base}~1");
    assert_eq!(proxy.session_ids(), vec![base.clone(), branch.clone()]);
    assert_eq!(proxy.messages(&base), before, "the original changed");
    assert_eq!(stored(&proxy, &branch), conversation(&edited));
    let record = proxy
        .sessions()
        .into_iter()
        .find(|session| session.id.as_str() == branch)
        .unwrap();
    assert_eq!(
        record.fork,
        Some(ForkPoint {
            parent: SessionId::new(base.clone()).unwrap(),
            ordinal: 2
        })
    );

    // The branch goes on by itself.
    let mut continued = edited.clone();
    continued.extend([assistant("lexer done"), user("thanks")]);
    call(&proxy, &headers, None, &continued).await;
    assert_eq!(proxy.session_ids().len(), 2, "{:?}", proxy.session_ids());
    assert_eq!(stored(&proxy, &branch), conversation(&continued));

    // Rewinding to an earlier point (a shorter history) forks again.
    call(&proxy, &headers, None, &original[..3]).await;
    let ids = proxy.session_ids();
    assert_eq!(ids.len(), 3, "{ids:?}");
    let newest = ids
        .iter()
        .find(|id| **id != base && **id != branch)
        .unwrap();
    assert!(newest.starts_with(&format!("{base}~")), "{newest}");
    assert_eq!(stored(&proxy, newest), conversation(&original[..3]));
    assert_eq!(proxy.messages(&base), before, "the original changed");
    assert_eq!(stored(&proxy, &branch), conversation(&continued));
}

#[tokio::test]
async fn without_an_id_the_hash_chain_continues_the_session() {
    let upstream = upstream().await;
    let proxy = Proxy::start(&upstream.url()).await;
    let mut history = vec![user("explain the build")];
    for turn in 0..3 {
        call(&proxy, &[], None, &history).await;
        history.extend([
            assistant(&format!("answer {turn}")),
            user(&format!("next {turn}")),
        ]);
    }
    call(&proxy, &[], None, &history).await;
    let ids = proxy.session_ids();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert!(ids[0].starts_with("chain-"), "{ids:?}");
    assert_eq!(stored(&proxy, &ids[0]), conversation(&history));
    assert_eq!(proxy.sessions()[0].host, Host::Other);

    // Another conversation is another session.
    let other = [user("something else entirely")];
    call(&proxy, &[], None, &other).await;
    assert_eq!(proxy.session_ids().len(), 2);
    let other_id = proxy
        .session_ids()
        .into_iter()
        .find(|id| *id != ids[0])
        .unwrap();
    assert_eq!(stored(&proxy, &other_id), conversation(&other));
    // And the first one still continues.
    history.extend([assistant("answer 3"), user("next 3")]);
    call(&proxy, &[], None, &history).await;
    assert_eq!(proxy.session_ids().len(), 2);
    assert_eq!(stored(&proxy, &ids[0]), conversation(&history));

    // An edit without an id forks too, found by the shared prefix of the chain.
    let before = proxy.messages(&ids[0]);
    let mut edited = history[..2].to_vec();
    edited.push(user("explain the tests instead"));
    call(&proxy, &[], None, &edited).await;
    let branch = format!("{}~1", ids[0]);
    assert!(
        proxy.session_ids().contains(&branch),
        "{:?}",
        proxy.session_ids()
    );
    assert_eq!(stored(&proxy, &branch), conversation(&edited));
    assert_eq!(proxy.messages(&ids[0]), before, "the original changed");
}

/// Pi on Anthropic names no session: two runs with the same first prompt under different
/// system prompts (another folder, another day's prompt) are two sessions, and each one's
/// follow-up continues its own; the same system prompt continues the one session.
#[tokio::test]
async fn without_an_id_the_system_prompt_scopes_the_chain() {
    let upstream = upstream().await;
    let proxy = Proxy::start(&upstream.url()).await;
    let pi = [("user-agent", "Anthropic/JS 0.91.1")];
    let with_system = |system: &str, messages: &[Value]| {
        let mut body = anthropic_request(messages);
        body["system"] = json!([{"type": "text", "text": system}]);
        body
    };
    let system_a = "You are an expert coding assistant operating inside pi.\nCurrent date: 2026-11-30\nCurrent working directory: /nonexistent/run-a";
    let system_b = "You are an expert coding assistant operating inside pi.\nCurrent date: 2026-11-30\nCurrent working directory: /nonexistent/run-b";
    let (one, two) = turns("Run echo hi with your bash tool, then say done.");

    for system in [system_a, system_b] {
        let reply = post(&proxy, "/v1/messages", &pi, &with_system(system, &one)).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
    }
    let ids = ids_with(&proxy, "chain-");
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids.iter().all(|id| !id.contains('~')), "a fork: {ids:?}");

    // Each run's second turn continues its own session; nothing new appears.
    for system in [system_b, system_a] {
        let reply = post(&proxy, "/v1/messages", &pi, &with_system(system, &two)).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
    }
    assert_eq!(proxy.session_ids().len(), 2, "{:?}", proxy.session_ids());
    for id in &ids {
        assert_eq!(stored(&proxy, id), conversation(&two), "{id}");
    }
}

/// A chain session named before scopes (`chain-<lane>`, written here through the explicit
/// header) is still found by its links and continued, not split into a new session.
#[tokio::test]
async fn a_chain_session_stored_before_scopes_still_continues() {
    let upstream = upstream().await;
    let proxy = Proxy::start(&upstream.url()).await;
    let (one, two) = turns("explain the build");
    call(
        &proxy,
        &[("x-magic-context-session", "chain-0123456789ab")],
        None,
        &one,
    )
    .await;
    call(&proxy, &[], None, &two).await;
    assert_eq!(proxy.session_ids(), ["chain-0123456789ab"]);
    assert_eq!(stored(&proxy, "chain-0123456789ab"), conversation(&two));
}

/// A system prompt that states an existing folder scopes by that folder's project: the
/// next day's prompt (only the date changed) still continues the one session.
#[tokio::test]
async fn without_an_id_the_project_outlives_the_date_in_the_prompt() {
    let upstream = upstream().await;
    let proxy = Proxy::start(&upstream.url()).await;
    let folder = tempfile::tempdir().unwrap();
    let system = |date: &str| {
        format!(
            "You are an expert coding assistant operating inside pi.\nCurrent date: {date}\nCurrent working directory: {}",
            folder.path().display()
        )
    };
    let (one, two) = turns("Run echo hi with your bash tool, then say done.");
    for (date, messages) in [("2026-11-30", &one), ("2026-12-01", &two)] {
        let mut body = anthropic_request(messages);
        body["system"] = json!([{"type": "text", "text": system(date)}]);
        let reply = post(&proxy, "/v1/messages", &[], &body).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
    }
    let ids = proxy.session_ids();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(stored(&proxy, &ids[0]), conversation(&two));
    assert!(
        proxy.sessions()[0].project.is_some(),
        "{:?}",
        proxy.sessions()
    );
}

/// A client id longer than a session id can hold (a client bug, or an id made of a whole
/// path) still names one session: its calls are answered and stored together, not refused.
#[tokio::test]
async fn a_client_id_too_long_for_a_session_id_still_names_one_session() {
    let upstream = upstream().await;
    let proxy = Proxy::start(&upstream.url()).await;
    let id = format!("opencode-{}", "0123456789".repeat(60));
    let headers = [("x-session-id", id.as_str())];
    let (one, two) = turns("task with a long id");
    call(&proxy, &headers, None, &one).await;
    call(&proxy, &headers, None, &two).await;
    let ids = ids_with(&proxy, "oc-opencode-0123456789");
    assert_eq!(ids.len(), 1, "{:?}", proxy.session_ids());
    assert_eq!(stored(&proxy, &ids[0]), conversation(&two));
}
