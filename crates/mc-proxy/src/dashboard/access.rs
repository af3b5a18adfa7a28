//! Who may see the dashboard: the user, on this machine, through the proxy's own address.
//!
//! Conversations are private and the proxy's port is open to every page the browser loads.
//! Every dashboard request passes four checks before a handler runs, stricter than the
//! proxy's [`crate::browser_guard`] (which still runs first, for every route):
//!
//! - the connection comes from a loopback address, whatever address the proxy listens on;
//! - `Host` is `localhost` or a loopback IP literal: a DNS-rebinding page names its own
//!   domain, and `proxy.allowed_hosts` (for a gateway in front of the model routes) does not
//!   open the dashboard;
//! - the access token ([`super::access_token`]) comes as the `mc_dashboard` cookie (set by
//!   the login URL `magic-context dashboard` prints) or the [`TOKEN_HEADER`] header;
//! - a request that changes something (any method but `GET`/`HEAD`) carries the token in the
//!   header, which a cross-site form cannot add, not only in the cookie a browser attaches.
//!
//! No CORS header is ever sent, so no other origin can read an answer, and every answer
//! says not to cache, frame or leak it ([`protect_response`]).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::access_token::AccessToken;
use super::error::DashboardError;
use super::state::Dashboard;

/// The header a script (or `curl`) sends the token in.
pub const TOKEN_HEADER: &str = "x-magic-context-token";

/// The cookie the login URL sets.
pub const TOKEN_COOKIE: &str = "mc_dashboard";

/// The path of the login URL, which takes `?token=` and sets the cookie.
pub const LOGIN_PATH: &str = "/_magic-context/ui/login";

/// Runs the checks before every dashboard route and marks every answer private.
pub async fn guard(
    State(dashboard): State<Arc<Dashboard>>,
    request: Request,
    next: Next,
) -> Response {
    let is_api = request.uri().path().starts_with(super::state::API_PREFIX);
    let checked = match place_refusal(&request) {
        Some(error) => Err(error),
        None => {
            let (path, method) = (request.uri().path(), request.method());
            token_check(&dashboard, path, method, request.headers()).await
        }
    };
    let mut response = match checked {
        Ok(()) => next.run(request).await,
        Err(error) if is_api => error.into_response(),
        Err(error) => error.into_page(),
    };
    protect_response(response.headers_mut());
    response
}

/// Why a request at this place (peer, `Host`, `Origin`) may not see the dashboard.
fn place_refusal(request: &Request) -> Option<DashboardError> {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| peer.ip());
    if !peer.is_some_and(|ip| ip.is_loopback()) {
        return Some(DashboardError::Forbidden(
            "the dashboard answers only connections from this machine".to_owned(),
        ));
    }
    let host = request
        .headers()
        .get(header::HOST)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
    if !host.as_deref().is_some_and(names_loopback) {
        return Some(DashboardError::Forbidden(format!(
            "the dashboard answers only at the proxy's loopback address (e.g. \
             http://127.0.0.1:PORT), not at `{}`",
            host.unwrap_or_default()
        )));
    }
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let origin = String::from_utf8_lossy(origin.as_bytes());
        let authority = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"));
        if !authority.is_some_and(names_loopback) {
            return Some(DashboardError::Forbidden(format!(
                "the dashboard answers no other web page (Origin `{origin}`)"
            )));
        }
    }
    None
}

/// Whether `authority` (`host[:port]`) names this machine's loopback interface by a name no
/// DNS answer can re-point: `localhost` or a loopback IP literal.
fn names_loopback(authority: &str) -> bool {
    let authority = authority.trim().trim_end_matches('/');
    let host = match authority.strip_prefix('[') {
        Some(rest) => rest.split_once(']').map_or(rest, |(inside, _)| inside),
        None => match authority.rsplit_once(':') {
            Some((host, port)) if port.bytes().all(|byte| byte.is_ascii_digit()) => host,
            _ => authority,
        },
    };
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether the request carries the token where it must.
async fn token_check(
    dashboard: &Dashboard,
    path: &str,
    method: &Method,
    headers: &HeaderMap,
) -> Result<(), DashboardError> {
    if path == LOGIN_PATH {
        // The login route checks the token it is given itself.
        return Ok(());
    }
    let token = dashboard.token().await?;
    let in_header = header_token(headers).is_some_and(|offered| token.matches(offered));
    let in_cookie = cookie_token(headers).is_some_and(|offered| token.matches(offered));
    let reads = matches!(*method, Method::GET | Method::HEAD);
    match (in_header, in_cookie, reads) {
        (true, _, _) | (false, true, true) => Ok(()),
        (false, true, false) => Err(DashboardError::Forbidden(format!(
            "a change needs the access token in the `{TOKEN_HEADER}` header, not only the \
             cookie"
        ))),
        (false, false, _) => Err(DashboardError::Unauthorized),
    }
}

fn header_token(headers: &HeaderMap) -> Option<&str> {
    headers.get(TOKEN_HEADER)?.to_str().ok().map(str::trim)
}

fn cookie_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == TOKEN_COOKIE)
        .map(|(_, value)| value.trim())
}

/// The login URL's query.
#[derive(Debug, Deserialize)]
pub struct Login {
    token: Option<String>,
}

/// `GET /_magic-context/ui/login?token=…`: a right token sets the cookie and sends the
/// browser to the sessions page, so the token leaves the address bar and the history entry
/// the user sees; a wrong one is refused.
pub async fn login(
    State(dashboard): State<Arc<Dashboard>>,
    Query(login): Query<Login>,
) -> Response {
    let token = match dashboard.token().await {
        Ok(token) => token,
        Err(error) => return error.into_page(),
    };
    if !login
        .token
        .as_deref()
        .is_some_and(|offered| token.matches(offered.trim()))
    {
        return DashboardError::Unauthorized.into_page();
    }
    let mut response = Redirect::to(super::state::UI_HOME).into_response();
    if let Ok(cookie) = HeaderValue::from_str(&session_cookie(token)) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

/// The cookie carrying `token`: sent only to the dashboard's paths, never to a script, never
/// with a request another site starts.
fn session_cookie(token: &AccessToken) -> String {
    format!(
        "{TOKEN_COOKIE}={}; Path=/_magic-context/; HttpOnly; SameSite=Strict",
        token.as_str()
    )
}

/// Marks an answer private: not cached, not framed, not sniffed, no referrer; scripts and
/// styles only from the dashboard itself.
pub fn protect_response(headers: &mut HeaderMap) {
    let fixed = [
        (header::CACHE_CONTROL, "no-store"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    ];
    for (name, value) in fixed {
        headers.insert(name, HeaderValue::from_static(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names() {
        for good in [
            "127.0.0.1:4141",
            "127.0.0.1",
            "localhost:4141",
            "LOCALHOST",
            "[::1]:4141",
            "127.3.2.1:80",
        ] {
            assert!(names_loopback(good), "{good}");
        }
        for bad in [
            "attacker.example:4141",
            "localhost.attacker.example",
            "127.0.0.1.nip.io:4141",
            "10.0.0.2:4141",
            "192.168.1.7:4141",
            "[::2]:4141",
            "",
        ] {
            assert!(!names_loopback(bad), "{bad}");
        }
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; mc_dashboard=abc ; b=2"),
        );
        assert_eq!(cookie_token(&headers), Some("abc"));
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("xmc_dashboard=abc"),
        );
        assert_eq!(cookie_token(&headers), None);
    }
}
