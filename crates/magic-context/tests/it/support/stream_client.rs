//! One streaming Anthropic session driven by a thread, as a coding agent drives the proxy:
//! each turn sends the whole conversation so far, reads the streamed answer to its end and
//! appends it; a turn whose answer did not arrive whole is sent again, byte for byte, once
//! the proxy is back.
//!
//! Requests go over plain HTTP/1.1 with `connection: close`, so "fully received" is exact:
//! the chunked body ended with its last chunk and the stream with `message_stop`.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use super::recording_relay::TURN_HEADER;

/// How long a client waits for an answer, or for the proxy to come back.
const PATIENCE: Duration = Duration::from_secs(120);

/// Refusals (a non-200 answer) tolerated in a row before a turn gives up.
const MAX_REFUSALS: u32 = 5;

/// Where the proxy listens now; a restart publishes a new address.
#[derive(Default)]
pub struct ProxyAddress {
    current: Mutex<(u64, String)>,
    changed: Condvar,
}

impl ProxyAddress {
    /// Publishes the address of a (re)started proxy.
    pub fn publish(&self, base_url: &str) {
        let mut current = self.current.lock().unwrap();
        *current = (current.0 + 1, base_url.to_owned());
        self.changed.notify_all();
    }

    fn get(&self) -> (u64, String) {
        self.current.lock().unwrap().clone()
    }

    /// Waits until an address newer than `generation` is published.
    fn wait_past(&self, generation: u64) -> Result<(), String> {
        let current = self.current.lock().unwrap();
        let (current, timeout) = self
            .changed
            .wait_timeout_while(current, PATIENCE, |(seen, _)| *seen <= generation)
            .unwrap();
        if timeout.timed_out() {
            return Err(format!("the proxy did not come back (still {})", current.1));
        }
        Ok(())
    }
}

/// What the sessions share with the test while they run.
#[derive(Default)]
pub struct Fleet {
    /// Where the proxy listens.
    pub proxy: ProxyAddress,
    /// Requests written to the proxy so far.
    pub sent: AtomicUsize,
    /// Per session, the messages of its last fully answered request, as (role, text): what
    /// the proxy has acknowledged and must not lose.
    pub acknowledged: Mutex<HashMap<String, Vec<(String, String)>>>,
}

/// What one session did.
#[derive(Debug, Default)]
pub struct SessionRun {
    /// The `x-magic-context-session` it sent.
    pub session: String,
    /// The messages of its last fully answered request, as (role, text).
    pub acknowledged: Vec<(String, String)>,
    /// The turn keys sent again after a failure.
    pub retried: Vec<String>,
    /// Why it stopped early, if it did.
    pub failure: Option<String>,
}

/// Runs `turns` turns of session `index`.
pub fn run_session(index: usize, turns: usize, fleet: &Fleet) -> SessionRun {
    let mut run = SessionRun {
        session: format!("crash-{index}"),
        ..SessionRun::default()
    };
    let mut messages: Vec<(String, String)> = Vec::new();
    for turn in 0..turns {
        messages.push(("user".into(), user_text(index, turn)));
        let key = format!("{index}-{turn}");
        let body = request_body(&messages);
        match send_until_answered(&run.session, &key, &body, fleet) {
            Ok((answer, retried)) => {
                if retried {
                    run.retried.push(key);
                }
                run.acknowledged = messages.clone();
                let mut acknowledged = fleet.acknowledged.lock().unwrap();
                acknowledged.insert(run.session.clone(), messages.clone());
                drop(acknowledged);
                messages.push(("assistant".into(), answer));
            }
            Err(why) => {
                run.failure = Some(format!("turn {key}: {why}"));
                break;
            }
        }
    }
    run
}

/// A user message long enough that ingesting it is real work, and unique per session.
pub fn user_text(index: usize, turn: usize) -> String {
    format!(
        "Session {index}, turn {turn}: read the module and list what each function does. {}",
        "The notes below are context for the task. ".repeat(12 + turn)
    )
}

/// An Anthropic streaming request carrying `messages`, as (role, text).
pub fn request_body(messages: &[(String, String)]) -> Vec<u8> {
    let messages: Vec<Value> = messages
        .iter()
        .map(|(role, text)| json!({"role": role, "content": [{"type": "text", "text": text}]}))
        .collect();
    serde_json::to_vec(&json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "stream": true,
        "system": "You are a careful coding agent.",
        "messages": messages,
    }))
    .unwrap()
}

