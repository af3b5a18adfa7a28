//! All shared mini-swe-agent trajectories load, with one step per assistant message.

use std::sync::Arc;

use mc_core::{Part, Role};
use mc_sim::recording::{self, RecordingFormat};
use serde_json::Value;

use crate::recording_data;

/// How many trajectories the shared folder holds (README: 54 runs).
const TRAJECTORIES: usize = 54;

fn assistant_counts() -> Vec<(String, usize)> {
    let dir = recording_data::dir().join("swe-trajectories");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().ends_with(".traj.json"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|path| {
            let document: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
            let assistants = document["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|message| message["role"] == "assistant")
                .count();
            let name = path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .replace(".traj.json", "");
            (name, assistants)
        })
        .collect()
}

#[test]
fn every_trajectory_loads_one_step_per_assistant_message() {
    let dir = recording_data::dir().join("swe-trajectories");
    let recordings = recording::load(&dir, None).unwrap();
    let expected = assistant_counts();
    assert_eq!(recordings.len(), TRAJECTORIES);
    assert_eq!(expected.len(), TRAJECTORIES);
    for (recording, (name, assistants)) in recordings.iter().zip(&expected) {
        assert_eq!(&recording.name, name);
        assert_eq!(recording.format, RecordingFormat::SweTraj);
        assert!(
            recording.model.ends_with("gemini-3-pro-preview"),
            "{}",
            recording.model
        );
        assert_eq!(recording.steps.len(), *assistants, "{name}");
        assert_eq!(recording.system.len(), 1, "{name}");
        assert!(recording.tools.is_empty() && recording.stand_ins.is_empty());
        for (index, step) in recording.steps.iter().enumerate() {
            let request = step.request_messages();
            assert!(
                step.recorded.is_some_and(|usage| usage.prompt_tokens > 0),
                "{name} step {index}"
            );
            assert!(step.output_tokens.is_some(), "{name} step {index}");
            assert_eq!(step.response.role, Role::Assistant);
            // The response is what the next request resends.
            assert_eq!(step.messages.get(step.len), Some(&step.response));
            assert!(request.iter().all(|message| message.role != Role::System));
            if let Some(next) = recording.steps.get(index + 1) {
                assert!(Arc::ptr_eq(&step.messages, &next.messages));
                let next_request = next.request_messages();
                assert!(request.len() < next_request.len(), "{name} step {index}");
                assert!(next_request.starts_with(request), "{name} step {index}");
                assert!(step.at_ms <= next.at_ms, "{name} step {index}");
            }
        }
        assert_eq!(recording.steps[0].at_ms, 0);
    }
}

#[test]
fn first_trajectory_reads_what_its_first_response_recorded() {
    let path = recording_data::dir().join("swe-trajectories/django__django-11138.traj.json");
    let [recording] = recording::load(&path, Some(RecordingFormat::SweTraj))
        .unwrap()
        .try_into()
        .unwrap();
    assert_eq!(recording.model, "google/gemini-3-pro-preview");
    assert!(recording.system[0].starts_with("You are a helpful assistant that can interact"));
    let first = &recording.steps[0];
    assert_eq!(first.len, 1);
    assert_eq!(first.request_messages()[0].role, Role::User);
    assert_eq!(first.output_tokens, Some(307));
    assert_eq!(
        first.recorded,
        Some(recording::RecordedUsage {
            prompt_tokens: 2_320,
            cache_read: Some(0),
            cache_write: None,
            input: Some(2_320),
        })
    );
    let Part::Text { text, .. } = &first.response.parts[0] else {
        panic!("{:?}", first.response);
    };
    assert!(text.ends_with("```bash\nls -la\n```"));
    // Later steps see the provider's prefix cache at work.
    assert!(recording.steps.iter().any(|step| {
        step.recorded
            .and_then(|usage| usage.cache_read)
            .is_some_and(|read| read > 0)
    }));
}
