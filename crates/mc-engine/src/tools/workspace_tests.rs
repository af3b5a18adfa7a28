//! The tools in a workspace: `ctx_memory` reads the memories other members share and
//! refuses to change them, naming their project; `ctx_search` finds them, marked.

use mc_core::config::Config;
use mc_core::head::MemoryCategory;
use mc_core::workspace::{WorkspaceMember, Workspaces};
use mc_core::{ProjectId, SessionId};
use mc_store::{MemorySource, MemoryStatus, NewMemory, Store};
use serde_json::json;

use super::*;

const NOW: i64 = 1_795_952_640_000;

struct Shop {
    engine: Engine,
    api: ProjectId,
    web: ProjectId,
    _dir: tempfile::TempDir,
}

/// `api` and `web` share ARCHITECTURE in workspace `shop`; `stranger` is in none.
fn shop() -> Shop {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("context.db")).unwrap();
    let api = ProjectId::new("git:api").unwrap();
    let web = ProjectId::new("git:web").unwrap();
    let member = |project: &ProjectId, root: &str| WorkspaceMember {
        workspace: "shop".to_owned(),
        project: project.clone(),
        root: root.to_owned(),
        categories: vec![MemoryCategory::Architecture],
    };
    let engine = Engine::new(store, Config::default()).with_workspaces(Workspaces::new(vec![
        member(&api, "~/src/api"),
        member(&web, "~/src/web"),
    ]));
    Shop {
        engine,
        api,
        web,
        _dir: dir,
    }
}

impl Shop {
    fn add(&self, project: &ProjectId, category: MemoryCategory, content: &str) -> u64 {
        self.engine
            .store()
            .write(|tx| {
                tx.add_memory(
                    project,
                    &NewMemory {
                        category,
                        content,
                        source: MemorySource::Agent,
                        permanent: false,
                    },
                    0,
                )
            })
            .unwrap()
            .id()
    }

    fn call(&self, tool: &str, args: serde_json::Value) -> ToolAnswer {
        let ctx = ToolContext {
            engine: &self.engine,
            project: Some(self.api.clone()),
            session: Some(SessionId::new("api-session").unwrap()),
            semantic: None,
            now_ms: NOW,
        };
        call_tool(&ctx, tool, args)
    }
}

#[test]
fn ctx_memory_reads_shared_memories_and_refuses_to_change_them() {
    let shop = shop();
    let own = shop.add(
        &shop.api,
        MemoryCategory::Architecture,
        "The API owns the orders table.",
    );
    let shared = shop.add(
        &shop.web,
        MemoryCategory::Architecture,
        "The web app caches prices for a minute.",
    );
    let private = shop.add(
        &shop.web,
        MemoryCategory::ConfigValues,
        "The web app listens on 3000.",
    );
    let stranger = ProjectId::new("git:stranger").unwrap();
    let foreign = shop.add(
        &stranger,
        MemoryCategory::Architecture,
        "A stranger's design.",
    );

    let refusal = |action: &str| {
        format!(
            "memory {shared} belongs to project ~/src/web (shared through workspace `shop`) and \
             is read-only here; {action} it from a session of that project, or write this \
             project's own memory with action write"
        )
    };
    let update = shop.call(
        "ctx_memory",
        json!({"action": "update", "ids": [shared], "content": "Prices are never cached."}),
    );
    assert_eq!(update, ToolAnswer::error(refusal("update")));
    // Several ids: nothing changes, not even the project's own memory.
    let archive = shop.call(
        "ctx_memory",
        json!({"action": "archive", "ids": [own, shared]}),
    );
    assert_eq!(archive, ToolAnswer::error(refusal("archive")));
    let merge = shop.call(
        "ctx_memory",
        json!({"action": "merge", "ids": [own, shared]}),
    );
    assert_eq!(merge, ToolAnswer::error(refusal("merge")));
    let live = [MemoryStatus::Active];
    let (api_live, web_live) = shop
        .engine
        .store()
        .read(|tx| {
            Ok((
                tx.memories(&shop.api, &live)?,
                tx.memories(&shop.web, &live)?,
            ))
        })
        .unwrap();
    assert_eq!(api_live.len(), 1);
    assert_eq!(web_live.len(), 2);
    assert_eq!(
        web_live[0].record.content,
        "The web app caches prices for a minute."
    );

    // Reading works, marked with the owner.
    let get = shop.call("ctx_memory", json!({"action": "get", "ids": [own, shared]}));
    assert_eq!(
        get,
        ToolAnswer::ok(format!(
            "[{own}] ARCHITECTURE (active): The API owns the orders table.\n\
             [{shared}] ARCHITECTURE (active, shared by ~/src/web, read-only): The web app \
             caches prices for a minute.\n"
        ))
    );
    let list = shop.call("ctx_memory", json!({"action": "list"}));
    assert!(!list.is_error);
    assert!(
        list.text.contains(&format!(
            "[{shared}] ARCHITECTURE (active, shared by ~/src/web"
        )),
        "{}",
        list.text
    );
    assert!(
        !list.text.contains("3000") && !list.text.contains("stranger"),
        "{}",
        list.text
    );

    // A category the workspace does not share, or a project outside it: not found, as ever.
    for id in [private, foreign] {
        let answer = shop.call(
            "ctx_memory",
            json!({"action": "update", "ids": [id], "content": "x"}),
        );
        assert!(answer.is_error, "{answer:?}");
        assert!(!answer.text.contains("belongs to"), "{}", answer.text);
        let answer = shop.call("ctx_memory", json!({"action": "get", "ids": [id]}));
        assert!(answer.is_error, "{answer:?}");
    }
}

#[test]
fn ctx_search_finds_shared_memories_marked_with_their_project() {
    let shop = shop();
    shop.add(
        &shop.api,
        MemoryCategory::Architecture,
        "Checkout retries the payment call twice.",
    );
    let shared = shop.add(
        &shop.web,
        MemoryCategory::Architecture,
        "The checkout page polls the payment status.",
    );
    shop.add(
        &shop.web,
        MemoryCategory::ConfigValues,
        "The checkout payment timeout is 30 seconds.",
    );
    let stranger = ProjectId::new("git:stranger").unwrap();
    shop.add(
        &stranger,
        MemoryCategory::Architecture,
        "A stranger's checkout payment flow.",
    );

    let answer = shop.call("ctx_search", json!({"query": "checkout payment"}));
    assert!(!answer.is_error, "{}", answer.text);
    let lines: Vec<&str> = answer
        .text
        .lines()
        .filter(|line| line.contains(" · "))
        .collect();
    assert_eq!(lines.len(), 2, "{}", answer.text);
    assert!(
        answer.text.contains(&format!(
            "memory · memory {shared} (ARCHITECTURE, shared by ~/src/web, read-only)\n   \
             The checkout page polls the payment status."
        )),
        "{}",
        answer.text
    );
    assert!(
        answer.text.contains("memory 1 (ARCHITECTURE)\n"),
        "{}",
        answer.text
    );
    assert!(
        !answer.text.contains("30 seconds") && !answer.text.contains("stranger"),
        "{}",
        answer.text
    );
}
