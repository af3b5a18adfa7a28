//! An upstream whose cost does not depend on what it is sent, for timing the proxy.
//!
//! The simulator prices and caches what it receives, and the proxy moves the client's
//! cache markers, so a proxied call and the same body sent straight to the simulator make
//! the simulator do different work: their difference is not the proxy's cost. This
//! upstream reads the body and answers one short streamed message, whatever it was sent,
//! reporting a prompt of a quarter token per byte so the proxy plans as it would against a
//! provider; then the paired difference (proxied minus direct) is the proxy's own time.
//!
//! It speaks just enough HTTP/1.1 for the bench's two clients: keep-alive requests with a
//! `content-length` body.

use std::io;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// Starts serving on a free loopback port; returns its base URL. The server lives as long
/// as the runtime.
pub async fn start() -> io::Result<String> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let url = format!("http://{}", listener.local_addr()?);
    // The bench's runtime owns this server and ends it when the bench ends.
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            // One task per connection, ended by the client's close.
            tokio::spawn(serve_connection(stream));
        }
    });
    Ok(url)
}

/// Answers requests on one connection until the client closes it or sends something this
/// server does not read.
async fn serve_connection(stream: TcpStream) -> io::Result<()> {
    // Small answers must not wait for the client's delayed acknowledgement.
    stream.set_nodelay(true)?;
    let mut stream = BufReader::new(stream);
    loop {
        let mut content_length = None;
        let mut line = String::new();
        loop {
            line.clear();
            if stream.read_line(&mut line).await? == 0 {
                return Ok(());
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                content_length = value.trim().parse::<u64>().ok();
            }
        }
        let Some(length) = content_length else {
            return Ok(());
        };
        let read = tokio::io::copy(&mut (&mut stream).take(length), &mut tokio::io::sink()).await?;
        let answer = answer(read / 4);
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{answer}",
            answer.len()
        );
        stream.get_mut().write_all(response.as_bytes()).await?;
    }
}

/// A complete Anthropic stream of one short text answer.
fn answer(input_tokens: u64) -> String {
    let events = [
        (
            "message_start",
            format!(
                r#"{{"type":"message_start","message":{{"id":"msg_flat","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":{input_tokens},"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}}}}"#
            ),
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#.to_owned(),
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Done."}}"#.to_owned(),
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":0}"#.to_owned(),
        ),
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}"#.to_owned(),
        ),
        ("message_stop", r#"{"type":"message_stop"}"#.to_owned()),
    ];
    events
        .iter()
        .map(|(event, data)| format!("event: {event}\ndata: {data}\n\n"))
        .collect()
}
