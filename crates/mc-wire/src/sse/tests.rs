//! Tests of the SSE decoder.

use super::*;
use proptest::prelude::*;

/// Feeds `bytes` cut before each offset in `cuts` (sorted, in range), collecting events
/// with `push_into` so events before an error are kept, then finishes.
fn decode_chunked(
    bytes: &[u8],
    cuts: &[usize],
    limit: usize,
) -> (Vec<SseEvent>, Result<(), SseError>) {
    let mut decoder = SseDecoder::with_max_event_bytes(limit);
    let mut events = Vec::new();
    let mut from = 0;
    for &cut in cuts.iter().chain(std::iter::once(&bytes.len())) {
        if let Err(err) = decoder.push_into(&bytes[from..cut], &mut events) {
            return (events, Err(err));
        }
        from = cut;
    }
    (events, decoder.finish())
}

fn decode_whole(bytes: &[u8]) -> (Vec<SseEvent>, Result<(), SseError>) {
    decode_chunked(bytes, &[], DEFAULT_MAX_EVENT_BYTES)
}

fn decode_bytewise(bytes: &[u8], limit: usize) -> (Vec<SseEvent>, Result<(), SseError>) {
    let cuts: Vec<usize> = (1..bytes.len()).collect();
    decode_chunked(bytes, &cuts, limit)
}

/// Decodes a stream that must be clean, returning its events.
fn decode_ok(bytes: &[u8]) -> Vec<SseEvent> {
    let (events, end) = decode_whole(bytes);
    assert_eq!(end, Ok(()), "stream {:?}", String::from_utf8_lossy(bytes));
    events
}

/// Where `needle` starts in `stream`, so expected offsets are not hand-counted.
fn offset_of(stream: &str, needle: &str) -> u64 {
    len_u64(stream.find(needle).expect("needle is in the stream"))
}

fn ev(event: Option<&str>, data: &str, offset: u64) -> SseEvent {
    SseEvent {
        event: event.map(str::to_owned),
        data: data.to_owned(),
        id: None,
        retry: None,
        offset,
    }
}

#[test]
fn spec_multiline_data_is_joined_with_lf() {
    let events = decode_ok(b"data: YHOO\ndata: +2\ndata: 10\n\n");
    assert_eq!(events, vec![ev(None, "YHOO\n+2\n10", 0)]);
}

#[test]
fn spec_comments_ids_and_leading_space() {
    let stream = b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\n\
                   data:  third event\n\n";
    let events = decode_ok(stream);
    assert_eq!(
        events,
        vec![
            SseEvent {
                id: Some("1".into()),
                ..ev(None, "first event", 15)
            },
            SseEvent {
                id: Some(String::new()),
                ..ev(None, "second event", 40)
            },
            ev(None, " third event", 62),
        ]
    );
}

#[test]
fn spec_field_without_colon_has_empty_value() {
    let (events, end) = decode_whole(b"data\n\ndata\ndata\n\ndata:");
    assert_eq!(events, vec![ev(None, "", 0), ev(None, "\n", 6)]);
    assert_eq!(
        end,
        Err(SseError::Truncated {
            pending_bytes: 5,
            offset: 17
        })
    );
}

#[test]
fn spec_space_after_colon_is_optional() {
    let events = decode_ok(b"data:test\n\ndata: test\n\n");
    assert_eq!(events, vec![ev(None, "test", 0), ev(None, "test", 11)]);
}

#[test]
fn cr_crlf_and_mixed_line_endings() {
    let want = vec![ev(Some("a"), "x\ny", 0)];
    assert_eq!(decode_ok(b"event: a\rdata: x\rdata: y\r\r"), want);
    let crlf = decode_ok(b"event: a\r\ndata: x\r\ndata: y\r\n\r\n");
    assert_eq!(crlf, want);
    assert_eq!(decode_ok(b"event: a\ndata: x\r\ndata: y\r\r\n"), want);
}

#[test]
fn crlf_split_across_chunks_is_one_line_ending() {
    let bytes = b"data: a\r\ndata: b\r\n\r\n";
    for cut in 0..=bytes.len() {
        let (events, end) = decode_chunked(bytes, &[cut], DEFAULT_MAX_EVENT_BYTES);
        assert_eq!(
            (events, end),
            (vec![ev(None, "a\nb", 0)], Ok(())),
            "cut at {cut}"
        );
    }
}

