//! A relay between the proxy and the simulator that records every upstream request body and
//! trickles each response back, so a crash test can compare the bytes a retried request sent
//! upstream with those of the interrupted one, and can kill the proxy while streams are open.
//!
//! One exchange per connection: the relay tells both sides `connection: close`, so it never
//! has to find where one response ends and the next request begins. Bodies are keyed by the
//! client's `x-crash-turn` header, which the proxy passes through like any end-to-end header.
//! The MCP end-to-end test files a real Claude Code's requests under one key (Claude Code sends
//! the header from `ANTHROPIC_CUSTOM_HEADERS`) to see what the model was sent.
//!
//! A labelling relay ([`Relay::start_labelling`]) instead sorts each request by its body
//! (a client's main call, the proxy's own calls) and names the kind in the simulator's
//! `x-sim-label` header, so the simulator's ledger rows say which kind of call each was; it
//! files the bodies under the same label and passes responses straight through.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The header naming the client turn a request belongs to.
pub const TURN_HEADER: &str = "x-crash-turn";

/// The header the simulator copies into a call's ledger row as its `label`.
const SIM_LABEL_HEADER: &str = "x-sim-label";

/// What kind of call a request body is, for a labelling relay.
pub type Labeller = fn(&[u8]) -> String;

/// Bytes of response written at a time, and the pause after each: an SSE answer of a few
/// kilobytes then streams for a few hundred milliseconds, long enough to be killed inside.
const PIECE_BYTES: usize = 96;
const PIECE_PAUSE: Duration = Duration::from_millis(4);

/// What the relay saw, shared with the test.
#[derive(Default)]
pub struct RelayLog {
    /// Every request body received whole, per turn key (or label), in arrival order.
    bodies: Mutex<HashMap<String, Vec<Vec<u8>>>>,
    /// Requests received whole so far.
    pub received: AtomicUsize,
    /// Responses being trickled back right now.
    pub streaming: AtomicUsize,
}

impl RelayLog {
    /// The last body received for each turn key.
    pub fn last_bodies(&self) -> HashMap<String, Vec<u8>> {
        let bodies = self.bodies.lock().unwrap();
        bodies
            .iter()
            .filter_map(|(turn, all)| Some((turn.clone(), all.last()?.clone())))
            .collect()
    }

    /// The bodies received for one turn key, oldest first.
    pub fn bodies(&self, turn: &str) -> Vec<Vec<u8>> {
        self.bodies
            .lock()
            .unwrap()
            .get(turn)
            .cloned()
            .unwrap_or_default()
    }
}

/// A running relay; its threads end with the test process.
pub struct Relay {
    /// `http://127.0.0.1:PORT`, to give the proxy as its upstream.
    pub base_url: String,
    pub log: Arc<RelayLog>,
}

impl Relay {
    /// Listens on a free loopback port and relays to `upstream` (`http://ADDR`), trickling
    /// each response back.
    pub fn start(upstream: &str) -> Self {
        Self::start_with(upstream, None)
    }

    /// Listens on a free loopback port and relays to `upstream`, labelling each request with
    /// `labeller(body)` (see the module docs) and passing each response back at once.
    pub fn start_labelling(upstream: &str, labeller: Labeller) -> Self {
        Self::start_with(upstream, Some(labeller))
    }

    fn start_with(upstream: &str, labeller: Option<Labeller>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let log = Arc::new(RelayLog::default());
        let upstream = upstream.trim_start_matches("http://").to_owned();
        let shared = Arc::clone(&log);
        std::thread::spawn(move || {
            for client in listener.incoming().map_while(Result::ok) {
                let (log, upstream) = (Arc::clone(&shared), upstream.clone());
                // An exchange cut by the proxy's death simply ends its thread.
                std::thread::spawn(move || relay_one(client, &upstream, &log, labeller));
            }
        });
        Self { base_url, log }
    }
}

