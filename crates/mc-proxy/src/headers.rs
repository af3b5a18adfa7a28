//! Which headers cross the proxy, both ways.
//!
//! A proxy must not forward hop-by-hop headers (RFC 9110 §7.6.1): they describe one
//! connection, not the message. Everything else passes through untouched, including
//! `authorization` and `x-api-key`, which the proxy never logs or stores; on the way up
//! they are marked sensitive, so no layer of the HTTP stack prints or indexes them.

use axum::http::header::{self, HeaderMap, HeaderName};

/// Headers that describe a single connection and never cross a proxy.
const HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

/// The prefix of the headers a client addresses to the proxy itself (the session and
/// project it names).
const OWN_PREFIX: &str = "x-magic-context-";

/// Headers that carry a credential: their values are marked sensitive on the way up (HTTP/2
/// never puts them in its compression table, `Debug` prints `Sensitive`).
const CREDENTIALS: [HeaderName; 5] = [
    header::AUTHORIZATION,
    HeaderName::from_static("x-api-key"),
    HeaderName::from_static("api-key"),
    HeaderName::from_static("x-goog-api-key"),
    header::COOKIE,
];

/// The headers to send upstream for a client request: hop-by-hop headers, the ones the
/// `Connection` header names, `host` (the upstream's own) and `content-length` (the client
/// library recomputes it) are left out, and so are the proxy's own `x-magic-context-…`
/// headers (addressed to it, not the provider) and `expect` (our server already answered
/// the client's `100-continue`; the upstream gets the whole body at once). Credentials are
/// marked sensitive.
pub fn upstream_request_headers(client: &HeaderMap) -> HeaderMap {
    let mut out = without_hop_by_hop(client);
    out.remove(header::HOST);
    out.remove(header::CONTENT_LENGTH);
    out.remove(header::EXPECT);
    let ours: Vec<HeaderName> = out
        .keys()
        .filter(|name| name.as_str().starts_with(OWN_PREFIX))
        .cloned()
        .collect();
    for name in ours {
        out.remove(name);
    }
    for name in &CREDENTIALS {
        if let header::Entry::Occupied(mut entry) = out.entry(name) {
            entry.iter_mut().for_each(|value| value.set_sensitive(true));
        }
    }
    out
}

/// The headers of a managed request: as [`upstream_request_headers`], and since the proxy
/// decodes the client's body and reads the response, the body goes up uncompressed and the
/// response is asked for uncompressed (the client is on loopback, where compression buys
/// nothing).
pub fn managed_request_headers(client: &HeaderMap) -> HeaderMap {
    let mut out = upstream_request_headers(client);
    out.remove(header::CONTENT_ENCODING);
    out.insert(
        header::ACCEPT_ENCODING,
        header::HeaderValue::from_static("identity"),
    );
    out.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    out
}

/// The headers to send the client for an upstream response. The body is re-framed by our
/// server, so the upstream's framing headers do not apply.
pub fn client_response_headers(upstream: &HeaderMap) -> HeaderMap {
    let mut out = without_hop_by_hop(upstream);
    out.remove(header::CONTENT_LENGTH);
    out
}

fn without_hop_by_hop(headers: &HeaderMap) -> HeaderMap {
    let named_by_connection: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|name| HeaderName::try_from(name.trim()).ok())
        .collect();
    let mut out = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        if HOP_BY_HOP.contains(name) || named_by_connection.contains(name) {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

/// A header's value as text, when present and valid.
pub fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name)?.to_str().ok().map(str::trim)
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn hop_by_hop_and_connection_named_headers_stay_behind() {
        let mut client = HeaderMap::new();
        client.insert(
            header::CONNECTION,
            HeaderValue::from_static("keep-alive, x-trace"),
        );
        client.insert("keep-alive", HeaderValue::from_static("timeout=5"));
        client.insert("x-trace", HeaderValue::from_static("1"));
        client.insert(header::HOST, HeaderValue::from_static("127.0.0.1:4141"));
        client.insert("x-api-key", HeaderValue::from_static("sk-test"));
        client.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
        let out = upstream_request_headers(&client);
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!(out["x-api-key"], "sk-test");
        assert_eq!(out["anthropic-version"], "2023-06-01");
        assert!(out["x-api-key"].is_sensitive());
        assert!(!out["anthropic-version"].is_sensitive());
        assert!(!format!("{out:?}").contains("sk-test"), "{out:?}");
    }

    #[test]
    fn the_proxy_s_own_headers_and_expect_stay_behind() {
        let mut client = HeaderMap::new();
        client.insert("x-magic-context-session", HeaderValue::from_static("s1"));
        client.insert("x-magic-context-project", HeaderValue::from_static("p"));
        client.insert(header::EXPECT, HeaderValue::from_static("100-continue"));
        client.insert("x-context-kept", HeaderValue::from_static("yes"));
        let out = upstream_request_headers(&client);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out["x-context-kept"], "yes");
    }

    #[test]
    fn managed_requests_ask_for_identity() {
        let mut client = HeaderMap::new();
        client.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static("gzip, br"),
        );
        client.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        let out = managed_request_headers(&client);
        assert_eq!(out[header::ACCEPT_ENCODING], "identity");
        assert!(!out.contains_key(header::CONTENT_ENCODING));
    }
}
