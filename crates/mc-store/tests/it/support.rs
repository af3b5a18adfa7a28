//! Shared fixtures: stores in temporary directories, sessions and messages.

use std::path::PathBuf;

use mc_core::head::Compartment;
use mc_core::{Host, MediaKind, Message, Part, ProjectId, Role, SessionId};
use mc_store::{NewSession, Store};
use serde_json::json;
use tempfile::TempDir;

pub const NOW_MS: i64 = 1_764_000_000_000;

/// A store in its own temporary directory; the directory lives as long as the fixture.
pub struct TempStore {
    pub dir: TempDir,
    pub store: Store,
}

impl TempStore {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        Self { dir, store }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.path().join("context.db")
    }
}

pub fn sid(id: &str) -> SessionId {
    SessionId::new(id).unwrap()
}

pub fn new_session(id: &str) -> NewSession {
    NewSession {
        id: sid(id),
        host: Host::ClaudeCode,
        project: Some(ProjectId::new("proj").unwrap()),
    }
}

/// Creates a session and appends `messages` from ordinal 0.
pub fn seed(store: &Store, id: &str, messages: &[Message], now_ms: i64) {
    store
        .write(|tx| {
            tx.upsert_session(&new_session(id), now_ms)?;
            tx.append_messages(&sid(id), 0, messages, now_ms)
        })
        .unwrap();
}

pub fn text(role: Role, text: &str) -> Message {
    Message::new(role, vec![Part::text(text)])
}

pub fn turns(count: usize) -> Vec<Message> {
    (0..count)
        .map(|i| {
            let role = if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            };
            text(role, &format!("turn {i}"))
        })
        .collect()
}

/// One message of every role carrying every kind of part.
pub fn every_part_kind() -> Vec<Message> {
    vec![
        text(Role::System, "You are a careful engineer."),
        Message::new(
            Role::User,
            vec![
                Part::text("look at this"),
                Part::Media {
                    media: MediaKind::Image,
                    source: json!({"type": "base64", "data": "iVBOR"}),
                },
                Part::Media {
                    media: MediaKind::Document,
                    source: json!({"file_id": "f-1"}),
                },
                Part::Media {
                    media: MediaKind::Audio,
                    source: json!({"format": "wav", "data": "UklG"}),
                },
            ],
        ),
        Message::new(
            Role::Assistant,
            vec![
                Part::Thinking {
                    text: "the test races".into(),
                    signature: Some("sig==".into()),
                },
                Part::Thinking {
                    text: "unsigned".into(),
                    signature: None,
                },
                Part::RedactedThinking {
                    data: "opaque".into(),
                },
                Part::ToolCall {
                    id: "call-1".into(),
                    name: "Bash".into(),
                    input: json!({"command": "cargo test", "timeout": 1.5, "z": null, "a": [1, -2, true]}),
                },
                Part::Unknown {
                    type_name: "server_tool_use".into(),
                    raw: json!({"type": "server_tool_use", "id": "x"}),
                },
            ],
        ),
        Message::new(
            Role::User,
            vec![Part::ToolResult {
                call_id: "call-1".into(),
                content: vec![
                    Part::text("1 failed"),
                    Part::Media {
                        media: MediaKind::Image,
                        source: json!({"url": "https://example.com/a.png"}),
                    },
                ],
                is_error: true,
            }],
        ),
        Message::new(
            Role::Tool,
            vec![Part::ToolResult {
                call_id: "call-2".into(),
                content: vec![],
                is_error: false,
            }],
        ),
        Message::new(
            Role::Assistant,
            vec![Part::Unknown {
                type_name: String::new(),
                raw: json!("\u{0}é😀"),
            }],
        ),
    ]
}

/// Whether permission checks apply to this process (they do not for root).
#[cfg(unix)]
pub fn permissions_are_enforced(dir: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let probe = dir.join("permission-probe");
    std::fs::write(&probe, b"probe").unwrap();
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o000)).unwrap();
    let enforced = std::fs::read(&probe).is_err();
    std::fs::remove_file(&probe).unwrap();
    enforced
}

/// A compartment over `start..=end` with short placeholder tiers.
pub fn compartment(start: u64, end: u64, title: &str) -> Compartment {
    Compartment {
        start_ordinal: start,
        end_ordinal: end,
        start_ms: start,
        end_ms: end,
        title: title.to_owned(),
        importance: 50,
        episode: "feature".into(),
        tiers: ["full".into(), "cond".into(), "para".into(), "line".into()],
        quotes: Vec::new(),
        index: mc_core::head::RangeIndex::default(),
    }
}