/// Sends one turn until its answer arrives whole; `true` when it had to be sent again.
fn send_until_answered(
    session: &str,
    key: &str,
    body: &[u8],
    fleet: &Fleet,
) -> Result<(String, bool), String> {
    let mut retried = false;
    let mut refusals = 0;
    loop {
        let (generation, base_url) = fleet.proxy.get();
        match post(&base_url, session, key, body, &fleet.sent) {
            Ok(answer) => return Ok((answer, retried)),
            Err(Failure::Refused(why)) => {
                refusals += 1;
                if refusals >= MAX_REFUSALS {
                    return Err(why);
                }
                retried = true;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(Failure::Cut) => {
                retried = true;
                fleet.proxy.wait_past(generation)?;
            }
        }
    }
}

enum Failure {
    /// The proxy answered, but not with a stream: a refusal to be reported.
    Refused(String),
    /// The connection failed or the answer ended early: the proxy died.
    Cut,
}

fn post(
    base_url: &str,
    session: &str,
    key: &str,
    body: &[u8],
    sent: &AtomicUsize,
) -> Result<String, Failure> {
    let (head, rest) = exchange(base_url, session, key, body, sent).ok_or(Failure::Cut)?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(Failure::Refused(format!("{head}\n{rest}")));
    }
    let sse = whole_body(&head, &rest).ok_or(Failure::Cut)?;
    answer_text(&sse).ok_or(Failure::Cut)
}

/// The response body, or `None` when it ended early: chunked bodies end with their last
/// chunk, others with as many bytes as `content-length` says (the proxy sends a stream it
/// assembled itself, after running its own tools, with a length).
fn whole_body(head: &str, rest: &str) -> Option<String> {
    let header = |name: &str| {
        head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then(|| value.trim().to_owned())
        })
    };
    if header("transfer-encoding").is_some_and(|value| value.eq_ignore_ascii_case("chunked")) {
        return dechunk(rest);
    }
    let length: usize = header("content-length")?.parse().ok()?;
    (rest.len() == length).then(|| rest.to_owned())
}

/// Sends one request and returns the response's head and whatever of its body arrived;
/// `None` when the request could not be sent or no head came back.
pub fn exchange(
    base_url: &str,
    session: &str,
    key: &str,
    body: &[u8],
    sent: &AtomicUsize,
) -> Option<(String, String)> {
    let address = base_url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).ok()?;
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let head = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\n\
         anthropic-version: 2023-06-01\r\nx-api-key: sk-test-not-a-key\r\n\
         x-magic-context-session: {session}\r\n{TURN_HEADER}: {key}\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).ok()?;
    stream.write_all(body).ok()?;
    sent.fetch_add(1, Ordering::SeqCst);
    let mut response = Vec::new();
    // A reset mid-read still leaves what arrived, which the caller judges.
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response);
    let (head, rest) = text.split_once("\r\n\r\n")?;
    Some((head.to_owned(), rest.to_owned()))
}

/// The body of a chunked response, or `None` when it stops before its last chunk.
fn dechunk(mut rest: &str) -> Option<String> {
    let mut body = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n")?;
        let size = usize::from_str_radix(size.trim(), 16).ok()?;
        if size == 0 {
            return Some(body);
        }
        body.push_str(after.get(..size)?);
        rest = after.get(size..)?.strip_prefix("\r\n")?;
    }
}

/// The streamed text of a complete answer, or `None` when the stream lacks `message_stop`.
fn answer_text(sse: &str) -> Option<String> {
    let mut text = String::new();
    let mut stopped = false;
    for data in sse.lines().filter_map(|line| line.strip_prefix("data: ")) {
        let Ok(event) = serde_json::from_str::<Value>(data) else {
            continue;
        };
        match event["type"].as_str() {
            Some("content_block_delta") => {
                text.push_str(event["delta"]["text"].as_str().unwrap_or(""));
            }
            Some("message_stop") => stopped = true,
            _ => {}
        }
    }
    stopped.then_some(text)
}

#[test]
fn only_a_stream_that_ends_is_an_answer() {
    let sse = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n\
               event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    let chunked = format!("{:x}\r\n{sse}\r\n0\r\n\r\n", sse.len());
    assert_eq!(
        dechunk(&chunked)
            .and_then(|sse| answer_text(&sse))
            .as_deref(),
        Some("Hi")
    );
    let cut = &chunked[..chunked.len() - 5];
    assert_eq!(dechunk(cut), None);
    let no_stop = sse.split("event: message_stop").next().unwrap();
    assert_eq!(answer_text(no_stop), None);
}
