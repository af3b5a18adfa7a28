use proptest::prelude::*;

use super::super::{HeadBudgets, HeadInputs, render_m0};
use super::*;
use crate::config::Tokens;

/// A stand-in tokenizer: one token per 4 bytes, rounded up.
fn count(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

fn budgets(memory: u64) -> HeadBudgets {
    HeadBudgets {
        history_tokens: Tokens(1_000),
        memory_tokens: Tokens(memory),
        key_files_tokens: Tokens(3_000),
    }
}

fn memory(id: u64, category: MemoryCategory, content: &str) -> Memory {
    Memory {
        id,
        category,
        content: content.to_owned(),
        permanent: false,
        seen_count: 1,
    }
}

fn own() -> Vec<Memory> {
    vec![
        memory(3, MemoryCategory::Naming, "Ids are newtypes."),
        memory(8, MemoryCategory::ProjectRules, "Run cargo nextest."),
    ]
}

fn shared() -> Vec<SharedMemories> {
    vec![
        SharedMemories {
            workspace: "shop".to_owned(),
            project: "~/src/shop-web".to_owned(),
            memories: vec![memory(
                21,
                MemoryCategory::ConfigValues,
                "The web app calls the API at http://127.0.0.1:8080.",
            )],
        },
        SharedMemories {
            workspace: "shop".to_owned(),
            project: "~/src/shop-api".to_owned(),
            memories: vec![
                memory(
                    12,
                    MemoryCategory::Architecture,
                    "Orders are written by the API only.",
                ),
                memory(
                    30,
                    MemoryCategory::Architecture,
                    "Prices are integers in cents.\nNever floats.",
                ),
                memory(15, MemoryCategory::Naming, "Endpoints are plural nouns."),
            ],
        },
    ]
}

#[test]
fn shared_memory_snapshot() {
    let (own, shared) = (own(), shared());
    let inputs = HeadInputs {
        memories: &own,
        shared_memories: &shared,
        ..HeadInputs::default()
    };
    let head = render_m0(&inputs, budgets(4_000), &count);
    assert_eq!(head.memory_ids, vec![8, 3]);
    assert_eq!(head.shared_memory_ids, vec![12, 30, 15, 21]);
    insta::assert_snapshot!(head.text);
    // Re-rendering the same rows gives the same bytes, whatever order they come in.
    assert_eq!(head, render_m0(&inputs, budgets(4_000), &count));
    let mut reversed = shared.clone();
    reversed.reverse();
    for source in &mut reversed {
        source.memories.reverse();
    }
    let reordered = HeadInputs {
        shared_memories: &reversed,
        ..inputs
    };
    assert_eq!(head, render_m0(&reordered, budgets(4_000), &count));
}

#[test]
fn shared_memories_take_only_what_own_memories_leave() {
    let (own, shared) = (own(), shared());
    let alone = HeadInputs {
        memories: &own,
        ..HeadInputs::default()
    };
    let own_only = render_m0(&alone, budgets(4_000), &count);
    // Counted line by line, as the selection counts what it admits.
    let own_tokens: u64 = own_only
        .text
        .split("\n\n")
        .last()
        .unwrap_or_default()
        .split_inclusive('\n')
        .map(count)
        .sum();
    let with_shared = HeadInputs {
        shared_memories: &shared,
        ..alone
    };
    // Exactly the room of the own memories: no shared memory fits.
    let tight = render_m0(&with_shared, budgets(own_tokens), &count);
    assert_eq!(tight.text, own_only.text);
    assert!(tight.shared_memory_ids.is_empty());
    // Room for one source's wrapper, heading and shortest item: the top-ranked that fits.
    let one = count("<shared-memory workspace=\"shop\" project=\"~/src/shop-api\">\n")
        + count(CLOSE)
        + count("## NAMING\n")
        + count("- #15 Endpoints are plural nouns.\n");
    let some = render_m0(&with_shared, budgets(own_tokens + one), &count);
    assert_eq!(some.memory_ids, own_only.memory_ids);
    assert_eq!(some.shared_memory_ids, vec![15]);
    assert!(some.text.ends_with(
        "<shared-memory workspace=\"shop\" project=\"~/src/shop-api\">\n## NAMING\n\
         - #15 Endpoints are plural nouns.\n</shared-memory>"
    ));
    // Without own memories the shared ones have the whole budget and stand alone.
    let only_shared = HeadInputs {
        shared_memories: &shared,
        ..HeadInputs::default()
    };
    let head = render_m0(&only_shared, budgets(4_000), &count);
    assert!(!head.text.contains("<project-memory>"));
    assert_eq!(head.shared_memory_ids.len(), 4);
}

fn arb_memories(ids: std::ops::Range<u64>) -> impl Strategy<Value = Vec<Memory>> {
    prop::collection::vec(
        (ids, 0usize..5, "[a-z ]{1,60}", any::<bool>(), 1u64..4),
        0..12,
    )
    .prop_map(|rows| {
        rows.into_iter()
            .map(|(id, category, content, permanent, seen_count)| Memory {
                id,
                category: MemoryCategory::ALL[category],
                content,
                permanent,
                seen_count,
            })
            .collect()
    })
}

/// Sources with distinct roots and memories with distinct ids, as the store gives them.
fn arb_shared() -> impl Strategy<Value = Vec<SharedMemories>> {
    prop::collection::btree_map("[a-d]", arb_memories(0..1), 0..4).prop_map(|sources| {
        let mut next_id = 1_000;
        sources
            .into_iter()
            .map(|(name, mut memories)| {
                for memory in &mut memories {
                    memory.id = next_id;
                    next_id += 1;
                }
                SharedMemories {
                    workspace: "w".to_owned(),
                    project: format!("~/src/{name}"),
                    memories,
                }
            })
            .collect()
    })
}

proptest! {
    /// Shared memories never displace the project's own, the memory sections stay within
    /// the budget, and the bytes depend on the rows only, not on their order.
    #[test]
    fn own_memories_come_first_and_the_render_is_stable(
        own in arb_memories(1..1_000),
        shared in arb_shared(),
        budget in 0u64..400,
    ) {
        let alone = HeadInputs { memories: &own, ..HeadInputs::default() };
        let with_shared = HeadInputs { shared_memories: &shared, ..alone };
        let head = render_m0(&with_shared, budgets(budget), &count);
        let own_only = render_m0(&alone, budgets(budget), &count);
        prop_assert_eq!(&head.memory_ids, &own_only.memory_ids);
        prop_assert!(head.text.starts_with(&own_only.text));

        let memory_tokens: u64 = head
            .text
            .split("\n\n")
            .filter(|section| {
                section.starts_with("<project-memory>") || section.starts_with("<shared-memory ")
            })
            .map(count)
            .sum();
        prop_assert!(memory_tokens <= budget, "{} > {}", memory_tokens, budget);

        let mut reversed = shared.clone();
        reversed.reverse();
        for source in &mut reversed {
            source.memories.reverse();
        }
        let reordered = HeadInputs { shared_memories: &reversed, ..with_shared };
        prop_assert_eq!(&head, &render_m0(&reordered, budgets(budget), &count));
    }
}
