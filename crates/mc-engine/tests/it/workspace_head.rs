//! Workspaces in the head: a member's `m[0]` shows what the other members share (marked
//! with their project, after its own memories, within the memory budget), byte-stable from
//! one render to the next; another project's changes wait for a natural rebuild, except an
//! operator's edit of a shared memory `m[0]` shows, which folds like an edit of an own one.

use mc_core::config::{Config, Tokens};
use mc_core::head::{M1_PLACEHOLDER, MemoryCategory};
use mc_core::pass_plan::PassKind;
use mc_core::workspace::{WorkspaceMember, Workspaces};
use mc_core::{Host, Message, ProjectId};
use mc_store::{MemoryEdit, MemorySource, NewMemory, NewSession};

use crate::support::{Call, Harness, MODEL, START_MS, conversation};

/// Past the 5-minute cache TTL: the next pass is a hard fold, the natural rebuild.
const IDLE_MS: u64 = 6 * 60 * 1000;

fn text_of(message: &Message) -> String {
    mc_core::joined_texts(&message.parts)
}

fn project(name: &str) -> ProjectId {
    ProjectId::new(name).unwrap()
}

fn add(
    harness: &Harness,
    project: &ProjectId,
    category: MemoryCategory,
    content: &str,
    source: MemorySource,
) -> u64 {
    harness
        .engine
        .store()
        .write(|tx| {
            tx.add_memory(
                project,
                &NewMemory {
                    category,
                    content,
                    source,
                    permanent: false,
                },
                0,
            )
        })
        .unwrap()
        .id()
}

/// `git:api` (the session's project) and `git:web` share ARCHITECTURE and NAMING in
/// workspace `shop`; `git:stranger` is in no workspace.
fn shop(config: Config) -> Harness {
    let member = |id: &str, root: &str| WorkspaceMember {
        workspace: "shop".to_owned(),
        project: project(id),
        root: root.to_owned(),
        categories: vec![MemoryCategory::Architecture, MemoryCategory::Naming],
    };
    let harness = Harness::with_config(config).with_workspaces(Workspaces::new(vec![
        member("git:api", "~/src/shop-api"),
        member("git:web", "~/src/shop-web"),
    ]));
    harness
        .engine
        .store()
        .write(|tx| {
            tx.upsert_session(
                &NewSession {
                    id: harness.session.clone(),
                    host: Host::ClaudeCode,
                    project: Some(project("git:api")),
                },
                0,
            )
        })
        .unwrap();
    harness
}