fn relay_one(
    client: TcpStream,
    upstream: &str,
    log: &RelayLog,
    labeller: Option<Labeller>,
) -> Option<()> {
    let mut reader = BufReader::new(client.try_clone().ok()?);
    let head = read_head(&mut reader)?;
    let length: usize = header(&head, "content-length")
        .and_then(|value| value.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let label = labeller.map(|labeller| labeller(&body));
    if let Some(key) = label.clone().or_else(|| header(&head, TURN_HEADER)) {
        let mut bodies = log.bodies.lock().unwrap();
        bodies.entry(key).or_default().push(body.clone());
    }
    log.received.fetch_add(1, Ordering::SeqCst);

    let mut sim = TcpStream::connect(upstream).ok()?;
    let head = match &label {
        Some(label) => labelled(&head, label),
        None => head,
    };
    sim.write_all(&closing(&head)).ok()?;
    sim.write_all(&body).ok()?;
    let mut from_sim = BufReader::new(sim);
    let response_head = read_head(&mut from_sim)?;
    log.streaming.fetch_add(1, Ordering::SeqCst);
    let pause = if labeller.is_some() {
        Duration::ZERO
    } else {
        PIECE_PAUSE
    };
    let sent = trickle(&response_head, &mut from_sim, client, pause);
    log.streaming.fetch_sub(1, Ordering::SeqCst);
    sent
}

/// Writes the response head (now closing the connection) and its body in small pieces,
/// `pause` after each.
fn trickle(
    head: &str,
    from_sim: &mut impl Read,
    mut client: TcpStream,
    pause: Duration,
) -> Option<()> {
    client.write_all(&closing(head)).ok()?;
    let mut piece = [0; PIECE_BYTES];
    loop {
        let read = from_sim.read(&mut piece).ok()?;
        if read == 0 {
            return Some(());
        }
        client.write_all(&piece[..read]).ok()?;
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
    }
}

/// The head up to and including its blank line, as text.
fn read_head(reader: &mut impl BufRead) -> Option<String> {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        head.push_str(&line);
        if line == "\r\n" {
            return Some(head);
        }
    }
}

fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim()
            .eq_ignore_ascii_case(name)
            .then(|| value.trim().to_owned())
    })
}

/// The same head with the simulator's label header set to `label` (any it had is replaced).
fn labelled(head: &str, label: &str) -> String {
    let mut out = String::new();
    for line in head.split("\r\n").filter(|line| !line.is_empty()) {
        let is_label = line
            .split_once(':')
            .is_some_and(|(key, _)| key.trim().eq_ignore_ascii_case(SIM_LABEL_HEADER));
        if !is_label {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str(&format!("{SIM_LABEL_HEADER}: {label}\r\n\r\n"));
    out
}

/// The same head with its `connection` header replaced by `connection: close`.
fn closing(head: &str) -> Vec<u8> {
    let mut out = String::new();
    for line in head.split("\r\n").filter(|line| !line.is_empty()) {
        let is_connection = line
            .split_once(':')
            .is_some_and(|(key, _)| key.trim().eq_ignore_ascii_case("connection"));
        if !is_connection {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str("connection: close\r\n\r\n");
    out.into_bytes()
}

#[test]
fn a_head_is_rewritten_to_close_its_connection() {
    let head = "POST /v1/messages HTTP/1.1\r\nConnection: keep-alive\r\nX-Crash-Turn: 3-1\r\n\r\n";
    assert_eq!(
        String::from_utf8(closing(head)).unwrap(),
        "POST /v1/messages HTTP/1.1\r\nX-Crash-Turn: 3-1\r\nconnection: close\r\n\r\n"
    );
    assert_eq!(header(head, TURN_HEADER).as_deref(), Some("3-1"));
}

#[test]
fn a_labelled_head_carries_one_label() {
    let head = "POST /v1/responses HTTP/1.1\r\nX-Sim-Label: old\r\nHost: sim\r\n\r\n";
    let head = labelled(head, "main");
    assert_eq!(
        head,
        "POST /v1/responses HTTP/1.1\r\nHost: sim\r\nx-sim-label: main\r\n\r\n"
    );
    assert_eq!(header(&head, SIM_LABEL_HEADER).as_deref(), Some("main"));
}
