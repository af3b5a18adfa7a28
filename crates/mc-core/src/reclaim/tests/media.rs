//! Media as a reclaim candidate: an old image goes whole like stale tool output; the newest
//! image never goes.

use serde_json::json;

use super::*;

/// A PNG image part stating `width`×`height` (Anthropic's shape).
fn screenshot(width: u32, height: u32) -> Part {
    let mut header = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    header.extend_from_slice(&width.to_be_bytes());
    header.extend_from_slice(&height.to_be_bytes());
    header.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    Part::Media {
        media: crate::MediaKind::Image,
        source: json!({"type": "base64", "media_type": "image/png",
            "data": crate::media::tests::base64(&header)}),
    }
}

/// Task; a pasted screenshot (§2§ text, §3§ image); eight filler turns (§4§–§11§); a
/// screenshot read by a tool (§12§); one more turn (§13§).
fn session() -> Vec<Message> {
    let mut stored = vec![
        user("fix the layout"),
        Message::new(
            Role::User,
            vec![Part::text("it looks like this"), screenshot(2_880, 1_800)],
        ),
    ];
    stored.extend(turns(8, "f"));
    stored.push(call("read", "Read", json!({"file_path": "after.png"})));
    stored.push(Message::new(
        Role::User,
        vec![Part::ToolResult {
            call_id: "read".into(),
            content: vec![screenshot(1_280, 720)],
            is_error: false,
        }],
    ));
    stored.extend(turns(1, "g"));
    stored
}

#[test]
fn an_old_pasted_image_is_stale_output_and_frees_its_rule_tokens() {
    let session = Session::new(session());
    assert_eq!(session.lanes(), vec![(3, ReclaimLane::StaleOutput)]);
    // Anthropic's 1,590 tokens for a 2880×1800 image, minus the placeholder's.
    let freed = session.plan()[0].tokens;
    assert!((1_580..1_590).contains(&freed), "{freed}");
}

#[test]
fn the_newest_image_is_never_reclaimed_not_even_in_an_emergency() {
    let mut session = Session::new(session());
    session.emergency = true;
    let lanes = session.lanes();
    assert!(lanes.contains(&(3, ReclaimLane::StaleOutput)), "{lanes:?}");
    assert!(!lanes.iter().any(|&(tag, _)| tag == 12), "{lanes:?}");
    // Once a newer image arrives, the read one is old like any other.
    let mut stored = session.stored.clone();
    stored.push(Message::new(Role::User, vec![screenshot(640, 480)]));
    let mut later = Session::new(stored);
    later.emergency = true;
    let lanes = later.lanes();
    assert!(lanes.iter().any(|&(tag, _)| tag == 12), "{lanes:?}");
    assert!(!lanes.iter().any(|&(tag, _)| tag == 14), "{lanes:?}");
}
