//! A project folder with a few source files, a store with memories about it, and a model
//! whose answers a test chooses.

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use mc_core::ProjectId;
use mc_core::head::MemoryCategory;
use mc_dreamer::{CredentialId, DreamerModel, InFlight};
use mc_llm::{
    EndpointLabel, LlmError, ModelEndpoint, StructuredAnswer, StructuredRequest, Usage, Wire,
};
use mc_store::{MemorySource, MemoryStatus, NewMemory, Store, StoredMemory};

/// 2026-12-05 21:00 UTC.
pub const EVENING_MS: i64 = 1_796_504_400_000;

/// A memory the code confirms.
pub const TRUE_MEMORY: &str = "Retries are capped by MAX_RETRIES = 7 in src/net.rs";
/// A memory whose file is gone.
pub const STALE_FILE: &str = "Legacy parsing lives in src/old_parser.rs";
/// A memory whose value changed.
pub const CHANGED_VALUE: &str = "The default port is DEFAULT_PORT = 8080";
/// A memory naming nothing searchable.
pub const PLAIN_RULE: &str = "Always run the tests before committing.";

/// Writes the project: `src/net.rs`, `src/config.rs`, a README.
pub fn write_project(root: &Path) {
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join("src/net.rs"),
        "pub const MAX_RETRIES: u32 = 7;\n\npub fn send_once() {}\n",
    )
    .unwrap();
    std::fs::write(
        root.join("src/config.rs"),
        "pub const DEFAULT_PORT: u16 = 4141;\n",
    )
    .unwrap();
    std::fs::write(root.join("README.md"), "# shop\n").unwrap();
}

pub fn project() -> ProjectId {
    ProjectId::new("git:feedface").unwrap()
}

/// A store holding the four memories above (active) in `project()`.
pub fn store_with_memories(dir: &Path) -> Store {
    let store = Store::open(dir.join("context.db")).unwrap();
    store
        .write(|tx| {
            for content in [TRUE_MEMORY, STALE_FILE, CHANGED_VALUE, PLAIN_RULE] {
                let memory = NewMemory {
                    category: MemoryCategory::Architecture,
                    content,
                    source: MemorySource::Historian,
                    permanent: false,
                };
                tx.add_memory(&project(), &memory, EVENING_MS - 86_400_000)?;
            }
            Ok(())
        })
        .unwrap();
    store
}

/// Every memory of `project()` by content, with its status.
pub fn memories(store: &Store) -> Vec<(String, MemoryStatus)> {
    let all = store
        .read(|tx| {
            tx.memories(
                &project(),
                &[
                    MemoryStatus::Active,
                    MemoryStatus::Permanent,
                    MemoryStatus::Archived,
                ],
            )
        })
        .unwrap();
    all.into_iter()
        .map(|memory: StoredMemory| (memory.record.content, memory.record.status))
        .collect()
}

/// The four memories as written, all active.
pub fn untouched() -> Vec<(String, MemoryStatus)> {
    [TRUE_MEMORY, STALE_FILE, CHANGED_VALUE, PLAIN_RULE]
        .into_iter()
        .map(|content| (content.to_owned(), MemoryStatus::Active))
        .collect()
}

/// What a fake model answers a call with.
pub type Answer = Result<serde_json::Value, LlmError>;

/// How a fake model answers.
pub type Answering = Box<dyn FnMut(&StructuredRequest) -> Answer + Send>;

/// A model that answers every call with what `answer` gives, counting calls.
pub struct FakeModel {
    answer: Mutex<Answering>,
    pub calls: AtomicU32,
}

impl FakeModel {
    pub fn new(answer: impl FnMut(&StructuredRequest) -> Answer + Send + 'static) -> Self {
        Self {
            answer: Mutex::new(Box::new(answer)),
            calls: AtomicU32::new(0),
        }
    }

    pub fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }
}

pub fn label() -> EndpointLabel {
    EndpointLabel {
        model: "claude-haiku-4-5".into(),
        host: "fake".into(),
    }
}

/// A provider error with `status`.
pub fn provider_error(status: u16) -> LlmError {
    LlmError::Provider {
        endpoint: label(),
        status,
        error_type: None,
        message: "try later".into(),
    }
}

impl DreamerModel for FakeModel {
    fn ask(
        &self,
        _project: &ProjectId,
        request: &StructuredRequest,
    ) -> Result<StructuredAnswer, LlmError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let input = (self.answer.lock().unwrap())(request)?;
        Ok(StructuredAnswer {
            input,
            usage: Usage {
                input_tokens: 1_000,
                output_tokens: 100,
                cache_read: 0,
                cache_write: 0,
            },
            answered_by: label(),
        })
    }

    fn first_model(&self, _project: &ProjectId) -> Option<String> {
        Some("claude-haiku-4-5".into())
    }

    fn credential(&self, _project: &ProjectId) -> Option<CredentialId> {
        Some(fake_credential())
    }
}

/// The credential a [`FakeModel`] asks on, for every project.
pub fn fake_credential() -> CredentialId {
    let key = Some(mc_core::Secret::new("sk-fake"));
    CredentialId::of(&ModelEndpoint::new(
        Wire::Anthropic,
        "http://fake",
        "claude-haiku-4-5",
        key,
    ))
}

/// A proxy with no call in flight.
pub struct NoCalls;

impl InFlight for NoCalls {
    fn is_calling(&self, _project: &ProjectId, _credential: &CredentialId) -> bool {
        false
    }

    fn wait_free(&self, _: &ProjectId, _: &CredentialId, _: std::time::Duration) -> bool {
        true
    }
}

/// Whether `request` is a step of the agent loop (rather than a one-shot judging call).
pub fn is_step(request: &StructuredRequest) -> bool {
    request.tool["name"] == mc_core::dreamer::STEP_TOOL
}

/// `judged` for a one-shot call; for an agent-loop step, `finish` (deciding nothing).
pub fn or_finish(request: &StructuredRequest, judged: serde_json::Value) -> serde_json::Value {
    if is_step(request) {
        serde_json::json!({"calls": [{"tool": "finish"}]})
    } else {
        judged
    }
}
