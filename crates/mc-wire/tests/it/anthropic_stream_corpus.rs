//! Every recorded Claude Code SSE stream decodes, re-encodes losslessly and accumulates to a
//! complete message, however its bytes are chunked.

use mc_wire::anthropic::{ContentBlock, EventKind, MessageAccumulator, StreamEvent};
use mc_wire::sse::{SseDecoder, SseEvent};

use crate::shared_data;

fn recorded_streams() -> Vec<String> {
    shared_data::anthropic_capture()
        .iter()
        .filter_map(|pair| pair["response"]["body_raw"].as_str().map(str::to_owned))
        .collect()
}

fn decode_in_chunks(stream: &[u8], chunk: usize) -> Vec<SseEvent> {
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    for piece in stream.chunks(chunk) {
        decoder.push_into(piece, &mut events).unwrap();
    }
    decoder.finish().unwrap();
    events
}

#[test]
fn every_recorded_stream_decodes_and_accumulates() {
    let streams = recorded_streams();
    assert_eq!(streams.len(), 46, "the capture holds 46 streamed responses");
    let mut tool_uses = 0;
    for (number, stream) in streams.iter().enumerate() {
        let frames = decode_in_chunks(stream.as_bytes(), usize::MAX);
        for chunk in [1, 7, 64] {
            assert_eq!(
                decode_in_chunks(stream.as_bytes(), chunk),
                frames,
                "stream {number}, chunks of {chunk}"
            );
        }
        let mut accumulator = MessageAccumulator::new();
        for frame in &frames {
            let event = StreamEvent::decode(frame.data.as_bytes(), 1 << 20).unwrap();
            assert_eq!(
                frame.event.as_deref(),
                Some(event.kind.as_str()),
                "stream {number}"
            );
            let reserialised = serde_json::to_vec(
                &serde_json::from_str::<serde_json::Value>(&frame.data).unwrap(),
            )
            .unwrap();
            assert_eq!(
                event.encode(),
                reserialised,
                "stream {number}: event re-encodes losslessly"
            );
            accumulator.push(&event).unwrap();
        }
        assert!(
            accumulator.is_complete(),
            "stream {number} ends with message_stop"
        );
        let message = accumulator.finish().unwrap();
        assert!(
            message.stop_reason().is_some(),
            "stream {number} has a stop reason"
        );
        let usage = message.usage.unwrap();
        assert!(
            usage.input_tokens.is_some() && usage.output_tokens.is_some(),
            "stream {number}"
        );
        for block in &message.content {
            if let ContentBlock::ToolUse(tool_use) = block {
                assert!(
                    tool_use.input.is_object(),
                    "stream {number}: tool input accumulated to an object"
                );
                tool_uses += 1;
            }
        }
    }
    assert!(tool_uses > 0, "the capture's streams include tool calls");
}

#[test]
fn deltas_for_missing_blocks_are_errors() {
    let mut accumulator = MessageAccumulator::new();
    let start = r#"{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":1}}}"#;
    accumulator
        .push(&StreamEvent::decode(start.as_bytes(), 1 << 20).unwrap())
        .unwrap();
    let delta =
        r#"{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}"#;
    let error = accumulator
        .push(&StreamEvent::decode(delta.as_bytes(), 1 << 20).unwrap())
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid value at `$[1]`: delta for block 3, which never started"
    );
    assert_eq!(
        StreamEvent::new(EventKind::Ping).encode(),
        br#"{"type":"ping"}"#
    );
}
