//! The real Claude Code CLI reading a PNG in its working folder (its Read tool answers with
//! an image block inside the tool result), through `magic-context serve` to `magic-context
//! sim` at a 40K window (issue 27). Counted as text, the image's base64 alone would be over
//! a hundred thousand tokens and the next call would be refused; counted as the provider
//! counts it, a 1280×720 screenshot is 1,229 tokens. Later Bash steps age it until a pressure
//! bust drops it whole, like stale tool output.

use mc_core::tags::UnitRef;
use mc_core::{MediaKind, Part};
use mc_store::Store;

use crate::support::Machine;
use crate::support::claude_session::{ClaudeSession, Script, Setup};

/// The window of both the proxy and the simulator.
const WINDOW_TOKENS: u64 = 40_000;
/// The screenshot's size: 1280 × 720 / 750 = 1,229 tokens by Anthropic's rule (over the
/// stale lane's 800-token minimum).
const WIDTH: u32 = 1_280;
const HEIGHT: u32 = 720;
/// What Anthropic's rule bills for it.
const RULE_TOKENS: u64 = 1_229;
/// Bash steps after the first read: enough that the image's result is older than the newest
/// 20 tags and the stale lane's 8 turns.
const STEPS: u64 = 22;
/// Bash steps after the second read, over which pressure busts come.
const STEPS_AFTER: u64 = 10;
const FINAL_ANSWER: &str = "FINAL-ANSWER: the layout is fixed.";

