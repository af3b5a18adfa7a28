//! The dashboard over HTTP, on a real store with a session run through the proxy: who may
//! see it (the token, the `Host`), what the pages show, memories changed through the API
//! as the operator, and paths under `/_magic-context/` that are never forwarded.

use axum::http::{Method, StatusCode, header};
use mc_proxy::{PROJECT_HEADER, SESSION_HEADER, TOKEN_HEADER, load_or_create};
use serde_json::{Value, json};

use crate::support::{
    MODEL, Proxy, Reply, Upstream, anthropic_request, assistant, json_response, send, user,
};

pub(crate) const SESSION: &str = "dash-session-1";
pub(crate) const PROJECT: &str = "dash-project";

/// Tokens every call reports: uncached, written, read, output.
const USAGE: (u64, u64, u64, u64) = (100, 1_000, 5_000, 50);

/// Calls the seeded session makes.
const CALLS: usize = 3;

/// An upstream answering every call with [`USAGE`].
pub(crate) async fn upstream() -> Upstream {
    let (uncached, written, read, output) = USAGE;
    Upstream::replying(move |_, _| {
        json_response(
            200,
            &json!({
                "id": "msg_dash", "type": "message", "role": "assistant", "model": MODEL,
                "content": [{"type": "text", "text": "done"}],
                "stop_reason": "end_turn", "stop_sequence": null,
                "usage": {"input_tokens": uncached, "cache_creation_input_tokens": written,
                          "cache_read_input_tokens": read, "output_tokens": output}
            }),
        )
    })
    .await
}

/// A proxy with [`SESSION`] of [`CALLS`] calls in [`PROJECT`], its ledger written.
pub(crate) async fn seeded() -> (Upstream, Proxy) {
    let upstream = upstream().await;
    let proxy = Proxy::start(&upstream.url()).await;
    seed(&proxy).await;
    (upstream, proxy)
}

/// Makes [`SESSION`]'s [`CALLS`] calls in [`PROJECT`] through `proxy` and waits for their
/// ledger rows; the conversation so far, for a call that goes on with it.
pub(crate) async fn seed(proxy: &Proxy) -> Vec<Value> {
    let mut messages = vec![user("write the parser")];
    for turn in 0..CALLS {
        let reply = call(proxy, &messages).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        messages.push(assistant("done"));
        messages.push(user(&format!("and step {turn}")));
    }
    proxy.calls(SESSION, CALLS).await;
    messages
}

/// One call of [`SESSION`] in [`PROJECT`] with `messages`.
pub(crate) async fn call(proxy: &Proxy, messages: &[Value]) -> Reply {
    call_with(proxy, &anthropic_request(messages)).await
}

/// One call of [`SESSION`] in [`PROJECT`] with the request `body`.
pub(crate) async fn call_with(proxy: &Proxy, body: &Value) -> Reply {
    let headers = [
        ("content-type", "application/json"),
        (SESSION_HEADER, SESSION),
        (PROJECT_HEADER, PROJECT),
    ];
    send(
        Method::POST,
        &proxy.url("/v1/messages"),
        &headers,
        body.to_string(),
    )
    .await
}

/// The access token the proxy reads from its data directory.
pub(crate) fn token(proxy: &Proxy) -> String {
    load_or_create(proxy.data_dir())
        .unwrap()
        .as_str()
        .to_owned()
}

async fn get(proxy: &Proxy, path: &str, headers: &[(&str, &str)]) -> Reply {
    send(Method::GET, &proxy.url(path), headers, "").await
}

/// GET of the API with the token header, which must answer 200; its JSON.
pub(crate) async fn api(proxy: &Proxy, path: &str) -> Value {
    let reply = get(proxy, path, &[(TOKEN_HEADER, &token(proxy))]).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    reply.json()
}

/// GET with the token in the cookie, as a browser sends it after logging in.
async fn browse(proxy: &Proxy, path: &str) -> Reply {
    let cookie = format!("mc_dashboard={}", token(proxy));
    get(proxy, path, &[("cookie", &cookie)]).await
}

/// POSTs JSON to the API with the token header.
pub(crate) async fn change(proxy: &Proxy, path: &str, body: &Value) -> Reply {
    let token = token(proxy);
    let headers = [
        ("content-type", "application/json"),
        (TOKEN_HEADER, token.as_str()),
    ];
    send(Method::POST, &proxy.url(path), &headers, body.to_string()).await
}