#[test]
fn utf8_character_split_across_chunks() {
    let bytes = "data: é∑🙂\n\n".as_bytes();
    for cut in 0..=bytes.len() {
        let (events, end) = decode_chunked(bytes, &[cut], DEFAULT_MAX_EVENT_BYTES);
        assert_eq!(
            (events, end),
            (vec![ev(None, "é∑🙂", 0)], Ok(())),
            "cut at {cut}"
        );
    }
}

#[test]
fn bom_is_stripped_once_even_when_split() {
    let bytes = b"\xEF\xBB\xBFdata: x\n\n";
    assert_eq!(
        decode_bytewise(bytes, DEFAULT_MAX_EVENT_BYTES),
        (vec![ev(None, "x", 3)], Ok(()))
    );
    // A second BOM is part of the field name, "\u{feff}data", an unknown field.
    assert_eq!(decode_ok(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\n"), vec![]);
    // A lone BOM prefix is a cut first line; a BOM prefix then other bytes is content.
    let end = decode_whole(b"\xEF\xBB").1;
    assert_eq!(
        end,
        Err(SseError::Truncated {
            pending_bytes: 2,
            offset: 0
        })
    );
    let bad = decode_bytewise(b"\xEF\xBBdata: x\n\n", DEFAULT_MAX_EVENT_BYTES).1;
    assert_eq!(bad, Err(SseError::InvalidUtf8 { offset: 0 }));
}

#[test]
fn retry_accepts_digits_only() {
    let stream = b"retry: 1000\ndata: a\n\nretry: 10a0\ndata: b\n\nretry:\ndata: c\n\n\
                   retry: 99999999999999999999999\ndata: d\n\nretry: -5\ndata: e\n\n";
    let events = decode_ok(stream);
    let retries: Vec<Option<u64>> = events.iter().map(|e| e.retry).collect();
    assert_eq!(retries, vec![Some(1000), None, None, None, None]);
}

#[test]
fn events_without_data_are_not_dispatched() {
    let events = decode_ok(b"event: lonely\n\nid: 7\nretry: 5\n\nevent: real\ndata: x\n\n");
    assert_eq!(events, vec![ev(Some("real"), "x", 31)]);
}

#[test]
fn fields_reset_between_events_and_odd_fields_are_ignored() {
    let stream = b"event: a\nid: 1\nfoo: bar\ndata: x\n\ndata: y\nid: a\0b\n\n";
    let events = decode_ok(stream);
    assert_eq!(
        events,
        vec![
            SseEvent {
                id: Some("1".into()),
                ..ev(Some("a"), "x", 0)
            },
            ev(None, "y", 33)
        ]
    );
}

#[test]
fn empty_event_name_is_kept_as_some_empty() {
    assert_eq!(
        decode_ok(b"event:\ndata: x\n\n"),
        vec![ev(Some(""), "x", 0)]
    );
}

#[test]
fn anthropic_stream_shape() {
    let stream = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":25}}}\n\n",
        "event: ping\n",
        "data: {\"type\": \"ping\"}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hé\"}}\n\n",
        "event: message_stop\n",
        "data: {\"type\":\"message_stop\"}\n\n",
    );
    let events = decode_ok(stream.as_bytes());
    let names: Vec<Option<&str>> = events.iter().map(|e| e.event.as_deref()).collect();
    let want = [
        Some("message_start"),
        Some("ping"),
        Some("content_block_delta"),
        Some("message_stop"),
    ];
    assert_eq!(names, want);
    assert_eq!(
        events[1],
        ev(
            Some("ping"),
            "{\"type\": \"ping\"}",
            offset_of(stream, "event: ping")
        )
    );
    assert_eq!(
        decode_bytewise(stream.as_bytes(), DEFAULT_MAX_EVENT_BYTES),
        (events, Ok(()))
    );
}

#[test]
fn openai_stream_ends_with_done() {
    let stream = concat!(
        "data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n",
        ": keep-alive\n\n",
        "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":3}}\n\n",
        "data: [DONE]\n\n",
    );
    let events = decode_ok(stream.as_bytes());
    assert_eq!(events.len(), 3);
    assert!(events.iter().all(|e| e.event.is_none()));
    assert_eq!(
        events[2],
        ev(None, "[DONE]", offset_of(stream, "data: [DONE]"))
    );
}