/// A valid grey PNG of `width`×`height` with a gradient, its pixel data in stored
/// (uncompressed) deflate blocks, so the file is as large as a real screenshot's payload.
fn png(width: u32, height: u32) -> Vec<u8> {
    let mut raw = Vec::new();
    for y in 0..height {
        raw.push(0); // filter: none
        raw.extend((0..width).map(|x| ((x * 7 + y * 3) % 251) as u8));
    }
    let mut zlib = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = raw.chunks(65_535).collect();
    for (index, block) in blocks.iter().enumerate() {
        zlib.push(u8::from(index + 1 == blocks.len()));
        let len = block.len() as u16;
        zlib.extend_from_slice(&len.to_le_bytes());
        zlib.extend_from_slice(&(!len).to_le_bytes());
        zlib.extend_from_slice(block);
    }
    let (mut a, mut b) = (1_u32, 0_u32);
    for &byte in &raw {
        a = (a + u32::from(byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    zlib.extend_from_slice(&((b << 16) | a).to_be_bytes());
    let mut ihdr = width.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 0, 0, 0, 0]);
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    for (kind, data) in [(b"IHDR", ihdr), (b"IDAT", zlib), (b"IEND", Vec::new())] {
        png.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut chunk = kind.to_vec();
        chunk.extend_from_slice(&data);
        png.extend_from_slice(&chunk);
        png.extend_from_slice(&crc32(&chunk).to_be_bytes());
    }
    png
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0_u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Read the screenshot, [`STEPS`] Bash steps of about 700 tokens of output each, read a
/// second screenshot (which makes the first one no longer the newest image), then
/// [`STEPS_AFTER`] more steps.
fn script(first: &str, second: &str) -> String {
    let read = |path: &str| {
        serde_json::json!({"content": [
            {"type": "text", "text": "Let me look at the screenshot."},
            {"type": "tool_use", "name": "Read", "input": {"file_path": path}}]})
    };
    let bash = |step: u64| {
        let command = format!(
            "echo step-{step}; seq {} {}",
            step * 1_000,
            step * 1_000 + 400
        );
        serde_json::json!({"content": [
            {"type": "tool_use", "name": "Bash", "input": {"command": command, "description": "Print a range"}}]})
    };
    let mut turns = vec![read(first)];
    turns.extend((0..STEPS).map(bash));
    turns.push(read(second));
    turns.extend((STEPS..STEPS + STEPS_AFTER).map(bash));
    turns.push(serde_json::json!({"content": [{"type": "text", "text": FINAL_ANSWER}]}));
    serde_json::json!({"turns": turns, "final_text": "SCRIPT-FELL-THROUGH"}).to_string()
}

#[test]
fn claude_code_reads_a_png_counted_by_its_pixels_and_later_dropped_whole() {
    let machine = Machine::fresh();
    let repo = machine.path("work/site");
    std::fs::create_dir_all(&repo).unwrap();
    // The historian off: with it on, the first image's turns are summarised into a
    // compartment and leave the prompt by a fold before they are stale, so a drop (what this
    // test is about) never comes.
    let config_dir = machine.path("xdg/magic-context");
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::write(
        config_dir.join("magic-context.jsonc"),
        r#"{"historian": {"enabled": false}}"#,
    )
    .unwrap();
    let (shot, after) = (repo.join("before.png"), repo.join("after.png"));
    std::fs::write(&shot, png(WIDTH, HEIGHT)).unwrap();
    std::fs::write(&after, png(WIDTH, HEIGHT)).unwrap();
    assert!(std::fs::metadata(&shot).unwrap().len() > 900_000);
    let text = script(shot.to_str().unwrap(), after.to_str().unwrap());
    let script = Script::install(&machine, "image.json", &text);
    let setup = Setup {
        sim_window_tokens: WINDOW_TOKENS,
        token_scale: 1.0,
        proxy_window_tokens: Some(WINDOW_TOKENS),
        sim_historian: "honest",
    };
    let session = ClaudeSession::run(machine, &repo, &script, setup);
    let diagnostics = || session.diagnostics("claude code reading a png");

    // Finished, nothing refused, every call inside the window.
    assert!(
        session.status.success() && session.stdout.contains(FINAL_ANSWER),
        "{}",
        diagnostics()
    );
    assert!(session.api_errors.is_empty(), "{}", diagnostics());
    let main: Vec<_> = session.main_calls().collect();
    assert!(
        main.iter()
            .all(|call| call.status == 200 && call.prompt_tokens <= WINDOW_TOKENS),
        "{}",
        diagnostics()
    );

    // The call that first carried the image grew by about the rule's tokens (plus the Read
    // call and the result's framing), not by its 1.2 MB of base64.
    let grew = main[1].prompt_tokens.saturating_sub(main[0].prompt_tokens);
    eprintln!("the image's call grew the prompt by {grew} tokens; the rule: {RULE_TOKENS}");
    assert!(
        (RULE_TOKENS..RULE_TOKENS + 600).contains(&grew),
        "grew by {grew}\n{}",
        diagnostics()
    );

    // The proxy stored both results whole; once stale, the first one's drop landed, and the
    // newest image's never did.
    let store = Store::open(session.store_path()).unwrap();
    let image_results_landed = store
        .read(|tx| {
            let mut landed_per_result = Vec::new();
            for record in tx.list_sessions(usize::MAX)? {
                let tags = tx.tags(&record.id)?;
                let landed: Vec<_> = tx
                    .drops(&record.id)?
                    .into_iter()
                    .filter(|row| row.landed_pass.is_some())
                    .map(|row| row.tag)
                    .collect();
                for row in tx.messages(&record.id, ..)? {
                    for (index, part) in row.message.parts.iter().enumerate() {
                        let Part::ToolResult { content, .. } = part else {
                            continue;
                        };
                        let holds_image = content.iter().any(|inner| {
                            matches!(
                                inner,
                                Part::Media {
                                    media: MediaKind::Image,
                                    ..
                                }
                            )
                        });
                        if !holds_image {
                            continue;
                        }
                        let unit = UnitRef {
                            ordinal: row.ordinal,
                            part: index as u32,
                        };
                        let tag = tags.iter().find(|a| a.unit == unit).map(|a| a.tag);
                        landed_per_result.push(tag.is_some_and(|tag| landed.contains(&tag)));
                    }
                }
            }
            Ok(landed_per_result)
        })
        .unwrap();
    eprintln!("image results, landed or not: {image_results_landed:?}");
    assert_eq!(
        image_results_landed,
        [true, false],
        "the first image was not dropped, or the newest was\n{}",
        diagnostics()
    );
}
