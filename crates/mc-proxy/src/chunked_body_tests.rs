use super::*;

/// `body` held as two chunks, cut two thirds in: a decode of it reads across the cut.
pub(crate) fn cut_in_two(body: &ChunkedBody) -> ChunkedBody {
    let whole = body.to_bytes();
    let at = whole.len() * 2 / 3;
    let mut cut = ChunkedBody::new();
    cut.push(whole.slice(..at));
    cut.push(whole.slice(at..));
    cut
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
    let mut body = ChunkedBody::new();
    for cut in [
        0..10,
        10..70_000,
        70_000..70_001,
        70_001..150_000,
        150_000..200_000,
    ] {
        body.push(Bytes::copy_from_slice(&bytes[cut]));
    }
    assert_eq!(body.chunks().len(), 5);
    let response = reqwest::Client::new()
        .post(format!("http://{address}/"))
        .body(request_body(body))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());
    let (length, transfer, received) = seen_rx.await.unwrap();
    assert_eq!(length.as_deref(), Some("200000"));
    assert_eq!(transfer, None, "not chunked transfer encoding");
    assert_eq!(&received[..], &bytes[..]);
}