#[tokio::test]
async fn without_the_token_nothing_is_shown() {
    let (_upstream, proxy) = seeded().await;
    for path in [
        "/_magic-context/ui/",
        "/_magic-context/api/sessions",
        &format!("/_magic-context/ui/sessions/{SESSION}"),
        &format!("/_magic-context/api/sessions/{SESSION}"),
        &format!("/_magic-context/api/memories?project={PROJECT}"),
    ] {
        for headers in [
            vec![],
            vec![("cookie", "mc_dashboard=0000")],
            vec![(TOKEN_HEADER, "not-the-token")],
        ] {
            let reply = get(&proxy, path, &headers).await;
            assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{path} {headers:?}");
            assert!(!reply.text().contains(SESSION), "{path}: {}", reply.text());
            assert!(!reply.text().contains(PROJECT), "{path}: {}", reply.text());
            assert_eq!(reply.headers[header::CACHE_CONTROL], "no-store");
            assert!(reply.headers.get("access-control-allow-origin").is_none());
        }
    }
    let wrong = get(&proxy, "/_magic-context/ui/login?token=guess", &[]).await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert!(wrong.headers.get(header::SET_COOKIE).is_none());
}

#[tokio::test]
async fn the_token_file_is_private() {
    let (_upstream, proxy) = seeded().await;
    // The proxy creates the token when the dashboard is first asked for.
    assert_eq!(
        get(&proxy, "/_magic-context/ui/", &[]).await.status,
        StatusCode::UNAUTHORIZED
    );
    let path = proxy.data_dir().join(mc_proxy::TOKEN_FILE);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert_eq!(
        std::fs::read_to_string(&path).unwrap().trim(),
        token(&proxy)
    );
}

#[tokio::test]
async fn the_login_url_sets_a_cookie_that_opens_the_pages() {
    let (_upstream, proxy) = seeded().await;
    let login = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(proxy.url(&format!("/_magic-context/ui/login?token={}", token(&proxy))))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), StatusCode::SEE_OTHER);
    assert_eq!(login.headers()[header::LOCATION], "/_magic-context/ui/");
    let cookie = login.headers()[header::SET_COOKIE].to_str().unwrap();
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Strict"), "{cookie}");
    let pair = cookie.split(';').next().unwrap();
    let page = get(&proxy, "/_magic-context/ui/", &[("cookie", pair)]).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text());
}

#[tokio::test]
async fn the_sessions_page_lists_the_session_with_its_figures() {
    let (_upstream, proxy) = seeded().await;
    let (uncached, written, read, output) = USAGE;
    let price = mc_sim::model_spec(MODEL).price;
    let cost = CALLS as f64 * price.cost_usd(uncached, written, 0, read, output);

    let token = token(&proxy);
    let api = get(
        &proxy,
        "/_magic-context/api/sessions",
        &[(TOKEN_HEADER, &token)],
    )
    .await;
    assert_eq!(api.status, StatusCode::OK, "{}", api.text());
    let sessions = api.json()["sessions"].as_array().unwrap().clone();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let row = &sessions[0];
    assert_eq!(row["id"], SESSION);
    assert_eq!(row["project"], PROJECT);
    assert_eq!(row["model"], MODEL);
    assert_eq!(row["calls"], CALLS);
    assert_eq!(row["mode"], "primary");
    assert_eq!(row["spawned_by"], serde_json::Value::Null);
    assert_eq!(row["context_used_tokens"], uncached + written + read);
    assert!(
        (row["cost_usd"].as_f64().unwrap() - cost).abs() < 1e-9,
        "{row}"
    );

    let page = browse(&proxy, "/_magic-context/ui/").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.headers[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let html = page.text();
    for expected in [
        SESSION,
        PROJECT,
        MODEL,
        "6,100 / ",
        &format!("${cost:.2}"),
        "<td class=\"mode\">primary</td>",
    ] {
        assert!(html.contains(expected), "no `{expected}` in {html}");
    }

    let chosen = browse(
        &proxy,
        &format!("/_magic-context/ui/?project={PROJECT}&sort=cost"),
    )
    .await;
    assert!(chosen.text().contains("data-id=\"dash-session-1\""));
    let other = browse(&proxy, "/_magic-context/ui/?project=another&sort=cost").await;
    assert_eq!(other.status, StatusCode::OK);
    assert!(!other.text().contains("data-id=\"dash-session-1\""));
    let bad_sort = browse(&proxy, "/_magic-context/ui/?sort=nonsense").await;
    assert_eq!(bad_sort.status, StatusCode::BAD_REQUEST);
    assert!(
        bad_sort.text().contains("unknown variant `nonsense`"),
        "{}",
        bad_sort.text()
    );
    let bad_api = get(
        &proxy,
        "/_magic-context/api/sessions?sort=nonsense",
        &[(TOKEN_HEADER, &token)],
    )
    .await;
    assert_eq!(bad_api.status, StatusCode::BAD_REQUEST);
    assert!(
        bad_api.json()["error"]
            .as_str()
            .unwrap()
            .contains("query string")
    );
}

#[tokio::test]
async fn the_session_page_draws_one_bar_per_call() {
    let (_upstream, proxy) = seeded().await;
    let page = browse(&proxy, &format!("/_magic-context/ui/sessions/{SESSION}")).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text());
    let html = page.text();
    assert_eq!(html.matches("<g class=\"call\"").count(), CALLS, "{html}");
    let busts = html.matches("<path class=\"bust\"").count();
    assert!(
        (1..CALLS).contains(&busts),
        "the first pass busts, the next hit: {html}"
    );
    assert!(html.contains("write the parser"), "the raw log: {html}");

    let missing = browse(&proxy, "/_magic-context/ui/sessions/no-such-session").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    let log = get(
        &proxy,
        &format!("/_magic-context/api/sessions/{SESSION}/messages?around=1"),
        &[(TOKEN_HEADER, &token(&proxy))],
    )
    .await;
    assert_eq!(log.status, StatusCode::OK, "{}", log.text());
    assert_eq!(log.json()["start"], 0);
}