fn memory_sections(m0: &str) -> String {
    m0.split("\n\n")
        .filter(|section| section.contains("-memory"))
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[test]
fn m0_shows_shared_memories_marked_and_changes_wait_for_a_natural_rebuild() {
    let harness = shop(Config::default());
    let (api, web, stranger) = (
        project("git:api"),
        project("git:web"),
        project("git:stranger"),
    );
    use MemoryCategory::{Architecture, ConfigValues, Naming, ProjectRules};
    add(
        &harness,
        &api,
        ProjectRules,
        "Never push to main.",
        MemorySource::Operator,
    );
    let orders = add(
        &harness,
        &web,
        Architecture,
        "Orders are written by the API only.",
        MemorySource::Historian,
    );
    add(
        &harness,
        &web,
        ConfigValues,
        "The web app listens on 3000.",
        MemorySource::Agent,
    );
    add(
        &harness,
        &web,
        Naming,
        "Endpoints are plural nouns.",
        MemorySource::Agent,
    );
    add(
        &harness,
        &stranger,
        Architecture,
        "A stranger's design.",
        MemorySource::Agent,
    );

    let messages = conversation(20);
    let call = |end: usize, at: u64, flush: bool| Call {
        model: MODEL,
        messages: &messages[..end],
        now_ms: START_MS + at,
        usable_window: 1_000_000,
        last_usage_tokens: None,
        operator_flush: flush,
    };
    let first = harness.pass(&call(3, 0, false)).unwrap();
    let m0 = text_of(&first.messages[0]);
    insta::assert_snapshot!(memory_sections(&m0));
    assert!(
        !m0.contains("listens on 3000"),
        "not a shared category: {m0}"
    );
    assert!(!m0.contains("stranger"), "{m0}");

    // The other project learns something: no bust, and not even a soft bust shows it.
    let learned = add(
        &harness,
        &web,
        Architecture,
        "Carts expire after a day.",
        MemorySource::Historian,
    );
    let hit = harness.pass(&call(5, 10_000, false)).unwrap();
    assert!(!hit.plan.may_mutate, "{:?}", hit.plan);
    assert_eq!(hit.messages[..2], first.messages[..2]);
    let soft = harness.pass(&call(7, 20_000, true)).unwrap();
    assert_eq!(soft.plan.kind, PassKind::SoftBust, "{:?}", soft.plan);
    assert_eq!(soft.messages[0], first.messages[0]);
    assert_eq!(text_of(&soft.messages[1]), M1_PLACEHOLDER);

    // The next natural rebuild (the cache died while idle) shows it.
    let fold = harness.pass(&call(9, 20_000 + IDLE_MS, false)).unwrap();
    assert_eq!(fold.plan.kind, PassKind::HardFold, "{:?}", fold.plan);
    let folded = text_of(&fold.messages[0]);
    assert!(
        folded.contains(&format!("- #{learned} Carts expire after a day.\n")),
        "{folded}"
    );

    // A rebuild with nothing new renders the same bytes.
    let again = harness
        .pass(&call(11, 20_000 + 2 * IDLE_MS, false))
        .unwrap();
    assert_eq!(again.plan.kind, PassKind::HardFold, "{:?}", again.plan);
    assert_eq!(again.messages[0], fold.messages[0]);

    // The operator rewrites a shared memory m[0] states: a cache hit keeps the old bytes,
    // the next pass that may change bytes folds the new wording in.
    harness
        .engine
        .store()
        .write(|tx| {
            tx.edit_memory(
                &web,
                orders,
                MemoryEdit {
                    category: None,
                    content: Some("Orders are written by the orders service only."),
                },
                MemorySource::Operator,
                0,
            )
        })
        .unwrap();
    let at = 20_000 + 2 * IDLE_MS;
    let hit = harness.pass(&call(13, at + 10_000, false)).unwrap();
    assert!(!hit.plan.may_mutate, "{:?}", hit.plan);
    assert_eq!(hit.messages[0], again.messages[0]);
    let edit = harness.pass(&call(15, at + 20_000, true)).unwrap();
    assert_eq!(edit.plan.kind, PassKind::HardFold, "{:?}", edit.plan);
    assert!(
        text_of(&edit.messages[0]).contains(&format!(
            "- #{orders} Orders are written by the orders service only.\n"
        )),
        "{}",
        text_of(&edit.messages[0])
    );
    // Folded once: the edit is not news any more.
    let after = harness.pass(&call(17, at + 30_000, true)).unwrap();
    assert_eq!(after.plan.kind, PassKind::SoftBust, "{:?}", after.plan);
}

#[test]
fn shared_memories_are_the_first_left_out_of_a_short_budget() {
    let mut config = Config::default();
    config.memory.injection_budget_tokens = Tokens(40);
    let harness = shop(config);
    let (api, web) = (project("git:api"), project("git:web"));
    let own = add(
        &harness,
        &api,
        MemoryCategory::Naming,
        "Handlers are named after their route.",
        MemorySource::Agent,
    );
    let shared = add(
        &harness,
        &web,
        MemoryCategory::Naming,
        "Components are PascalCase.",
        MemorySource::Agent,
    );
    let messages = conversation(3);
    let call = Call {
        model: MODEL,
        messages: &messages,
        now_ms: START_MS,
        usable_window: 1_000_000,
        last_usage_tokens: None,
        operator_flush: false,
    };
    let m0 = text_of(&harness.pass(&call).unwrap().messages[0]);
    assert!(m0.contains(&format!("- #{own} Handlers are named")), "{m0}");
    assert!(!m0.contains(&format!("- #{shared} ")), "{m0}");
    assert!(!m0.contains("<shared-memory"), "{m0}");
}
