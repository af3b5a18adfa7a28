//! The calls a proxy has in flight, as the scheduler sees them: per project, the upstream
//! credential each call goes out on.
//!
//! A run that borrowed a session's credentials draws on the same rate limit as the
//! session's own calls; made while one of them is in flight, it would compete with the user
//! waiting for the answer (DESIGN §5 "Dreamer"). The scheduler defers such a run until the
//! project's calls on that credential end ([`InFlight`]), and a run already going waits
//! before each of its model calls the same way ([`InFlight::wait_free`]). Credentials are
//! compared by a digest ([`CredentialId`]), so the view holds no key and a log of it prints
//! none.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use mc_core::ProjectId;
use mc_llm::ModelEndpoint;
use tokio::sync::Notify;

/// An upstream credential, named by the digest of its upstream and its secrets: two
/// endpoints with the same id share a provider's rate limit. The model and the wire are
/// left out, since a provider limits a key across its models.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CredentialId([u8; 32]);

impl CredentialId {
    /// The id of the credential `endpoint` calls with (its base URL, key and extra headers).
    pub fn of(endpoint: &ModelEndpoint) -> Self {
        let mut hasher = blake3::Hasher::new_derive_key("magic-context dreamer credential v1");
        let mut field = |bytes: &[u8]| {
            hasher.update(&(bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        };
        field(endpoint.base_url.trim_end_matches('/').as_bytes());
        field(
            endpoint
                .api_key
                .as_ref()
                .map_or(&b""[..], |key| key.expose().as_bytes()),
        );
        for (name, value) in &endpoint.extra_headers {
            field(name.to_ascii_lowercase().as_bytes());
            field(value.expose().as_bytes());
        }
        Self(*hasher.finalize().as_bytes())
    }
}

impl fmt::Debug for CredentialId {
    /// A short prefix: enough to tell ids apart in a test failure, and a digest anyway.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, ..] = self.0;
        write!(f, "CredentialId({a:02x}{b:02x}{c:02x}{d:02x}…)")
    }
}

/// What the scheduler asks before a run that calls a model, and a run before each call.
pub trait InFlight: Send + Sync {
    /// Whether a call of `project` on `credential` is in flight now.
    fn is_calling(&self, project: &ProjectId, credential: &CredentialId) -> bool;

    /// Blocks this thread until no call of `project` on `credential` is in flight, or
    /// `timeout` has passed; whether the credential is free. Called from the blocking
    /// thread a run works on, never from a runtime thread.
    fn wait_free(&self, project: &ProjectId, credential: &CredentialId, timeout: Duration) -> bool;
}

/// The proxy's calls in flight, counted per project and credential; a call is counted from
/// [`InFlightCalls::begin`] until its [`CallGuard`] drops (the answer sent, or the call
/// refused or cut).
#[derive(Default)]
pub struct InFlightCalls {
    calls: Mutex<HashMap<(ProjectId, CredentialId), usize>>,
    /// Wakes the scheduler's async loop.
    ended: Notify,
    /// Wakes a run blocked in [`InFlight::wait_free`].
    freed: Condvar,
}

impl InFlightCalls {
    /// Counts a call of `project` on `credential` until the returned guard drops.
    pub fn begin(self: &Arc<Self>, project: &ProjectId, credential: CredentialId) -> CallGuard {
        let key = (project.clone(), credential);
        if let Ok(mut calls) = self.calls.lock() {
            *calls.entry(key.clone()).or_default() += 1;
        }
        CallGuard {
            calls: Arc::clone(self),
            key,
        }
    }

    /// Waits until a call ends (or returns at once when one ended since the last wait):
    /// the scheduler's cue to run what it deferred.
    pub async fn call_ended(&self) {
        self.ended.notified().await;
    }
}

impl InFlight for InFlightCalls {
    fn is_calling(&self, project: &ProjectId, credential: &CredentialId) -> bool {
        self.calls
            .lock()
            .is_ok_and(|calls| calls.contains_key(&(project.clone(), *credential)))
    }

