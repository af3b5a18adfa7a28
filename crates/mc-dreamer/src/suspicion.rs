//! Which memories are candidates for the model's judgement: the deterministic evidence.
//!
//! Each memory is mapped to what it names ([`mentions_of`]) and each named thing looked up
//! in the project: a file it names is gone, a name it uses appears nowhere, or a value it
//! states is not on any line with its name. A memory with any such finding is a candidate;
//! one with none, or one that names nothing searchable, is left alone without a model call.
//! Pure over a loaded [`ProjectIndex`].

use mc_core::dreamer::{Candidate, Evidence, Mention, mentions_of};
use mc_store::StoredMemory;

use crate::project_index::ProjectIndex;

/// Most project lines gathered per named thing.
const SIGHTINGS: usize = 3;

/// What the project says about each thing `content` names.
pub fn evidence_for(content: &str, index: &ProjectIndex) -> Vec<Evidence> {
    mentions_of(content)
        .into_iter()
        .map(|mention| match mention {
            Mention::Path(path) => Evidence::File {
                present: index.has_file(&path),
                path,
            },
            Mention::Name(name) => Evidence::Name {
                seen_at: index.lines_naming(&name, SIGHTINGS),
                name,
            },
            Mention::Value { name, value } => {
                let holds = !index.lines_stating(&name, &value, 1).is_empty();
                Evidence::Value {
                    seen_at: index.lines_naming(&name, SIGHTINGS),
                    name,
                    value,
                    holds,
                }
            }
        })
        .collect()
}

/// The memory as a candidate, when some evidence speaks against it.
pub fn candidate_of(memory: &StoredMemory, index: &ProjectIndex) -> Option<Candidate> {
    let evidence = evidence_for(&memory.record.content, index);
    evidence
        .iter()
        .any(Evidence::is_against)
        .then(|| Candidate {
            memory_id: memory.id,
            category: memory.record.category.as_str().to_owned(),
            content: memory.record.content.clone(),
            evidence,
        })
}

#[cfg(test)]
mod tests {
    use mc_core::head::MemoryCategory;
    use mc_store::{MemoryRecord, MemorySource, MemoryStatus};

    use super::*;

    fn memory(id: u64, content: &str) -> StoredMemory {
        StoredMemory {
            id,
            record: MemoryRecord {
                category: MemoryCategory::ConfigValues,
                content: content.into(),
                status: MemoryStatus::Active,
                source: MemorySource::Historian,
                seen_count: 1,
                created_ms: 0,
                updated_ms: 0,
            },
            superseded_by: None,
        }
    }

    fn index() -> ProjectIndex {
        ProjectIndex::from_texts(vec![(
            "src/net.rs".into(),
            "pub const MAX_RETRIES: u32 = 7;\npub fn send_once() {}\n".into(),
        )])
    }

    #[test]
    fn memories_the_code_confirms_are_not_candidates() {
        let index = index();
        for content in [
            "MAX_RETRIES = 7 in src/net.rs",
            "send_once sends without retrying",
            "Always write tests first.",
        ] {
            assert_eq!(candidate_of(&memory(1, content), &index), None, "{content}");
        }
    }

    #[test]
    fn a_gone_file_a_missing_name_or_a_changed_value_makes_a_candidate() {
        let index = index();
        for (content, against) in [
            ("Networking lives in src/http.rs", "file"),
            ("Use send_twice for retries", "name"),
            ("MAX_RETRIES = 5", "value"),
        ] {
            let candidate = candidate_of(&memory(2, content), &index).unwrap();
            let kinds: Vec<&str> = candidate
                .evidence
                .iter()
                .filter(|evidence| evidence.is_against())
                .map(|evidence| match evidence {
                    Evidence::File { .. } => "file",
                    Evidence::Name { .. } => "name",
                    Evidence::Value { .. } => "value",
                })
                .collect();
            assert_eq!(kinds, [against], "{content}");
        }
    }
}
