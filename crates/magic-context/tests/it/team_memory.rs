//! `magic-context memory` and the dashboard's memory API with a team store, through the
//! built binary: what one machine adds, edits, archives or imports (by command or through
//! its proxy's dashboard) is the team's, and the other machine lists it; every output says
//! it worked on the team store (password redacted); the local tables stay empty; a team
//! store that does not answer queues the change and says so. The shared half needs
//! `MC_TEST_PG_URL`.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::servers::Server;
use crate::support::{Machine, Run};
use crate::team_serves::scratch_url;

const PASSWORD: &str = "hunter2-memory";

/// A machine of the team: its user file sets `team_store.url`.
struct Member {
    machine: Machine,
    data: PathBuf,
}

impl Member {
    fn new(url: &str) -> Self {
        let machine = Machine::fresh();
        let user = machine.user_file();
        std::fs::create_dir_all(user.parent().unwrap()).unwrap();
        std::fs::write(&user, json!({"team_store": {"url": url}}).to_string()).unwrap();
        let data = machine.path("data");
        Self { machine, data }
    }

    /// `memory ARGS --project PROJECT` on this machine.
    fn memory(&self, project: &Path, args: &[&str]) -> Run {
        let mut all = vec!["memory"];
        all.extend_from_slice(args);
        all.extend(["--project", project.to_str().unwrap()]);
        let env: [(&str, &OsStr); 1] = [("MAGIC_CONTEXT_DATA_DIR", self.data.as_os_str())];
        let run = self.machine.run(&all, &env);
        assert!(
            !run.stdout.contains(PASSWORD) && !run.stderr.contains(PASSWORD),
            "{}{}",
            run.stdout,
            run.stderr
        );
        run
    }

    /// How many rows this machine's own `memories` table holds.
    fn local_memories(&self) -> i64 {
        let conn = rusqlite::Connection::open(self.data.join("context.db")).unwrap();
        conn.query_row("SELECT COUNT(*) FROM memories", [], |row| row.get(0))
            .unwrap()
    }
}