    fn wait_free(&self, project: &ProjectId, credential: &CredentialId, timeout: Duration) -> bool {
        let key = (project.clone(), *credential);
        let until = Instant::now() + timeout;
        // A poisoned count is read as free, as `is_calling` reads it.
        let Ok(mut calls) = self.calls.lock() else {
            return true;
        };
        while calls.contains_key(&key) {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            calls = match self.freed.wait_timeout(calls, left) {
                Ok((calls, _)) => calls,
                Err(_) => return true,
            };
        }
        true
    }
}

/// One call in flight; dropping it ends the call.
pub struct CallGuard {
    calls: Arc<InFlightCalls>,
    key: (ProjectId, CredentialId),
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        if let Ok(mut calls) = self.calls.calls.lock()
            && let Some(count) = calls.get_mut(&self.key)
        {
            *count = count.saturating_sub(1);
            if *count == 0 {
                calls.remove(&self.key);
            }
        }
        self.calls.ended.notify_one();
        self.calls.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use mc_core::Secret;
    use mc_llm::Wire;

    use super::*;

    fn endpoint(url: &str, model: &str, key: &str) -> ModelEndpoint {
        ModelEndpoint::new(Wire::Anthropic, url, model, Some(Secret::new(key)))
    }

    #[test]
    fn the_same_upstream_and_key_on_another_model_is_the_same_credential() {
        let session = CredentialId::of(&endpoint("http://up", "claude-sonnet-4-5", "sk-1"));
        let small = CredentialId::of(&endpoint("http://up/", "claude-haiku-4-5", "sk-1"));
        assert_eq!(session, small);
        let other_key = CredentialId::of(&endpoint("http://up", "claude-haiku-4-5", "sk-2"));
        let other_upstream = CredentialId::of(&endpoint("http://gw", "claude-haiku-4-5", "sk-1"));
        assert_ne!(session, other_key);
        assert_ne!(session, other_upstream);
        let mut oauth = endpoint("http://up", "claude-haiku-4-5", "sk-1");
        oauth
            .extra_headers
            .push(("authorization".into(), Secret::new("Bearer t")));
        assert_ne!(session, CredentialId::of(&oauth));
        assert!(!format!("{session:?}").contains("sk-1"));
    }

    #[tokio::test]
    async fn a_call_counts_until_its_last_guard_drops_and_its_end_is_signalled() {
        let calls = Arc::new(InFlightCalls::default());
        let project = ProjectId::new("git:abc").unwrap();
        let other = ProjectId::new("git:def").unwrap();
        let key = CredentialId::of(&endpoint("http://up", "m", "sk-1"));
        let first = calls.begin(&project, key);
        let second = calls.begin(&project, key);
        assert!(calls.is_calling(&project, &key));
        assert!(!calls.is_calling(&other, &key));
        drop(first);
        assert!(calls.is_calling(&project, &key), "one call still in flight");
        drop(second);
        assert!(!calls.is_calling(&project, &key));
        let signalled = std::time::Duration::from_secs(5);
        tokio::time::timeout(signalled, calls.call_ended())
            .await
            .unwrap();
    }

    #[test]
    fn a_wait_ends_when_the_last_call_ends_or_at_its_timeout() {
        let calls = Arc::new(InFlightCalls::default());
        let project = ProjectId::new("git:abc").unwrap();
        let key = CredentialId::of(&endpoint("http://up", "m", "sk-1"));
        let other = CredentialId::of(&endpoint("http://up", "m", "sk-2"));
        assert!(
            calls.wait_free(&project, &key, Duration::ZERO),
            "nothing in flight"
        );
        let guard = calls.begin(&project, key);
        assert!(calls.wait_free(&project, &other, Duration::ZERO));
        let started = Instant::now();
        assert!(!calls.wait_free(&project, &key, Duration::from_millis(200)));
        assert!(
            started.elapsed() >= Duration::from_millis(200),
            "waited its timeout"
        );
        let ending = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            drop(guard);
        });
        let started = Instant::now();
        assert!(calls.wait_free(&project, &key, Duration::from_secs(30)));
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(250) && waited < Duration::from_secs(10),
            "freed by the call's end, not the timeout: {waited:?}"
        );
        ending.join().unwrap();
    }
}
