//! `dream` against a real `magic-context sim` configured as the historian's endpoint (the
//! dreamer asks the historian's models): a stale memory planted in the store is archived,
//! the run is recorded and listed by `dream --list` and `status`; a simulator answering
//! garbage changes nothing and fails the exit code.

use std::ffi::OsStr;
use std::path::Path;

use mc_core::breakpoints::CacheTtlChoice;
use mc_core::config::Config;
use mc_core::head::MemoryCategory;
use mc_core::pass_plan::PassKind;
use mc_core::{Host, Message, Part, ProjectId, Role, SessionId, joined_texts};
use mc_engine::{Engine, PassOutcome, PassRequest};
use mc_store::{MemorySource, MemoryStatus, NewMemory, Store};
use serde_json::json;

use crate::support::Machine;
use crate::support::servers::Server;

const STALE: &str = "Request parsing lives in src/old_parser.rs";
const TRUE: &str = "Retries are capped by MAX_RETRIES = 7 in src/net.rs";

/// A project folder, a store whose project memory holds one stale and one true memory,
/// the folder recorded as the proxy records it, and a simulator as the historian's model.
fn seeded(mode: &str) -> (Machine, Server, ProjectId) {
    let machine = Machine::fresh();
    let project_dir = machine.path("shop");
    std::fs::create_dir_all(project_dir.join("src")).unwrap();
    std::fs::write(
        project_dir.join("src/net.rs"),
        "pub const MAX_RETRIES: u32 = 7;\n",
    )
    .unwrap();
    let project = mc_proxy::identify_project(&project_dir).unwrap();
    let store = Store::open(machine.path("data").join("context.db")).unwrap();
    // Stored today, so `archive_stale_memories` has no reason to retire them.
    let today_ms = now_ms();
    store
        .write(|tx| {
            let folder = std::fs::canonicalize(&project_dir).unwrap();
            tx.note_project_folder(&project, &folder.to_string_lossy(), 1)?;
            for content in [STALE, TRUE] {
                let memory = NewMemory {
                    category: MemoryCategory::Architecture,
                    content,
                    source: MemorySource::Historian,
                    permanent: false,
                };
                tx.add_memory(&project, &memory, today_ms)?;
            }
            Ok(())
        })
        .unwrap();
    std::fs::write(
        machine.path("script.json"),
        r#"{"turns": [], "final_text": "ok"}"#,
    )
    .unwrap();
    let sim = Server::sim_dreamer(&machine.path("script.json"), mode);
    let file = machine.user_file();
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let config = json!({"historian": {
        "endpoint": sim.base_url,
        "wire": "anthropic",
        "model": "claude-haiku-4-5",
    }});
    std::fs::write(file, config.to_string()).unwrap();
    (machine, sim, project)
}

fn now_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    i64::try_from(since.as_millis()).unwrap()
}

