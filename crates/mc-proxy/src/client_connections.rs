//! Serving client connections, each within limits: a client may stay silent only so long,
//! and one address may hold only so many connections.
//!
//! Before, a connection that sent part of its headers, nothing at all, or a body shorter than
//! its `Content-Length` was held forever; at a low open-file limit, 70 of them took the proxy
//! down. Now hyper's header timeout (which also runs while a kept-alive connection waits for
//! its next request) closes a silent connection after [`ClientLimits::idle_timeout`], a
//! managed call's body must arrive within the same time ([`crate::request_body`]), and an
//! address past [`ClientLimits::max_per_address`] open connections has new ones closed at
//! once. The timeout is long enough that the clients' own pools (reqwest keeps an idle
//! connection 90 s, Node's agents a few seconds) close first, so a reused connection is never
//! closed under a request.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// How long clients may stay silent, and how many connections one address may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientLimits {
    /// Longest wait for a request's headers (on a new or a kept-alive connection) and for a
    /// managed call's whole body.
    pub idle_timeout: Duration,
    /// Most connections open at once from one IP address.
    pub max_per_address: usize,
}

impl Default for ClientLimits {
    fn default() -> Self {
        Self {
            idle_timeout: Duration::from_secs(120),
            max_per_address: 512,
        }
    }
}

/// Open connections per address.
#[derive(Default)]
struct OpenConnections(Mutex<HashMap<IpAddr, usize>>);

/// One open connection counted against its address, until dropped.
struct Slot {
    open: Arc<OpenConnections>,
    address: IpAddr,
}

impl Slot {
    fn take(open: &Arc<OpenConnections>, address: IpAddr, max: usize) -> Option<Self> {
        let mut counts = open.0.lock().unwrap_or_else(PoisonError::into_inner);
        let count = counts.entry(address).or_insert(0);
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(Self {
            open: Arc::clone(open),
            address,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self.open.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = counts.get_mut(&self.address) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&self.address);
            }
        }
    }
}

/// Serves `router` on `listener` until `stop` fires, then lets open connections finish
/// their requests (idle ones are closed) and returns.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ClientLimits,
    stop: oneshot::Receiver<()>,
) -> std::io::Result<()> {
    let graceful = GracefulShutdown::new();
    let open = Arc::new(OpenConnections::default());
    let mut stop = std::pin::pin!(stop);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = &mut stop => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors, or a connection reset before it was accepted:
                // waiting lets connections close; stopping would take the proxy down.
                tracing::warn!(%error, "could not accept a client connection");
                tokio::time::sleep(Duration::from_millis(250)).await;
                continue;
            }
        };
        let Some(slot) = Slot::take(&open, peer.ip(), limits.max_per_address) else {
            tracing::warn!(
                address = %peer.ip(),
                limit = limits.max_per_address,
                "closed a connection: its address already holds the most open connections allowed"
            );
            continue;
        };
        // Without TCP_NODELAY, Nagle holds each streamed chunk after the first until the
        // client ACKs the previous one, and a delayed ACK takes ~40 ms: every streamed
        // response stalled that long mid-stream.
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY on a client connection");
        }
        // Each request learns its peer, so routes that answer only this machine (the
        // dashboard) can tell where it came from whatever address the proxy listens on.
        let service = TowerToHyperService::new(router.clone());
        let with_peer = service_fn(move |mut request: hyper::Request<Incoming>| {
            request.extensions_mut().insert(ConnectInfo(peer));
            hyper::service::Service::call(&service, request)
        });
        let connection = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.idle_timeout)
            .serve_connection(TokioIo::new(stream), with_peer);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            let _slot = slot;
            if let Err(error) = connection.await {
                tracing::debug!(%error, "a client connection ended with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_count_per_address_and_free_on_drop() {
        let open = Arc::new(OpenConnections::default());
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "::1".parse().unwrap();
        let first = Slot::take(&open, a, 2).unwrap();
        let second = Slot::take(&open, a, 2).unwrap();
        assert!(Slot::take(&open, a, 2).is_none());
        let other = Slot::take(&open, b, 2);
        assert!(other.is_some(), "another address has its own count");
        drop(first);
        assert!(Slot::take(&open, a, 2).is_some());
        drop((second, other));
        assert!(open.0.lock().unwrap().is_empty());
    }
}
