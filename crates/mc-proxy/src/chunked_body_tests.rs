use proptest::prelude::*;

use super::*;

/// A body of `bytes` cut at `cuts` (offsets, any order, duplicates allowed).
fn chunked(bytes: &[u8], cuts: &[usize]) -> ChunkedBody {
    let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut % (bytes.len() + 1)).collect();
    cuts.push(0);
    cuts.push(bytes.len());
    cuts.sort_unstable();
    let mut body = ChunkedBody::new();
    for pair in cuts.windows(2) {
        body.push(Bytes::copy_from_slice(&bytes[pair[0]..pair[1]]));
    }
    body
}

proptest! {
    /// However a body is cut, it reads as its bytes: whole, byte by byte, by any range
    /// (sliced or in one piece), and bounded.
    #[test]
    fn a_chunked_body_reads_as_its_bytes(
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
        start in any::<usize>(),
        end in any::<usize>(),
    ) {
        let body = chunked(&bytes, &cuts);
        prop_assert_eq!(body.len(), bytes.len());
        prop_assert_eq!(&body.to_bytes()[..], &bytes[..]);
        prop_assert!(body.chunks().iter().all(|chunk| !chunk.is_empty()));
        for (at, byte) in bytes.iter().enumerate() {
            prop_assert_eq!(&body.get(at..at + 1).unwrap()[..], &[*byte][..]);
        }
        prop_assert!(body.get(bytes.len()..bytes.len() + 1).is_none());
        let (start, end) = (start % (bytes.len() + 1), end % (bytes.len() + 1));
        let range = start.min(end)..start.max(end);
        let slice = body.slice(range.clone()).unwrap();
        prop_assert_eq!(&slice.to_bytes()[..], &bytes[range.clone()]);
        prop_assert_eq!(&body.get(range.clone()).unwrap()[..], &bytes[range]);
        prop_assert_eq!(&body.clone().bounded().to_bytes()[..], &bytes[..]);
    }
}

#[test]
fn ranges_outside_the_body_are_none() {
    let body = chunked(b"[1,2,3]", &[2, 4]);
    assert!(body.slice(3..8).is_none());
    assert!(body.get(6..9).is_none());
    let reversed = Range { start: 5, end: 2 };
    assert!(body.slice(reversed.clone()).is_none());
    assert!(body.get(reversed).is_none());
    assert_eq!(body.get(7..7).unwrap().as_ref(), b"");
}

#[test]
fn a_range_inside_one_chunk_is_borrowed_and_slices_share_the_buffers() {
    let body = chunked(b"{\"messages\":[1,2,3]}", &[13, 17]);
    assert!(matches!(body.get(13..16), Some(Cow::Borrowed(b"1,2"))));
    assert!(matches!(body.get(10..15), Some(Cow::Owned(_))));
    let slice = body.slice(14..19).unwrap();
    assert_eq!(slice.chunks().len(), 2);
    assert_eq!(
        slice.chunks()[0].as_ptr(),
        body.chunks()[1][1..].as_ptr(),
        "a slice points into the body's own buffer"
    );
}

#[test]
fn too_many_chunks_are_joined_into_one() {
    let mut body = ChunkedBody::new();
    for byte in 0..=u8::try_from(MAX_CHUNKS).unwrap() {
        body.push(Bytes::copy_from_slice(&[byte]));
    }
    let bytes = body.to_bytes();
    let bounded = body.bounded();
    assert_eq!(bounded.chunks().len(), 1);
    assert_eq!(bounded.to_bytes(), bytes);
    let few = chunked(b"abcdef", &[2, 4]).bounded();
    assert_eq!(few.chunks().len(), 3, "within the bound: left as it is");
}

/// The body a server receives is the chunks in order, announced by their exact length.
#[tokio::test]
async fn a_chunked_body_is_sent_whole_with_its_length() {
    use axum::http::HeaderMap;
    use axum::routing::post;
    use std::sync::{Arc, Mutex};
    use tokio::sync::oneshot;

    let (seen_tx, seen_rx) = oneshot::channel::<(Option<String>, Option<String>, Bytes)>();
    let seen = Arc::new(Mutex::new(Some(seen_tx)));
    let app = axum::Router::new().route(
        "/",
        post(move |headers: HeaderMap, body: Bytes| {
            let seen = Arc::clone(&seen);
            async move {
                let header = |name: &str| {
                    headers
                        .get(name)
                        .and_then(|value| value.to_str().ok())
                        .map(str::to_owned)
                };
                if let Some(tx) = seen.lock().unwrap().take() {
                    let _ = tx.send((header("content-length"), header("transfer-encoding"), body));
                }
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });

    let bytes: Vec<u8> = (0..200_000u32).map(|at| (at % 251) as u8).collect();
    let body = chunked(&bytes, &[10, 70_000, 70_001, 150_000]);
    assert_eq!(body.chunks().len(), 5);
    let response = reqwest::Client::new()
        .post(format!("http://{address}/"))
        .body(body.into_request_body())
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());
    let (length, transfer, received) = seen_rx.await.unwrap();
    assert_eq!(length.as_deref(), Some("200000"));
    assert_eq!(transfer, None, "not chunked transfer encoding");
    assert_eq!(&received[..], &bytes[..]);
}
