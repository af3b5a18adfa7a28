//! Asks an address whether a Magic Context proxy listens there.
//!
//! `run` reuses a proxy that already listens instead of starting a second one, and `doctor`
//! checks that a configured host points at a live proxy. An open port alone proves nothing
//! (another program may hold 4141), so the probe asks the proxy's health route and checks
//! that the answer names our service. A plain HTTP/1.0 exchange on a blocking socket with
//! short timeouts keeps this free of an HTTP client and of a runtime.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use mc_proxy::{HEALTH_PATH, SERVICE_NAME};
use serde_json::Value;

/// How long the probe waits to connect, and then for each read: a local proxy answers in
/// milliseconds, and a slow answer must not delay the agent's start noticeably.
const PROBE_TIMEOUT: Duration = Duration::from_millis(1500);
/// The most the probe reads: the health answer is a few dozen bytes.
const MAX_ANSWER_BYTES: u64 = 64 * 1024;

/// What listens at an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listener {
    /// Nothing accepts connections there.
    Nothing,
    /// Something listens, but it did not answer as our proxy does.
    Other,
    /// Our proxy; `store_ok` is false when it refuses managed calls (its store is down).
    MagicContext {
        /// The proxy's version.
        version: String,
        /// Whether its store opened.
        store_ok: bool,
    },
}

/// Probes `addr`.
pub fn probe(addr: SocketAddr) -> Listener {
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, PROBE_TIMEOUT) else {
        return Listener::Nothing;
    };
    let _ = stream.set_read_timeout(Some(PROBE_TIMEOUT));
    let _ = stream.set_write_timeout(Some(PROBE_TIMEOUT));
    let request = format!("GET {HEALTH_PATH} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return Listener::Other;
    }
    let mut answer = Vec::new();
    if (&mut stream)
        .take(MAX_ANSWER_BYTES)
        .read_to_end(&mut answer)
        .is_err()
    {
        return Listener::Other;
    }
    identify(&answer)
}

/// Probes the host and port of a base URL such as `http://127.0.0.1:4141/v1`; `None` when
/// the URL names no reachable host and port.
pub fn probe_url(base_url: &str) -> Option<Listener> {
    let rest = base_url.strip_prefix("http://")?;
    let authority = rest.split('/').next()?;
    let addr = authority.to_socket_addrs().ok()?.next()?;
    Some(probe(addr))
}

/// Reads an HTTP answer: a 200 whose JSON body names our service.
fn identify(answer: &[u8]) -> Listener {
    let text = String::from_utf8_lossy(answer);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return Listener::Other;
    };
    let is_ok = head
        .lines()
        .next()
        .is_some_and(|status| status.split_whitespace().nth(1) == Some("200"));
    let Ok(json) = serde_json::from_str::<Value>(body) else {
        return Listener::Other;
    };
    if !is_ok || json["service"] != SERVICE_NAME {
        return Listener::Other;
    }
    Listener::MagicContext {
        version: json["version"].as_str().unwrap_or("?").to_owned(),
        store_ok: json["store"] == "ok",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_health_answer_counts_as_our_proxy() {
        let ours = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{\"service\":\"magic-context\",\"version\":\"0.1.0\",\"store\":\"ok\"}";
        assert_eq!(
            identify(ours),
            Listener::MagicContext {
                version: "0.1.0".to_owned(),
                store_ok: true
            }
        );
        let down = b"HTTP/1.1 200 OK\r\n\r\n{\"service\":\"magic-context\",\"version\":\"0.1.0\",\"store\":\"unavailable\"}";
        assert_eq!(
            identify(down),
            Listener::MagicContext {
                version: "0.1.0".to_owned(),
                store_ok: false
            }
        );
        let forwarded = b"HTTP/1.1 404 Not Found\r\n\r\n{\"service\":\"magic-context\"}";
        assert_eq!(identify(forwarded), Listener::Other);
        assert_eq!(identify(b"HTTP/1.1 200 OK\r\n\r\nhello"), Listener::Other);
        assert_eq!(identify(b"garbage"), Listener::Other);
    }

    #[test]
    fn a_closed_port_is_nothing() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        assert_eq!(probe(addr), Listener::Nothing);
        assert_eq!(probe_url("https://example.invalid"), None);
    }
}
