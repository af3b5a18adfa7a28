//! Bad input fails with an error naming the file, the place in it, and what was wrong.

use std::path::PathBuf;

use mc_sim::recording::{self, Location, RecordingError, RecordingFormat};

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn malformed_json_line_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let session = concat!(
        r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","timestamp":"2025-06-02T10:00:00Z","message":{"role":"user","content":"hi"}}"#,
        "\n\n",
        r#"{"type":"assistant","uuid":"a1","parentUuid":"u1", "message": {"id": "m"#,
        "\n"
    );
    let path = write(&dir, "broken.jsonl", session);
    let error = recording::load(&path, None).unwrap_err();
    assert!(
        matches!(&error, RecordingError::Json { at: Location::Line(3), path: p, .. } if *p == path),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("broken.jsonl") && message.contains("line 3"),
        "{message}"
    );

    let capture = write(
        &dir,
        "capture.jsonl",
        "{\"request\":{\"timestamp\":1,\"body\":{}},\"response\":{\"status_code\":200}}\n{not json\n",
    );
    let error = recording::load(&capture, Some(RecordingFormat::AnthropicCapture)).unwrap_err();
    // Line 1 decodes as a pair but its body is no Messages request: the codec says which field.
    assert!(
        matches!(
            error,
            RecordingError::Wire {
                at: Location::Line(1),
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("model"), "{error}");
}

#[test]
fn bad_trajectory_message_names_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        "run.traj.json",
        r#"{"info":{},"trajectory_format":"mini-swe-agent-1","messages":[{"role":"system","content":"s"},{"role":"robot","content":"x"}]}"#,
    );
    let error = recording::load(&path, None).unwrap_err();
    assert!(
        matches!(
            error,
            RecordingError::Json {
                at: Location::Message(1),
                ..
            }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("run.traj.json")
            && message.contains("messages[1]")
            && message.contains("robot"),
        "{message}"
    );
}

#[test]
fn bad_timestamp_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        "s.jsonl",
        r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","timestamp":"yesterday","message":{"role":"user","content":"hi"}}"#,
    );
    let error = recording::load(&path, None).unwrap_err();
    assert!(
        matches!(
            error,
            RecordingError::Invalid {
                at: Location::Line(1),
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("yesterday"), "{error}");
}

#[test]
fn empty_or_unrecognised_input_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let error = recording::load(dir.path(), None).unwrap_err();
    assert!(
        matches!(&error, RecordingError::EmptyDirectory { dir: d } if d == dir.path()),
        "{error:?}"
    );
    assert!(error.to_string().contains("holds no recording"), "{error}");

    let notes = write(&dir, "notes.txt", "hello");
    let error = recording::load(&notes, None).unwrap_err();
    assert!(
        matches!(error, RecordingError::Unrecognised { .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("--format") || error.to_string().contains("pass it explicitly")
    );
    // Still nothing a loader recognises.
    assert!(matches!(
        recording::load(dir.path(), None),
        Err(RecordingError::EmptyDirectory { .. })
    ));

    let missing = dir.path().join("missing.jsonl");
    assert!(matches!(
        recording::load(&missing, None),
        Err(RecordingError::Io { .. })
    ));
}

#[test]
fn format_names_round_trip() {
    for format in RecordingFormat::ALL {
        assert_eq!(
            format.to_string().parse::<RecordingFormat>().unwrap(),
            format
        );
    }
    assert_eq!(
        "swe-traj".parse::<RecordingFormat>().unwrap(),
        RecordingFormat::SweTraj
    );
    let error = "auto".parse::<RecordingFormat>().unwrap_err();
    assert!(error.to_string().contains("`auto`"), "{error}");
}
