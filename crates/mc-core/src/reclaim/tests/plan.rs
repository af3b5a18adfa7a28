use serde_json::json;

use super::super::{NudgeAudience, nudge, unreduced_output_tokens};
use super::*;

fn mixed() -> Vec<Message> {
    let mut stored = vec![user("task")];
    stored.push(call("r1", "Read", json!({"file_path": "a.py"})));
    stored.push(result("r1", &words(1_000, "a")));
    stored.push(call("r2", "Read", json!({"file_path": "a.py"})));
    stored.push(result("r2", &words(1_000, "a")));
    stored.push(call("e", "Bash", json!({"command": "make"})));
    stored.push(result_with("e", &words(900, "err"), true));
    stored.extend(turns(9, "f"));
    stored
}

#[test]
fn each_tag_once_under_the_most_specific_lane() {
    // Tag 2 is superseded, a duplicate and stale; tag 4 is stale; tag 3 errored and stale.
    let session = Session::new(mixed());
    assert_eq!(
        session.lanes(),
        vec![
            (2, ReclaimLane::SupersededRead),
            (3, ReclaimLane::StaleOutput),
            (4, ReclaimLane::ErroredCall),
        ]
    );
}

#[test]
fn same_input_gives_the_same_decisions() {
    let session = Session::new(mixed());
    let first = session.plan();
    assert_eq!(first, session.plan());
    assert_eq!(
        serde_json::to_string(&first).ok(),
        serde_json::to_string(&Session::new(mixed()).plan()).ok()
    );
}

#[test]
fn messages_after_newest_ordinal_are_ignored() {
    let session = Session::new(mixed());
    let decisions = session.with_inputs(|inputs| {
        let bounded = ReclaimInputs {
            newest_ordinal: 4,
            ..*inputs
        };
        plan_reclaim(&bounded, &session.config)
    });
    // Without the later turns nothing is old; only the superseded/duplicate read remains.
    assert_eq!(
        decisions
            .iter()
            .map(|d| (d.tag.0, d.lane))
            .collect::<Vec<_>>(),
        vec![(2, ReclaimLane::SupersededRead)]
    );
}

#[test]
fn unreduced_tokens_count_visible_unprotected_output() {
    let mut session = Session::new(mixed());
    let all = session.with_inputs(|inputs| unreduced_output_tokens(inputs, &session.config));
    session.drops.landed.insert(TagNo(2));
    let fewer = session.with_inputs(|inputs| unreduced_output_tokens(inputs, &session.config));
    assert_eq!(all - fewer, 1_000);
}

#[test]
fn nudge_waits_for_the_threshold_and_stays_quiet_after_a_reduction() {
    let config = ReclaimConfig::default();
    let outputs = |total: u64| vec![(TagNo(3), total - 400), (TagNo(7), 400)];
    let generic = NudgeAudience::NoTool;
    assert_eq!(nudge(&outputs(19_999), None, &config, generic), None);
    assert_eq!(nudge(&outputs(25_000), Some(4), &config, generic), None);
    let text = nudge(&outputs(25_400), Some(5), &config, generic);
    assert_eq!(text, nudge(&outputs(25_400), None, &config, generic));
    let text = text.unwrap_or_default();
    assert!(
        text.contains("25K") && text.contains("[dropped §N§]"),
        "{text}"
    );
}

#[test]
fn a_nudge_to_a_model_with_ctx_reduce_names_the_tool_and_the_largest_outputs() {
    let config = ReclaimConfig::default();
    let outputs = [
        (TagNo(3), 4_200),
        (TagNo(12), 9_000),
        (TagNo(15), 7_100),
        (TagNo(20), 900),
    ];
    let text = nudge(&outputs, None, &config, NudgeAudience::ReduceTool).unwrap_or_default();
    assert_eq!(
        text,
        "[context note] About 21K tokens of earlier tool output are still in context; the \
         largest are §12§ (~9K), §15§ (~8K), §3§ (~5K). Once you have what you need from an \
         output, call ctx_reduce with its tags (e.g. \"12,15,3\") to drop it; ctx_expand reads \
         it again if you need it later."
    );
}