#[tokio::test]
async fn a_memory_added_through_the_api_is_listed_as_an_operator_edit() {
    let (_upstream, proxy) = seeded().await;
    let added = change(
        &proxy,
        "/_magic-context/api/memories",
        &json!({"project": PROJECT, "category": "PROJECT_RULES",
                "content": "Run the tests with --no-fail-fast"}),
    )
    .await;
    assert_eq!(added.status, StatusCode::OK, "{}", added.text());
    let id = added.json()["id"].as_u64().unwrap();
    assert_eq!(added.json()["source"], "operator");

    let edited = change(
        &proxy,
        &format!("/_magic-context/api/memories/{id}"),
        &json!({"project": PROJECT, "content": "Run the tests with --no-fail-fast, always"}),
    )
    .await;
    assert_eq!(edited.status, StatusCode::OK, "{}", edited.text());

    let listed = get(
        &proxy,
        &format!("/_magic-context/api/memories?project={PROJECT}&q=always"),
        &[(TOKEN_HEADER, &token(&proxy))],
    )
    .await;
    let listed = listed.json();
    assert_eq!(
        listed["memories"][0]["content"],
        "Run the tests with --no-fail-fast, always"
    );
    let log: Vec<(String, String)> = listed["log"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["memory_id"] == id)
        .map(|entry| {
            let field = |name: &str| entry[name].as_str().unwrap_or_default().to_owned();
            (field("action"), field("actor"))
        })
        .collect();
    assert_eq!(
        log,
        [
            ("changed".to_owned(), "operator".to_owned()),
            ("added".to_owned(), "operator".to_owned())
        ]
    );

    let page = browse(
        &proxy,
        &format!("/_magic-context/ui/memories?project={PROJECT}"),
    )
    .await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.text().contains("--no-fail-fast, always"),
        "{}",
        page.text()
    );

    let archived = change(
        &proxy,
        &format!("/_magic-context/api/memories/{id}/archive"),
        &json!({"project": PROJECT}),
    )
    .await;
    assert_eq!(archived.json()["status"], "archived");
    let unknown = change(
        &proxy,
        "/_magic-context/api/memories",
        &json!({"project": PROJECT, "category": "GOSSIP", "content": "x"}),
    )
    .await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST);
    assert!(
        unknown.json()["error"]
            .as_str()
            .unwrap()
            .contains("PROJECT_RULES")
    );
}