fn env(data: &Path) -> [(&'static str, &OsStr); 1] {
    [("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())]
}

fn statuses(machine: &Machine, project: &ProjectId) -> Vec<(String, MemoryStatus)> {
    let store = Store::open(machine.path("data").join("context.db")).unwrap();
    let all = [MemoryStatus::Active, MemoryStatus::Archived];
    store
        .read(|tx| tx.memories(project, &all))
        .unwrap()
        .into_iter()
        .map(|memory| (memory.record.content, memory.record.status))
        .collect()
}

#[test]
fn dream_archives_the_stale_memory_and_records_the_run() {
    let (machine, sim, project) = seeded("honest");
    let data = machine.path("data");
    let report = machine
        .run(&["dream", "--json"], &env(&data))
        .success()
        .json();
    let tasks: Vec<&str> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["task"].as_str().unwrap())
        .collect();
    assert_eq!(
        tasks,
        [
            "consolidate_memories",
            "verify_memories",
            "archive_stale_memories",
            "rewrite_verbose_memories",
            "maintain_docs",
            "evaluate_smart_notes",
            "promote_user_profile",
            "pin_key_files"
        ],
        "{report}"
    );
    assert_eq!(
        report["runs"][4]["detail"],
        "the project has no ARCHITECTURE.md or STRUCTURE.md and its last month is quiet \
         (0 commits; one is proposed from 10 commits touching 20 files); nothing to maintain"
    );
    assert_eq!(report["runs"][2]["changes"], 0, "{report}");
    assert_eq!(
        report["runs"][0]["model_calls"], 0,
        "no near-duplicates, no call"
    );
    let run = &report["runs"][1];
    assert_eq!(run["outcome"], "done", "{report}");
    // The memory names a gone file, so the agent loop looks: the file's history (this
    // folder is no repository, so none), then the verdict.
    assert_eq!(
        (run["changes"].as_u64(), run["model_calls"].as_u64()),
        (Some(1), Some(2)),
        "{run}"
    );
    assert_eq!(run["model"], "claude-haiku-4-5");
    assert!(run["cost_usd"].as_f64().unwrap() > 0.0);
    assert_eq!(sim.ledger().len(), 2);
    assert_eq!(
        statuses(&machine, &project),
        [
            (STALE.to_owned(), MemoryStatus::Archived),
            (TRUE.to_owned(), MemoryStatus::Active),
        ]
    );

    let listed = machine
        .run(&["dream", "--list", "--json"], &env(&data))
        .success()
        .json();
    assert_eq!(listed["runs"][0]["task"], "pin_key_files");
    assert_eq!(listed["runs"][6]["id"], run["id"], "newest first");
    let status = machine
        .run(&["status", "--json"], &env(&data))
        .success()
        .json();
    assert_eq!(
        status["dreamer_runs"][4]["id"], report["runs"][3]["id"],
        "the five newest: {status}"
    );
    let text = machine
        .run(&["dream", "--list"], &env(&data))
        .success()
        .stdout;
    assert!(
        text.contains("verify_memories on [TMP]/shop: done, 1 changes, 2 calls"),
        "{text}"
    );
}

/// One engine pass of the project's session over `turns` messages at `at_ms`, as the proxy
/// would run it.
fn pass(machine: &Machine, project: &ProjectId, turns: usize, at_ms: u64) -> PassOutcome {
    let messages: Vec<Message> = (0..turns)
        .map(|turn| {
            let role = if turn % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            };
            Message::new(role, vec![Part::text(format!("turn {turn} ").repeat(20))])
        })
        .collect();
    let store = Store::open(machine.path("data").join("context.db")).unwrap();
    Engine::new(store, Config::default())
        .pass(&PassRequest {
            session: &SessionId::new("sess-dream").unwrap(),
            host: Host::ClaudeCode,
            mode: mc_core::SessionMode::Primary,
            spawned_by: None,
            continues: None,
            project: Some(project),
            model: "claude-sonnet-4-5",
            prefix_identity: "system",
            system_blocks: 1,
            messages: &messages,
            chain: None,
            now_ms: 1_795_952_640_000 + at_ms,
            usable_window: Some(200_000),
            fixed_tokens: 0,
            last_usage_tokens: None,
            last_usage_pass: None,
            operator_flush: false,
            reduce_tool: false,
            project_docs: &[],
            client_ttl: CacheTtlChoice::Default,
            count_text: &|text: &str| text.len() as u64 / 4,
        })
        .unwrap()
}

#[test]
fn an_archived_memory_leaves_m0_at_the_next_natural_fold_and_never_busts_by_itself() {
    let (machine, _sim, project) = seeded("honest");
    let data = machine.path("data");
    let first = pass(&machine, &project, 3, 0);
    let m0 = joined_texts(&first.messages[0].parts);
    assert!(m0.contains(STALE) && m0.contains(TRUE), "{m0}");

    machine
        .run(&["dream", "--task", "verify_memories"], &env(&data))
        .success();
    let hit = pass(&machine, &project, 5, 30_000);
    assert!(
        !hit.plan.may_mutate,
        "the dreamer's write busts nothing: {:?}",
        hit.plan
    );
    assert_eq!(hit.messages[0], first.messages[0]);

    // Idle past the cache's TTL: the next pass folds, and m[0] no longer states it.
    let fold = pass(&machine, &project, 7, 10 * 60_000);
    assert_eq!(fold.plan.kind, PassKind::HardFold, "{:?}", fold.plan);
    let m0 = joined_texts(&fold.messages[0].parts);
    assert!(!m0.contains(STALE) && m0.contains(TRUE), "{m0}");
}

#[test]
fn a_due_smart_note_reaches_m1_at_the_next_natural_rebuild_and_busts_nothing() {
    let (machine, _sim, project) = seeded("honest");
    let data = machine.path("data");
    let store = Store::open(data.join("context.db")).unwrap();
    store
        .write(|tx| {
            let note = mc_store::NewNote {
                project: Some(&project),
                session: None,
                content: "rotate the signing key",
                surface_condition: Some("on 2026-01-01"),
            };
            tx.add_note(&note, 1)
        })
        .unwrap();
    let first = pass(&machine, &project, 3, 0);
    let m1 = joined_texts(&first.messages[1].parts);
    assert!(!m1.contains("rotate the signing key"), "pending: {m1}");

    let report = machine
        .run(
            &["dream", "--task", "evaluate_smart_notes", "--json"],
            &env(&data),
        )
        .success()
        .json();
    assert_eq!(report["runs"][0]["changes"], 1, "{report}");
    let hit = pass(&machine, &project, 5, 30_000);
    assert!(
        !hit.plan.may_mutate,
        "surfacing busts nothing: {:?}",
        hit.plan
    );
    assert_eq!(hit.messages[1], first.messages[1]);

    let fold = pass(&machine, &project, 7, 10 * 60_000);
    assert_eq!(fold.plan.kind, PassKind::HardFold, "{:?}", fold.plan);
    let m1 = joined_texts(&fold.messages[1].parts);
    assert!(m1.contains("rotate the signing key"), "{m1}");
}

#[test]
fn a_garbage_answer_changes_nothing_and_fails_the_exit_code() {
    let (machine, _sim, project) = seeded("garbage");
    let data = machine.path("data");
    let run = machine.run(
        &["dream", "--task", "verify_memories", "--json"],
        &env(&data),
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(run.json()["runs"][0]["failure_class"], "invalid_answer");
    assert_eq!(
        statuses(&machine, &project),
        [
            (STALE.to_owned(), MemoryStatus::Active),
            (TRUE.to_owned(), MemoryStatus::Active),
        ]
    );
    let unknown = machine.run(&["dream", "--task", "sleep"], &env(&data));
    assert_eq!(unknown.code, Some(1));
    assert!(
        unknown.stderr.contains("unknown dreamer task `sleep`")
            && unknown
                .stderr
                .contains("promote_user_profile, pin_key_files"),
        "{}",
        unknown.stderr
    );
}

#[test]
fn archiving_runs_without_a_model_and_the_tasks_that_need_one_say_so() {
    let (machine, _sim, project) = seeded("honest");
    std::fs::write(machine.user_file(), "{}").unwrap();
    const FORGOTTEN: &str = "The build used make once.";
    let store = Store::open(machine.path("data").join("context.db")).unwrap();
    let year_ago_ms = now_ms() - 365 * 24 * 60 * 60 * 1000;
    store
        .write(|tx| {
            let memory = NewMemory {
                category: MemoryCategory::ProjectRules,
                content: FORGOTTEN,
                source: MemorySource::Agent,
                permanent: false,
            };
            tx.add_memory(&project, &memory, year_ago_ms)
        })
        .unwrap();
    let data = machine.path("data");
    let report = machine
        .run(&["dream", "--json"], &env(&data))
        .success()
        .json();
    let runs: Vec<(&str, &str, u64)> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| {
            (
                run["task"].as_str().unwrap(),
                run["outcome"].as_str().unwrap(),
                run["changes"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        runs,
        [
            ("consolidate_memories", "skipped", 0),
            ("verify_memories", "skipped", 0),
            ("archive_stale_memories", "done", 1),
            ("rewrite_verbose_memories", "skipped", 0),
            ("maintain_docs", "skipped", 0),
            ("evaluate_smart_notes", "done", 0),
            ("promote_user_profile", "done", 0),
            ("pin_key_files", "done", 0),
        ],
        "{report}"
    );
    assert_eq!(
        statuses(&machine, &project),
        [
            (STALE.to_owned(), MemoryStatus::Active),
            (TRUE.to_owned(), MemoryStatus::Active),
            (FORGOTTEN.to_owned(), MemoryStatus::Archived),
        ]
    );
    let named = machine.run(&["dream", "--task", "verify_memories"], &env(&data));
    assert_eq!(
        named.code,
        Some(1),
        "a task that needs a model says there is none"
    );
}

#[test]
fn show_proposals_prints_each_patch_and_where_it_is() {
    let (machine, _sim, project) = seeded("honest");
    let data = machine.path("data");
    let none = machine
        .run(&["dream", "--show-proposals"], &env(&data))
        .success()
        .stdout;
    assert_eq!(
        none,
        "no doc proposals under [TMP]/data/proposals (`magic-context dream --task maintain_docs` makes them)\n"
    );
    let dir = mc_dreamer::proposals_dir(&data, &project);
    mc_dreamer::write_proposal(
        &dir,
        "ARCHITECTURE.md",
        Some("# Architecture\nParsing: src/old_parser.rs\n"),
        "# Architecture\nParsing: src/parser.rs\n",
        "the parser moved",
    )
    .unwrap();
    let text = machine
        .run(&["dream", "--show-proposals"], &env(&data))
        .success()
        .stdout;
    let key = mc_dreamer::project_key(&project);
    assert_eq!(
        text,
        format!(
            "doc proposals under [TMP]/data/proposals (none is applied: apply one with `git apply FILE` in its project's folder):\n\
             \nARCHITECTURE.md in [TMP]/shop: [TMP]/data/proposals/{key}/ARCHITECTURE.md.patch\n\
             # the parser moved\n--- a/ARCHITECTURE.md\n+++ b/ARCHITECTURE.md\n@@ -1,2 +1,2 @@\n # Architecture\n-Parsing: src/old_parser.rs\n+Parsing: src/parser.rs\n"
        )
    );
    let json = machine
        .run(&["dream", "--show-proposals", "--json"], &env(&data))
        .success()
        .json();
    assert_eq!(json["proposals"][0]["project"], project.as_str());
    assert_eq!(json["proposals"][0]["doc"], "ARCHITECTURE.md");
    assert!(
        json["proposals"][0]["patch"]
            .as_str()
            .unwrap()
            .contains("+Parsing: src/parser.rs")
    );
    let both = machine.run(&["dream", "--show-proposals", "--list"], &env(&data));
    assert_eq!(both.code, Some(2), "{}", both.stderr);
}

#[test]
fn bench_dreamer_meets_the_targets_with_the_simulated_judge() {
    let machine = Machine::fresh();
    let report = machine
        .run(&["bench", "dreamer", "--json"], &[])
        .success()
        .json();
    assert!(report["files"].as_u64().unwrap() >= 200, "{report}");
    assert_eq!(
        (report["memories"].as_u64(), report["stale"].as_u64()),
        (Some(100), Some(20))
    );
    for score in ["stale_outcome", "merge_outcome"] {
        assert!(
            report[score]["recall"].as_f64().unwrap() >= 0.9,
            "{score}: {report}"
        );
    }
    assert_eq!(report["true_memories_lost"], 0, "{report}");
    assert!(report["cost_usd"].as_f64().unwrap() < 0.05, "{report}");
}
