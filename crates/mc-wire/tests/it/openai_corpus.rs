//! The OpenAI codecs over real agent sessions: every mini-swe-agent trajectory in the shared
//! data folder is rebuilt as the Chat Completions request its last call sent, and every
//! recorded response is decoded; both must come back byte for byte and convert to the
//! neutral model.

use std::path::PathBuf;

use mc_core::{Part, Role};
use mc_wire::openai::{ChatRequest, ChatResponse, ChatRole, to_conversation, to_message};
use serde_json::{Value, json};

/// Big enough for the longest trajectory; the limit itself is tested elsewhere.
const LIMIT: usize = 64 << 20;

/// What the published folder holds (see its README); another folder is only checked to be
/// non-empty.
const PUBLISHED_FILES: usize = 54;
const PUBLISHED_MESSAGES: usize = 7664;
const PUBLISHED_RESPONSES: usize = 3778;
/// Responses whose usage reports a cache hit, and those that carry visible reasoning.
const PUBLISHED_CACHED: usize = 3475;
const PUBLISHED_THINKING: usize = 67;

/// The shared data folder, and whether it is the published one whose counts are pinned.
fn data_dir() -> (PathBuf, bool) {
    (
        crate::shared_data::dir(),
        std::env::var_os("MC_SHARED_DATA").is_none(),
    )
}

fn trajectories(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("swe-trajectories"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().ends_with(".traj.json"))
        .collect();
    files.sort();
    files
}

#[derive(Debug, Default, PartialEq)]
struct Counts {
    files: usize,
    messages: usize,
    responses: usize,
    cached: usize,
    thinking: usize,
}

#[test]
fn every_trajectory_round_trips_and_converts() {
    let (dir, published) = data_dir();
    let mut counts = Counts::default();
    for path in trajectories(&dir) {
        let name = path.display().to_string();
        let trajectory: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let model = trajectory
            .pointer("/info/config/model/model_name")
            .and_then(Value::as_str)
            .unwrap_or("gpt-4o");
        let body = serde_json::to_vec(&json!({"model": model, "messages": trajectory["messages"]}))
            .unwrap();

        let request =
            ChatRequest::decode(&body, LIMIT).unwrap_or_else(|error| panic!("{name}: {error}"));
        let encoded = request.encode();
        assert!(encoded == body, "{name}: request bytes changed");
        assert!(
            ChatRequest::decode(&encoded, LIMIT).unwrap().encode() == encoded,
            "{name}: encode not idempotent"
        );
        // Each message encoded alone, put between the request's bytes around its list, is
        // the whole encoding: what the proxy assembles from messages it encoded before.
        let mut head = request.clone();
        let messages: Vec<Vec<u8>> = std::mem::take(&mut head.messages)
            .iter()
            .map(|message| serde_json::to_vec(message).unwrap())
            .collect();
        let list = [b"[".to_vec(), messages.join(&b","[..]), b"]".to_vec()].concat();
        assert!(
            head.encode_with_messages(&list) == body,
            "{name}: spliced list"
        );
        let (before, after) = head.encode_around_messages();
        assert!(
            [before, list, after].concat() == body,
            "{name}: around the list"
        );

        let conversation =
            to_conversation(&request).unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(conversation.len(), request.messages.len(), "{name}");
        assert_eq!(conversation[0].role, Role::System, "{name}");
        counts.files += 1;
        counts.messages += request.messages.len();

        for (index, message) in request.messages.iter().enumerate() {
            if message.role != ChatRole::Assistant {
                continue;
            }
            let recorded = message
                .rest
                .get("extra")
                .and_then(|extra| extra.get("response"));
            let recorded =
                recorded.unwrap_or_else(|| panic!("{name}: message {index} has no extra.response"));
            let bytes = serde_json::to_vec(recorded).unwrap();
            let response = ChatResponse::decode(&bytes, LIMIT)
                .unwrap_or_else(|error| panic!("{name} [{index}]: {error}"));
            assert!(
                response.encode() == bytes,
                "{name}: response {index} bytes changed"
            );
            let usage = response
                .usage
                .as_ref()
                .unwrap_or_else(|| panic!("{name} [{index}]: no usage"));
            assert!(
                usage.prompt_tokens.is_some(),
                "{name} [{index}]: no prompt_tokens"
            );
            counts.responses += 1;
            counts.cached += usize::from(usage.cached_tokens().is_some_and(|cached| cached > 0));
            let answer = to_message(response.message().unwrap()).unwrap();
            assert_eq!(answer.role, Role::Assistant);
            counts.thinking += usize::from(
                answer
                    .parts
                    .iter()
                    .any(|part| matches!(part, Part::Thinking { .. })),
            );
        }
    }
    assert!(counts.files > 0, "no trajectories in {}", dir.display());
    assert_eq!(
        counts.responses,
        count_assistants(&dir),
        "every assistant message carries its response"
    );
    if published {
        assert_eq!(
            (counts.files, counts.messages, counts.responses),
            (PUBLISHED_FILES, PUBLISHED_MESSAGES, PUBLISHED_RESPONSES)
        );
        let (cached, thinking) = (counts.cached, counts.thinking);
        assert_eq!(
            (cached, thinking),
            (PUBLISHED_CACHED, PUBLISHED_THINKING),
            "cache hits and reasoning kept"
        );
    }
}

/// Assistant messages counted straight from the JSON, independently of the codec.
fn count_assistants(dir: &std::path::Path) -> usize {
    trajectories(dir)
        .iter()
        .map(|path| {
            let trajectory: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
            trajectory["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|message| message["role"] == "assistant")
                .count()
        })
        .sum()
}