#[test]
fn truncated_streams_are_errors_and_clean_ends_are_not() {
    let cases: [(&[u8], Result<(), SseError>); 7] = [
        (b"", Ok(())),
        (b": comment\n", Ok(())),
        (b"data: x\n\n\n\r", Ok(())),
        (
            b"data: x\n",
            Err(SseError::Truncated {
                pending_bytes: 8,
                offset: 0,
            }),
        ),
        (
            b"data: x\n\ndata: y",
            Err(SseError::Truncated {
                pending_bytes: 7,
                offset: 9,
            }),
        ),
        (
            b"event: a\n",
            Err(SseError::Truncated {
                pending_bytes: 9,
                offset: 0,
            }),
        ),
        (
            b"data: x\n\n: cut comm",
            Err(SseError::Truncated {
                pending_bytes: 10,
                offset: 9,
            }),
        ),
    ];
    for (bytes, want) in cases {
        assert_eq!(
            decode_whole(bytes).1,
            want,
            "stream {:?}",
            String::from_utf8_lossy(bytes)
        );
    }
}

#[test]
fn invalid_utf8_reports_stream_offset_and_poisons() {
    let mut decoder = SseDecoder::new();
    assert_eq!(decoder.push(b"data: ok\n\n"), Ok(vec![ev(None, "ok", 0)]));
    let err = SseError::InvalidUtf8 { offset: 17 };
    assert_eq!(decoder.push(b"data: a\xFF\n\n"), Err(err.clone()));
    assert_eq!(decoder.push(b"data: fine\n\n"), Err(err.clone()));
    assert_eq!(decoder.finish(), Err(err));
    // A multibyte character cut by a line ending is invalid where it starts.
    assert_eq!(
        decode_whole(b"data: \xC3\n\n").1,
        Err(SseError::InvalidUtf8 { offset: 6 })
    );
}

#[test]
fn push_into_keeps_events_completed_before_an_error() {
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    let result = decoder.push_into(b"data: a\n\ndata: \xFF\n\n", &mut events);
    assert_eq!(result, Err(SseError::InvalidUtf8 { offset: 15 }));
    assert_eq!(events, vec![ev(None, "a", 0)]);
}

#[test]
fn oversized_line_fails_before_it_is_buffered() {
    let mut decoder = SseDecoder::with_max_event_bytes(16);
    assert_eq!(
        decoder.push(b"data: ok\n\ndata: 0123"),
        Ok(vec![ev(None, "ok", 0)])
    );
    let err = SseError::EventTooLarge {
        limit: 16,
        offset: 10,
    };
    assert_eq!(decoder.push(b"456789abc"), Err(err.clone()));
    assert!(decoder.partial.len() <= 16);
    assert_eq!(decoder.finish(), Err(err));
    let long_comment = decode_chunked(b":0123456789abcdefg\n", &[], 16).1;
    assert_eq!(
        long_comment,
        Err(SseError::EventTooLarge {
            limit: 16,
            offset: 0
        })
    );
}

#[test]
fn oversized_event_reports_where_it_started() {
    let stream = b": hi\ndata: 0123456\ndata: 0123456\ndata: 0123456\n\n";
    let end = decode_chunked(stream, &[], 20).1;
    assert_eq!(
        end,
        Err(SseError::EventTooLarge {
            limit: 20,
            offset: 5
        })
    );
    assert_eq!(
        decode_chunked(stream, &[], 24),
        (vec![ev(None, "0123456\n0123456\n0123456", 5)], Ok(()))
    );
}

#[test]
fn errors_say_what_and_where() {
    let msg = SseError::InvalidUtf8 { offset: 42 }.to_string();
    assert!(msg.contains("invalid UTF-8") && msg.contains("42"), "{msg}");
    let msg = SseError::EventTooLarge {
        limit: 16,
        offset: 7,
    }
    .to_string();
    assert!(
        msg.contains("16-byte limit") && msg.contains("byte 7"),
        "{msg}"
    );
    let msg = SseError::Truncated {
        pending_bytes: 3,
        offset: 9,
    }
    .to_string();
    assert!(msg.contains("3 bytes from byte 9"), "{msg}");
}

#[test]
fn encode_event_is_canonical() {
    assert_eq!(
        encode_event(Some("ping"), "{}"),
        "event: ping\ndata: {}\n\n"
    );
    assert_eq!(encode_event(None, "a\nb"), "data: a\ndata: b\n\n");
    assert_eq!(encode_event(None, ""), "data: \n\n");
    assert_eq!(
        encode_event(None, "a\r\nb\rc\n"),
        "data: a\ndata: b\ndata: c\ndata: \n\n"
    );
    assert_eq!(encode_event(Some("x\ny"), "d"), "event: xy\ndata: d\n\n");
}

