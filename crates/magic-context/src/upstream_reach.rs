//! A quick check, before `run` starts the agent, that the provider the proxy forwards to can
//! be reached at all.
//!
//! Without it a provider that cannot be reached (no network, a mistyped upstream in the
//! config) shows only as the agent retrying in silence, for minutes in Claude Code's case.
//! The check is a TCP connection to the upstream's host and port, nothing more: it sends no
//! request, spends nothing, and says nothing about keys. It runs on threads of its own under
//! one short deadline, since a name lookup can block for longer than the user should wait; the
//! agent starts whatever it finds.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long the check may delay the agent's start: a provider that takes longer to accept a
/// connection is not usable anyway.
pub const REACH_DEADLINE: Duration = Duration::from_secs(3);

/// One upstream the agent's calls go to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// The provider's wire as a user knows it ("Anthropic", "OpenAI").
    pub wire: &'static str,
    /// Its base URL, as configured.
    pub url: String,
}

/// The one-line warning for each upstream that cannot be reached within `deadline`, in the
/// order given; empty when all can.
pub fn unreachable(upstreams: &[Upstream], deadline: Duration) -> Vec<String> {
    let (sender, results) = mpsc::channel();
    for (index, upstream) in upstreams.iter().enumerate() {
        let sender = sender.clone();
        let url = upstream.url.clone();
        // Detached: a lookup still blocked at the deadline ends with the process.
        std::thread::spawn(move || {
            let _ = sender.send((index, reach(&url, deadline)));
        });
    }
    drop(sender);
    let mut problems: Vec<Option<String>> = upstreams
        .iter()
        .map(|_| Some(format!("no answer within {}s", deadline.as_secs())))
        .collect();
    let stop_at = Instant::now() + deadline;
    while let Some(left) = stop_at.checked_duration_since(Instant::now()) {
        let Ok((index, result)) = results.recv_timeout(left) else {
            break;
        };
        if let Some(slot) = problems.get_mut(index) {
            *slot = result.err();
        }
    }
    upstreams
        .iter()
        .zip(problems)
        .filter_map(|(upstream, problem)| {
            problem.map(|problem| {
                format!(
                    "cannot reach the {} provider at {} ({problem}); the agent starts anyway, and its calls fail until the provider can be reached",
                    upstream.wire, upstream.url
                )
            })
        })
        .collect()
}

/// Connects to the host and port of `url`; the error says what failed.
fn reach(url: &str, deadline: Duration) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|error| format!("not a URL: {error}"))?;
    let host = parsed.host_str().ok_or("the URL names no host")?;
    let port = parsed
        .port_or_known_default()
        .ok_or("the URL names no port")?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addresses: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|error| format!("cannot resolve {host}: {error}"))?
        .collect();
    let mut last_error = format!("{host} has no address");
    for address in addresses {
        match TcpStream::connect_timeout(&address, deadline) {
            Ok(_) => return Ok(()),
            Err(error) => last_error = format!("{address}: {error}"),
        }
    }
    Err(last_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upstream(url: String) -> Upstream {
        Upstream {
            wire: "Anthropic",
            url,
        }
    }

    #[test]
    fn a_listening_upstream_passes_and_a_closed_one_is_named() {
        let open = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let open_url = format!("http://{}", open.local_addr().unwrap());
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let closed_url = format!("http://{}/v1", closed.local_addr().unwrap());
        drop(closed);
        let warnings = unreachable(
            &[upstream(open_url), upstream(closed_url.clone())],
            REACH_DEADLINE,
        );
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with(&format!(
                "cannot reach the Anthropic provider at {closed_url} ("
            )),
            "{warnings:?}"
        );
        assert!(
            unreachable(&[upstream("not a url".to_owned())], REACH_DEADLINE)[0]
                .contains("not a URL")
        );
    }
}
