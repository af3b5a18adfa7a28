//! Unit tests of script parsing and turn matching.

use serde_json::json;

use super::*;

fn user(text: &str) -> Message {
    Message::new(Role::User, vec![Part::text(text)])
}

fn tool_result(text: &str) -> Message {
    Message::new(
        Role::User,
        vec![Part::ToolResult {
            call_id: "toolu_1".to_owned(),
            content: vec![Part::text(text)],
            is_error: false,
        }],
    )
}

fn play(script: &mut Script, conversation: &[Message]) -> Option<usize> {
    let turn = script.next_turn(conversation);
    if let Some(index) = turn {
        script.advance(index);
    }
    turn
}

#[test]
fn conditions_skip_and_wait() {
    let text = json!([
        {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "ls"}}]},
        {"when": {"last_tool_result_contains": "error"},
         "content": [{"type": "text", "text": "fixing"}]},
        {"when": {"last_user_text_contains": "thanks"},
         "content": [{"type": "text", "text": "welcome"}]},
    ])
    .to_string();
    let mut script = Script::parse(&text, "inline").unwrap();
    assert_eq!(script.turns()[0].stop_reason(), StopReason::ToolUse);
    assert_eq!(play(&mut script, &[user("hi")]), Some(0));
    // No error in the result and no thanks yet: nothing matches, the cursor waits.
    let history = [user("hi"), tool_result("Cargo.toml")];
    assert_eq!(play(&mut script, &history), None);
    assert!(!script.is_exhausted());
    // The thanks matches turn 2; turn 1 is skipped for good.
    let history = [user("hi"), tool_result("all fine"), user("thanks")];
    assert_eq!(play(&mut script, &history), Some(2));
    assert!(script.is_exhausted());
    assert_eq!(play(&mut script, &history), None);
}

#[test]
fn repeat_and_counts() {
    let text = json!({"turns": [
        {"repeat": 3, "content": [{"type": "tool_use", "name": "Read"}]},
        {"when": {"tool_result_count_at_least": 3}, "content": [{"type": "text", "text": "ok"}]},
    ], "final_text": "bye"})
    .to_string();
    let mut script = Script::parse(&text, "inline").unwrap();
    assert_eq!(script.final_text(), "bye");
    let mut history = vec![user("go")];
    for _ in 0..3 {
        assert_eq!(play(&mut script, &history), Some(0));
        history.push(tool_result("x"));
    }
    assert_eq!(play(&mut script, &history), Some(1));
    assert_eq!(play(&mut script, &history), None);
}

#[test]
fn repeated_turn_yields_to_a_matching_later_turn() {
    let text = json!([
        {"repeat": 10, "when": {"last_user_text_contains": "more"},
         "content": [{"type": "text", "text": "again"}]},
        {"content": [{"type": "text", "text": "stop"}]},
    ])
    .to_string();
    let mut script = Script::parse(&text, "inline").unwrap();
    assert_eq!(play(&mut script, &[user("more")]), Some(0));
    assert_eq!(play(&mut script, &[user("enough")]), Some(1));
    assert_eq!(play(&mut script, &[user("more")]), None);
}

#[test]
fn errors_name_the_file_turn_and_problem() {
    let cases = [
        (
            json!([{"content": []}]).to_string(),
            "turns[0] (0-based): `content` is empty",
        ),
        (
            json!([{"content": [{"type": "text", "text": "a"}]}, {"contnet": []}]).to_string(),
            "turns[1] (0-based): unknown field `contnet`",
        ),
        (
            json!([{"content": [{"type": "tool_use", "name": "x", "input": [1]}]}]).to_string(),
            "content[0]: tool_use `input` must be a JSON object",
        ),
        (
            json!([{"content": [{"type": "image"}]}]).to_string(),
            "turns[0] (0-based): unknown variant `image`",
        ),
        (
            json!([{"content": [{"type": "text", "text": "a"}], "when": {}}]).to_string(),
            "`when` has no condition",
        ),
        (
            json!([{"content": [{"type": "text", "text": "a"}], "stop_reason": "tool_use"}])
                .to_string(),
            "calls no tool",
        ),
        (
            json!([{"content": [{"type": "text", "text": "a"}], "repeat": 0}]).to_string(),
            "`repeat` is 0",
        ),
        (json!({"turn": []}).to_string(), "no `turns` list"),
        ("[".to_owned(), "is not valid JSON"),
    ];
    for (text, expected) in cases {
        let error = Script::parse(&text, "play.json").unwrap_err().to_string();
        assert!(error.contains("play.json"), "{error}");
        assert!(error.contains(expected), "{error} lacks {expected}");
    }
    let missing = Script::load(Path::new("/nonexistent/play.json")).unwrap_err();
    assert!(
        missing
            .to_string()
            .starts_with("cannot read script /nonexistent/play.json")
    );
}

#[test]
fn blocks_parse_with_defaults() {
    let text = json!([{"content": [
        {"type": "thinking", "thinking": "hmm"},
        {"type": "tool_use", "name": "Bash"},
    ], "output_tokens": 7}])
    .to_string();
    let script = Script::parse(&text, "inline").unwrap();
    let turn = &script.turns()[0];
    assert_eq!(
        turn.content,
        vec![
            ScriptBlock::Thinking {
                thinking: "hmm".to_owned(),
                signature: None
            },
            ScriptBlock::ToolUse {
                name: "Bash".to_owned(),
                input: json!({})
            },
        ]
    );
    assert_eq!(turn.output_tokens, Some(7));
    assert_eq!(turn.repeat, 1);
}