#[tokio::test]
async fn a_change_needs_the_token_header_not_only_the_cookie() {
    let (_upstream, proxy) = seeded().await;
    let cookie = format!("mc_dashboard={}", token(&proxy));
    let body = json!({"project": PROJECT, "category": "PROJECT_RULES", "content": "forged"});
    let reply = send(
        Method::POST,
        &proxy.url("/_magic-context/api/memories"),
        &[("content-type", "application/json"), ("cookie", &cookie)],
        body.to_string(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.text());
    let stored = proxy
        .store()
        .read(|tx| {
            tx.memories(
                &mc_core::ProjectId::new(PROJECT).unwrap(),
                mc_store::MemoryStatus::ALL,
            )
        })
        .unwrap();
    assert!(stored.is_empty(), "{stored:?}");
}

#[tokio::test]
async fn a_foreign_host_is_refused() {
    let (_upstream, proxy) = seeded().await;
    let token = token(&proxy);
    let port = proxy.url("").rsplit(':').next().unwrap().to_owned();
    for host in [
        format!("rebind.attacker.example:{port}"),
        format!("192.168.1.7:{port}"),
    ] {
        let reply = get(
            &proxy,
            "/_magic-context/api/sessions",
            &[("host", &host), (TOKEN_HEADER, &token)],
        )
        .await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{host}");
        assert!(!reply.text().contains(SESSION), "{host}: {}", reply.text());
    }
    let page = get(
        &proxy,
        "/_magic-context/ui/",
        &[
            ("origin", "http://attacker.example"),
            (TOKEN_HEADER, &token),
        ],
    )
    .await;
    assert_eq!(page.status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn unknown_paths_under_the_prefix_are_never_forwarded() {
    let (upstream, proxy) = seeded().await;
    let before = upstream.seen().len();
    for (method, path) in [
        (Method::GET, "/_magic-context/"),
        (Method::GET, "/_magic-context/secrets"),
        (Method::POST, "/_magic-context/v1/messages"),
        (Method::GET, "/_magic-context/ui/no-such-page"),
        (Method::GET, "/_magic-context/api/no-such-route"),
    ] {
        let reply = send(method.clone(), &proxy.url(path), &[], "").await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{method} {path}");
        assert!(
            reply.json()["error"]
                .as_str()
                .unwrap()
                .contains("/_magic-context/ui/"),
            "{}",
            reply.text()
        );
    }
    assert_eq!(
        upstream.seen().len(),
        before,
        "nothing reached the upstream"
    );
    let health = get(&proxy, mc_proxy::HEALTH_PATH, &[]).await;
    assert_eq!(
        health.status,
        StatusCode::OK,
        "the health route still answers"
    );
}

#[tokio::test]
async fn the_runs_page_lists_the_historians_runs_with_their_session_and_cost() {
    let (_upstream, proxy) = seeded().await;
    let session = mc_core::SessionId::new(SESSION).unwrap();
    proxy
        .store()
        .write(|tx| {
            tx.record_historian_run(
                &session,
                &mc_store::HistorianRun {
                    started_ms: 1_000,
                    finished_ms: 5_000,
                    chunk_start: 0,
                    chunk_end: 5,
                    outcome: "published".to_owned(),
                    model: Some("claude-haiku-4-5".to_owned()),
                    calls: 1,
                    input_tokens: 1_000_000,
                    output_tokens: 0,
                    compartments: 2,
                    detail: None,
                },
            )
        })
        .unwrap();
    let unauthorised = get(&proxy, "/_magic-context/api/runs", &[]).await;
    assert_eq!(unauthorised.status, StatusCode::UNAUTHORIZED);

    let token = token(&proxy);
    let api = get(
        &proxy,
        "/_magic-context/api/runs",
        &[(TOKEN_HEADER, &token)],
    )
    .await;
    assert_eq!(api.status, StatusCode::OK, "{}", api.text());
    let runs = api.json();
    let historian = runs["historian"].as_array().unwrap();
    assert_eq!(historian.len(), 1, "{runs}");
    assert_eq!(historian[0]["session"], SESSION);
    assert_eq!(historian[0]["outcome"], "published");
    assert_eq!(historian[0]["compartments"], 2);
    // A million prompt tokens at the small model's list price.
    let expected = mc_core::models::model_spec("claude-haiku-4-5")
        .price
        .cost_usd(1_000_000, 0, 0, 0, 0);
    assert!((historian[0]["cost_usd"].as_f64().unwrap() - expected).abs() < 1e-9);
    assert!(expected > 0.0);
    assert_eq!(runs["dreamer"], json!([]));

    let page = browse(&proxy, "/_magic-context/ui/runs").await;
    assert_eq!(page.status, StatusCode::OK);
    let html = page.text();
    for expected in [
        &format!("href=\"/_magic-context/ui/sessions/{SESSION}\""),
        "published",
        "No dreamer run yet.",
    ] {
        assert!(html.contains(expected), "no `{expected}` in {html}");
    }
}

#[tokio::test]
async fn one_search_finds_the_sessions_messages_and_the_projects_memories() {
    let (_upstream, proxy) = seeded().await;
    let added = change(
        &proxy,
        "/_magic-context/api/memories",
        &json!({"project": PROJECT, "category": "PROJECT_RULES",
                "content": "The parser rejects tabs"}),
    )
    .await;
    assert_eq!(added.status, StatusCode::OK, "{}", added.text());
    let unauthorised = get(&proxy, "/_magic-context/api/search?q=parser", &[]).await;
    assert_eq!(unauthorised.status, StatusCode::UNAUTHORIZED);

    let token = token(&proxy);
    let search = |path: String| {
        let token = token.clone();
        let proxy = &proxy;
        async move { get(proxy, &path, &[(TOKEN_HEADER, &token)]).await }
    };
    let found = search(format!(
        "/_magic-context/api/search?q=parser&project={PROJECT}"
    ))
    .await;
    assert_eq!(found.status, StatusCode::OK, "{}", found.text());
    let found = found.json();
    let sources: Vec<&str> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|hit| hit["source"].as_str())
        .collect();
    assert!(sources.contains(&"memory"), "{found}");
    assert!(sources.contains(&"message"), "{found}");
    let message = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|hit| hit["source"] == "message")
        .unwrap();
    assert_eq!(message["place"]["session"], SESSION, "{found}");

    // Another project holds none of it; a bad limit and an empty query say what is wrong.
    let elsewhere = search("/_magic-context/api/search?q=parser&project=other".to_owned()).await;
    assert_eq!(elsewhere.json()["results"], json!([]));
    let too_many = search(format!(
        "/_magic-context/api/search?q=parser&limit=5000&project={PROJECT}"
    ))
    .await;
    assert_eq!(too_many.status, StatusCode::BAD_REQUEST);
    assert!(too_many.text().contains("limit"), "{}", too_many.text());
    let empty = search("/_magic-context/api/search?q=%20".to_owned()).await;
    assert_eq!(empty.status, StatusCode::BAD_REQUEST, "{}", empty.text());

    let page = browse(
        &proxy,
        &format!("/_magic-context/ui/search?q=parser&project={PROJECT}"),
    )
    .await;
    assert_eq!(page.status, StatusCode::OK);
    let html = page.text();
    for expected in [
        &format!("href=\"/_magic-context/ui/sessions/{SESSION}?around="),
        "The parser rejects tabs",
        "id=\"search-results\"",
    ] {
        assert!(html.contains(expected), "no `{expected}` in {html}");
    }
}

#[tokio::test]
async fn the_user_file_is_edited_only_with_text_that_loads() {
    let upstream = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("magic-context/magic-context.jsonc");
    let mut settings = crate::support::settings(&upstream.url());
    settings.user_config = Some(file.clone());
    let proxy = Proxy::start_with(settings).await;
    let token = token(&proxy);
    let headers = [(TOKEN_HEADER, token.as_str())];
    let read = || get(&proxy, "/_magic-context/api/config", &headers);

    let before = read().await.json();
    assert_eq!(before["files"][0]["layer"], "user");
    assert_eq!(before["files"][0]["exists"], false);

    for (bad, why) in [
        ("{\"pass\": ", "syntax"),
        (
            "{\"pass\": {\"execute_threshold_percent\": 900}}",
            "execute_threshold_percent",
        ),
    ] {
        let refused = change(
            &proxy,
            "/_magic-context/api/config",
            &json!({"layer": "user", "text": bad}),
        )
        .await;
        assert_eq!(
            refused.status,
            StatusCode::BAD_REQUEST,
            "{}",
            refused.text()
        );
        let message = refused.json()["error"].as_str().unwrap().to_owned();
        assert!(message.starts_with("not saved: "), "{message}");
        assert!(message.to_lowercase().contains(why), "{message}");
        assert!(!file.exists(), "a refused edit wrote the file");
    }

    let text = "// smaller windows here\n{\"pass\": {\"execute_threshold_percent\": 60}}\n";
    let saved = change(
        &proxy,
        "/_magic-context/api/config",
        &json!({"layer": "user", "text": text}),
    )
    .await;
    assert_eq!(saved.status, StatusCode::OK, "{}", saved.text());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    let after = read().await.json();
    let setting = after["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|setting| setting["key"] == "pass.execute_threshold_percent")
        .unwrap()
        .clone();
    assert_eq!(setting["value"], 60);
    assert_eq!(setting["source"], file.display().to_string());

    let unknown = get(
        &proxy,
        "/_magic-context/api/config?project=nowhere",
        &[(TOKEN_HEADER, &token)],
    )
    .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{}", unknown.text());
    let page = browse(&proxy, "/_magic-context/ui/config").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.text().contains("smaller windows here"),
        "{}",
        page.text()
    );
}

/// The export is the project's live memories as `memory export` writes them, one JSON line
/// each, as a file to save; an archived memory is left out, and a missing project is a 400.
#[tokio::test]
async fn the_memories_export_is_the_cli_export_format() {
    let (_upstream, proxy) = seeded().await;
    for content in ["Tabs, never spaces", "Retire the v1 parser"] {
        let added = change(
            &proxy,
            "/_magic-context/api/memories",
            &json!({"project": PROJECT, "category": "PROJECT_RULES", "content": content}),
        )
        .await;
        assert_eq!(added.status, StatusCode::OK, "{}", added.text());
    }
    let listed = get(
        &proxy,
        &format!("/_magic-context/api/memories?project={PROJECT}&q=retire"),
        &[(TOKEN_HEADER, &token(&proxy))],
    )
    .await;
    let retired = listed.json()["memories"][0]["id"].as_u64().unwrap();
    let archived = change(
        &proxy,
        &format!("/_magic-context/api/memories/{retired}/archive"),
        &json!({"project": PROJECT}),
    )
    .await;
    assert_eq!(archived.status, StatusCode::OK, "{}", archived.text());

    let export = browse(
        &proxy,
        &format!("/_magic-context/api/memories/export?project={PROJECT}"),
    )
    .await;
    assert_eq!(export.status, StatusCode::OK, "{}", export.text());
    assert_eq!(
        export.headers[header::CONTENT_DISPOSITION],
        format!("attachment; filename=\"memories-{PROJECT}.jsonl\"")
    );
    let lines: Vec<Value> = export
        .text()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["content"], "Tabs, never spaces");
    assert_eq!(lines[0]["category"], "PROJECT_RULES");
    assert_eq!(lines[0]["source"], "operator");
    assert!(
        lines[0].get("id").is_none(),
        "store ids stay in their store"
    );

    let unnamed = browse(&proxy, "/_magic-context/api/memories/export").await;
    assert_eq!(
        unnamed.status,
        StatusCode::BAD_REQUEST,
        "{}",
        unnamed.text()
    );
}

/// A session's page says what its prompt is made of: the engine's parts as its last pass
/// estimated them, and the system prompt and tools as what the provider counted beyond.
#[tokio::test]
async fn a_sessions_prompt_is_shown_by_its_parts() {
    let (_upstream, proxy) = seeded().await;
    let detail = api(&proxy, &format!("/_magic-context/api/sessions/{SESSION}")).await;
    let parts = &detail["composition"];
    let (uncached, written, read, _) = USAGE;
    assert_eq!(
        parts["reported_tokens"],
        uncached + written + read,
        "{parts}"
    );
    let engine =
        ["m0_tokens", "m1_tokens", "tail_tokens"].map(|part| parts[part].as_u64().unwrap());
    assert!(engine[0] > 0 && engine[2] > 0, "{parts}");
    assert_eq!(
        parts["system_and_tools_tokens"].as_u64().unwrap(),
        (uncached + written + read).saturating_sub(engine.iter().sum()),
        "{parts}"
    );
    let page = browse(&proxy, &format!("/_magic-context/ui/sessions/{SESSION}")).await;
    assert!(
        page.text().contains("id=\"prompt-parts\""),
        "{}",
        page.text()
    );
}