#[test]
fn encode_then_decode_round_trips_edge_data() {
    for data in ["", "\n", " lead", "a:b", "\n\n", "é∑🙂\ntrail "] {
        let events = decode_ok(encode_event(Some(""), data).as_bytes());
        assert_eq!(events, vec![ev(Some(""), data, 0)]);
    }
}

/// Random events: names from a small alphabet, data with blank, spaced, colon-bearing
/// and non-ASCII lines.
fn arb_events() -> impl Strategy<Value = Vec<(Option<String>, String)>> {
    let name = prop::option::of("[a-z_]{0,12}");
    let line = "[a-z0-9 :{}\"é∑🙂]{0,16}";
    let data = prop::collection::vec(line, 1..4).prop_map(|lines| lines.join("\n"));
    prop::collection::vec((name, data), 0..8)
}

/// Rewrites each `'\n'` as `"\n"`, `"\r\n"` or `"\r"` per `styles` (cycled). A bare `"\r"`
/// followed by `"\n"` would read as one CRLF, so that pair is written as `"\r\r\n"`.
fn convert_line_endings(text: &str, styles: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() * 2);
    let mut newline_no = 0;
    for &byte in text.as_bytes() {
        if byte != b'\n' {
            out.push(byte);
            continue;
        }
        let style = styles
            .get(newline_no % styles.len().max(1))
            .copied()
            .unwrap_or(0);
        newline_no += 1;
        let after_bare_cr = out.last() == Some(&b'\r');
        match style {
            1 => out.extend_from_slice(b"\r\n"),
            2 => out.push(b'\r'),
            _ if after_bare_cr => out.extend_from_slice(b"\r\n"),
            _ => out.push(b'\n'),
        }
    }
    out
}

fn sorted_cuts(indices: &[prop::sample::Index], len: usize) -> Vec<usize> {
    let mut cuts: Vec<usize> = indices.iter().map(|i| i.index(len + 1)).collect();
    cuts.sort_unstable();
    cuts
}

proptest! {
    #[test]
    fn chunking_never_changes_the_decoded_events(
        events in arb_events(),
        styles in prop::collection::vec(0u8..3, 0..16),
        with_bom: bool,
        cut_at in prop::collection::vec(any::<prop::sample::Index>(), 0..24),
    ) {
        let text: String = events.iter().map(|(e, d)| encode_event(e.as_deref(), d)).collect();
        let mut bytes = if with_bom { BOM.to_vec() } else { Vec::new() };
        bytes.extend(convert_line_endings(&text, &styles));

        let (whole, end) = decode_whole(&bytes);
        prop_assert_eq!(end, Ok(()));
        let got: Vec<(Option<String>, String)> =
            whole.iter().map(|e| (e.event.clone(), e.data.clone())).collect();
        prop_assert_eq!(&got, &events);

        let cuts = sorted_cuts(&cut_at, bytes.len());
        let chunked = decode_chunked(&bytes, &cuts, DEFAULT_MAX_EVENT_BYTES);
        prop_assert_eq!(&chunked, &(whole.clone(), Ok(())));
        prop_assert_eq!(decode_bytewise(&bytes, DEFAULT_MAX_EVENT_BYTES), (whole, Ok(())));
    }

    #[test]
    fn garbage_never_panics_and_chunking_is_invisible(
        bytes in prop::collection::vec(
            prop_oneof![
                any::<u8>(),
                prop::sample::select(b"data: event:id:retry1\r\n\n:\xEF\xBB\xBF\xC3\xA9".to_vec()),
            ],
            0..400,
        ),
        cut_at in prop::collection::vec(any::<prop::sample::Index>(), 0..24),
        limit in prop_oneof![Just(DEFAULT_MAX_EVENT_BYTES), 0usize..64],
    ) {
        let whole = decode_chunked(&bytes, &[], limit);
        let cuts = sorted_cuts(&cut_at, bytes.len());
        prop_assert_eq!(&decode_chunked(&bytes, &cuts, limit), &whole);
        prop_assert_eq!(&decode_bytewise(&bytes, limit), &whole);
    }
}
