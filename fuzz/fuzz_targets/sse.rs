//! The SSE decoder: no panic on any bytes; the same events and the same error whether the
//! stream arrives whole or cut into chunks anywhere (the first bytes of the input choose the
//! cuts and, sometimes, a small event limit); and every decoded event re-encoded with
//! `encode_event` decodes back to the same event name and data.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mc_wire::sse::{SseDecoder, SseError, SseEvent, encode_event};

fn decoder(limit: Option<usize>) -> SseDecoder {
    limit.map_or_else(SseDecoder::new, SseDecoder::with_max_event_bytes)
}

/// Every event completed, and how the stream ended.
fn decode<'a>(
    limit: Option<usize>,
    chunks: impl Iterator<Item = &'a [u8]>,
) -> (Vec<SseEvent>, Result<(), SseError>) {
    let mut decoder = decoder(limit);
    let mut events = Vec::new();
    for chunk in chunks {
        if let Err(error) = decoder.push_into(chunk, &mut events) {
            return (events, Err(error));
        }
    }
    (events, decoder.finish())
}

fuzz_target!(|data: &[u8]| {
    let (control, stream) = data.split_at(data.len().min(4));
    let limit = match control {
        [flags, size, ..] if flags & 0x80 != 0 => Some(usize::from(*size) * 4),
        _ => None,
    };
    let whole = decode(limit, std::iter::once(stream));

    // Chunk sizes cycle through the control bytes (1 to 16 bytes each).
    let mut sizes = control.iter().map(|b| usize::from(b & 0x0f) + 1).cycle();
    let mut rest = stream;
    let mut chunks = Vec::new();
    while !rest.is_empty() {
        let size = sizes.next().unwrap_or(1).min(rest.len());
        let (chunk, tail) = rest.split_at(size);
        chunks.push(chunk);
        rest = tail;
    }
    let chunked = decode(limit, chunks.iter().copied());
    assert_eq!(
        whole, chunked,
        "chunking changed what the stream decodes to"
    );

    for event in &whole.0 {
        let encoded = encode_event(event.event.as_deref(), &event.data);
        let (again, end) = decode(None, std::iter::once(encoded.as_bytes()));
        assert_eq!(end, Ok(()), "an encoded event does not end cleanly");
        assert_eq!(
            again.len(),
            1,
            "an encoded event decodes to {} events",
            again.len()
        );
        assert_eq!(
            again[0].event, event.event,
            "encode_event changed the event name"
        );
        assert_eq!(again[0].data, event.data, "encode_event changed the data");
    }
});