fn contents(run: &Run) -> Vec<(String, String)> {
    run.json()["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|memory| {
            (
                memory["content"].as_str().unwrap().to_owned(),
                memory["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn the_memory_commands_work_on_the_teams_memories_and_say_so() {
    let Some(scratch) = scratch_url() else {
        return;
    };
    let (_, rest) = scratch.split_once('@').unwrap();
    let url = format!("postgres://mc:{PASSWORD}@{rest}");
    let shown = format!("postgres://mc:<redacted>@{rest}");
    let (alice, bob) = (Member::new(&url), Member::new(&url));
    // One project folder both machines name (a checkout both have).
    let project = alice.machine.path("work");
    let note = format!("these are the team's memories, in the team store at {shown}\n");

    let added = alice
        .memory(
            &project,
            &["add", "--category", "naming", "Handlers end in _handler."],
        )
        .success();
    let id = added
        .stdout
        .strip_prefix("added memory ")
        .and_then(|rest| rest.split(' ').next())
        .unwrap()
        .to_owned();
    assert_eq!(added.stdout, format!("added memory {id} (NAMING)\n{note}"));

    let listed = bob.memory(&project, &["list", "--json"]).success();
    assert_eq!(listed.json()["team_store"], shown.as_str());
    assert_eq!(listed.json()["team_store_answered"], true);
    assert_eq!(
        contents(&listed),
        [("Handlers end in _handler.".to_owned(), "active".to_owned())]
    );
    let text = bob.memory(&project, &["list"]).success();
    assert!(text.stdout.starts_with(&note), "{}", text.stdout);

    let edited = bob
        .memory(
            &project,
            &[
                "edit",
                &id,
                "--content",
                "Handlers end in _handler or _hook.",
            ],
        )
        .success();
    assert!(edited.stdout.ends_with(&note), "{}", edited.stdout);
    let archived = alice
        .memory(&project, &["archive", &id, "--json"])
        .success();
    assert_eq!(
        archived.json()["memory"]["content"],
        "Handlers end in _handler or _hook."
    );
    assert_eq!(archived.json()["memory"]["status"], "archived");
    assert_eq!(archived.json()["team_store"], shown.as_str());
    let gone = bob
        .memory(&project, &["list", "--status", "archived", "--json"])
        .success();
    assert_eq!(
        contents(&gone),
        [(
            "Handlers end in _handler or _hook.".to_owned(),
            "archived".to_owned()
        )]
    );

    // An export of alice's team memories imports into the team once.
    alice
        .memory(
            &project,
            &["add", "--category", "constraints", "No network in tests."],
        )
        .success();
    let file = alice.machine.path("team.jsonl");
    alice
        .memory(&project, &["export", "--out", file.to_str().unwrap()])
        .success();
    std::fs::write(
        &file,
        std::fs::read_to_string(&file).unwrap()
            + "{\"category\":\"NAMING\",\"content\":\"Crates are named mc-*.\"}\n",
    )
    .unwrap();
    let imported = bob
        .memory(&project, &["import", file.to_str().unwrap(), "--json"])
        .success();
    let imported: Value = imported.json();
    assert_eq!(
        (&imported["added"], &imported["merged"], &imported["queued"]),
        (&json!(1), &json!(1), &json!(0))
    );
    let again = bob
        .memory(&project, &["import", file.to_str().unwrap()])
        .success();
    assert_eq!(
        again.stdout,
        format!("imported 0 new memories, 2 already present\n{note}")
    );
    let live = alice.memory(&project, &["list", "--json"]).success();
    assert_eq!(contents(&live).len(), 2, "{:?}", contents(&live));

    // Neither machine's own table holds any of it.
    assert_eq!((alice.local_memories(), bob.local_memories()), (0, 0));

    // What bob's machine learnt before the team store moves over with --local.
    bob.memory(
        &project,
        &[
            "add",
            "--local",
            "--category",
            "naming",
            "Fixtures live in tests/fixtures.",
        ],
    )
    .success();
    assert_eq!(bob.local_memories(), 1);
    let old = bob.machine.path("old.jsonl");
    bob.memory(
        &project,
        &["export", "--local", "--out", old.to_str().unwrap()],
    )
    .success();
    let moved = bob
        .memory(&project, &["import", old.to_str().unwrap()])
        .success();
    assert_eq!(
        moved.stdout,
        format!("imported 1 new memories, 0 already present\n{note}")
    );
    let live = alice.memory(&project, &["list", "--json"]).success();
    assert_eq!(contents(&live).len(), 3, "{:?}", contents(&live));
}

#[test]
fn a_team_store_that_does_not_answer_queues_the_change_and_says_so() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://team:{PASSWORD}@127.0.0.1:{port}/mc");
    let carol = Member::new(&url);
    let project = carol.machine.path("work");
    let added = carol
        .memory(
            &project,
            &["add", "--category", "naming", "Tests end in _test."],
        )
        .success();
    assert!(
        added
            .stdout
            .starts_with("queued for the team store, which does not answer (write "),
        "{}",
        added.stdout
    );
    let listed = carol.memory(&project, &["list"]).success();
    assert!(
        listed.stdout.contains(&format!(
            "these are the team's memories as this machine last synced them: the team store \
             at postgres://team:<redacted>@127.0.0.1:{port}/mc does not answer"
        )),
        "{}",
        listed.stdout
    );
    assert_eq!(carol.local_memories(), 0);
    let queued = rusqlite::Connection::open(carol.data.join("context.db"))
        .unwrap()
        .query_row("SELECT COUNT(*) FROM team_outbox", [], |row| {
            row.get::<_, i64>(0)
        })
        .unwrap();
    assert_eq!(queued, 1, "the change waits in the queue");

    // Through the dashboard's API the change is accepted (202), not failed: a client that
    // retried would make it twice.
    let proxy = Server::serve(&carol.machine, "http://127.0.0.1:9", &carol.data, 200_000);
    let proxy_port: u16 = proxy.base_url.rsplit(':').next().unwrap().parse().unwrap();
    let token = dashboard_token(&carol, proxy_port);
    let id = mc_proxy::identify_project(&std::fs::canonicalize(&project).unwrap()).unwrap();
    let body =
        json!({"project": id.as_str(), "category": "NAMING", "content": "Jobs end in _job."});
    let answer = dashboard_call(
        proxy_port,
        ("POST", "/_magic-context/api/memories"),
        &token,
        &body.to_string(),
    );
    assert!(answer.starts_with("HTTP/1.1 202"), "{answer}");
    let answer = json_body(&answer);
    assert!(answer["queued"].is_string(), "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .starts_with("the team store does not answer: the change waits in the local queue"),
        "{answer}"
    );
}

/// The dashboard's access token of `member`'s proxy listening on `port`.
fn dashboard_token(member: &Member, port: u16) -> String {
    let env: [(&str, &OsStr); 1] = [("MAGIC_CONTEXT_DATA_DIR", member.data.as_os_str())];
    let printed = member
        .machine
        .run(&["dashboard", "--port", &port.to_string(), "--json"], &env)
        .success()
        .json();
    let login = printed["url"].as_str().unwrap();
    login[login.find("token=").unwrap() + "token=".len()..].to_owned()
}

/// One HTTP/1.1 request to the proxy at `port` with the dashboard's `token`; the whole answer.
fn dashboard_call(port: u16, (method, path): (&str, &str), token: &str, body: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nx-magic-context-token: {token}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

fn json_body(answer: &str) -> Value {
    let (_, body) = answer.split_once("\r\n\r\n").unwrap();
    serde_json::from_str(body).unwrap_or_else(|error| panic!("{error}: {answer}"))
}

#[test]
fn the_dashboards_memory_api_changes_the_teams_memories() {
    let Some(scratch) = scratch_url() else {
        return;
    };
    let (_, rest) = scratch.split_once('@').unwrap();
    let url = format!("postgres://mc:{PASSWORD}@{rest}");
    let (alice, bob) = (Member::new(&url), Member::new(&url));
    let project = alice.machine.path("work");
    let id = mc_proxy::identify_project(&std::fs::canonicalize(&project).unwrap()).unwrap();
    let proxy = Server::serve(&alice.machine, "http://127.0.0.1:9", &alice.data, 200_000);
    let port: u16 = proxy.base_url.rsplit(':').next().unwrap().parse().unwrap();
    let token = &dashboard_token(&alice, port);

    let body =
        json!({"project": id.as_str(), "category": "NAMING", "content": "Jobs end in _job."});
    let added = dashboard_call(
        port,
        ("POST", "/_magic-context/api/memories"),
        token,
        &body.to_string(),
    );
    // On a loaded machine the first write may find the server slow to answer: it is then
    // queued (202) and sent by the proxy's sync loop within a second or so.
    assert!(
        added.starts_with("HTTP/1.1 200") || added.starts_with("HTTP/1.1 202"),
        "{added}\n{}",
        proxy.stderr()
    );
    let active = [("Jobs end in _job.".to_owned(), "active".to_owned())];
    until_bob_lists(&bob, &project, "active", &active);
    // A queued change reaches this proxy's own cache with the sync round after it was sent,
    // which may come after Bob's command fetched it from the server.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let memory_id = loop {
        let listed_here = dashboard_call(
            port,
            (
                "GET",
                &format!("/_magic-context/api/memories?project={}", id.as_str()),
            ),
            token,
            "",
        );
        if let Some(id) = json_body(&listed_here)["memories"][0]["id"].as_u64() {
            break id;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the proxy's cache never showed the memory: {listed_here}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    };

    let archive = json!({"project": id.as_str()}).to_string();
    let path = format!("/_magic-context/api/memories/{memory_id}/archive");
    let archived = dashboard_call(port, ("POST", &path), token, &archive);
    assert!(
        archived.starts_with("HTTP/1.1 200") || archived.starts_with("HTTP/1.1 202"),
        "{archived}"
    );
    let archived_text = [("Jobs end in _job.".to_owned(), "archived".to_owned())];
    until_bob_lists(&bob, &project, "archived", &archived_text);
    let shown = dashboard_call(
        port,
        (
            "GET",
            &format!(
                "/_magic-context/api/memories?project={}&archived=true",
                id.as_str()
            ),
        ),
        token,
        "",
    );
    let shown = json_body(&shown);
    assert_eq!(
        shown["team_store"],
        format!("postgres://mc:<redacted>@{rest}")
    );
    assert_eq!(shown["memories"][0]["status"], "archived", "{shown}");
    let page = dashboard_call(
        port,
        (
            "GET",
            &format!("/_magic-context/ui/memories?project={}", id.as_str()),
        ),
        token,
        "",
    );
    assert!(
        page.contains("These are the team") && page.contains("in the team store at"),
        "{page}"
    );
    let gone = bob
        .memory(&project, &["list", "--status", "archived", "--json"])
        .success();
    assert_eq!(contents(&gone).len(), 1);
    assert_eq!(
        alice.local_memories(),
        0,
        "the proxy's own table is untouched"
    );
    assert!(!proxy.stderr().contains(PASSWORD));
}

/// Waits until Bob's `memory list --status STATUS` shows `expected` (at most 30 s): a change
/// the dashboard queued lands with the proxy's next sync.
fn until_bob_lists(bob: &Member, project: &Path, status: &str, expected: &[(String, String)]) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let listed = bob
            .memory(project, &["list", "--status", status, "--json"])
            .success();
        let shown = contents(&listed);
        if shown == expected {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "Bob still lists {shown:?}, not {expected:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
}
