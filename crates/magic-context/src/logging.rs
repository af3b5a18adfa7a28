//! Logs: `tracing` to stderr, filtered by `--log-level`, else `RUST_LOG`, else `warn`; for
//! `run`, to its log file instead ([`crate::run_log`]), at `info` by default.
//!
//! stdout is reserved for command output and, under `magic-context mcp`, for the protocol
//! itself, so logs never go there. Credentials never reach a log line: those the proxy
//! holds (the historian's keys and headers) travel in [`mc_core::Secret`], whose every
//! formatting prints `<redacted>` (DESIGN §7), and the test below pins that through this
//! subscriber's real formatting; those it forwards are sensitive header values it never
//! logs, and provider error text is redacted ([`mc_core::redact_credentials`]) before it is
//! logged. `mc-proxy`'s `secrets` tests check a real call's log at `trace`.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::MakeWriter;

use crate::cli::LogLevel;

/// Installs the global subscriber. A second call (tests) leaves the first one in place.
pub fn init(level: Option<LogLevel>) {
    let ansi = std::io::stderr().is_terminal();
    // Err means a subscriber is already installed, which is fine.
    let _ =
        tracing::subscriber::set_global_default(subscriber(filter(level), std::io::stderr, ansi));
}

/// Installs the global subscriber writing to `file` (`run`'s proxy log), at `info` unless
/// `level` or `RUST_LOG` says otherwise: a file disturbs no one, and one line per call is
/// what a user reading it after a problem wants.
pub fn init_file(level: Option<LogLevel>, file: std::fs::File) {
    let filter = filter_defaulting(level, LevelFilter::INFO);
    let writer = std::sync::Mutex::new(file);
    // Err means a subscriber is already installed, which is fine.
    let _ = tracing::subscriber::set_global_default(subscriber(filter, writer, false));
}

/// Installs a subscriber that writes nothing: `run` when its log file cannot be opened, so
/// no log line lands on the agent's terminal.
pub fn init_off() {
    let _ = tracing::subscriber::set_global_default(subscriber(
        EnvFilter::new("off"),
        std::io::sink,
        false,
    ));
}

/// The filter: an explicit level wins over `RUST_LOG`; an unparsable `RUST_LOG` directive
/// is skipped rather than silencing everything.
fn filter(level: Option<LogLevel>) -> EnvFilter {
    filter_defaulting(level, LevelFilter::WARN)
}

/// [`filter`] with `default` when neither a level nor `RUST_LOG` is given.
fn filter_defaulting(level: Option<LogLevel>, default: LevelFilter) -> EnvFilter {
    match level {
        Some(level) => EnvFilter::new(level.directive()),
        None => EnvFilter::builder()
            .with_default_directive(default.into())
            .from_env_lossy(),
    }
}

fn subscriber<W>(filter: EnvFilter, writer: W, ansi: bool) -> impl tracing::Subscriber + Send + Sync
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(ansi)
        .finish()
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::{Arc, Mutex};

    use mc_core::Secret;

    use super::*;

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Captured {
        type Writer = Self;

        fn make_writer(&'a self) -> Self {
            self.clone()
        }
    }

    /// A secret-bearing header logged every way a developer might write it, at the most
    /// verbose level, still prints only `<redacted>`.
    #[test]
    fn secrets_are_never_formatted() {
        #[derive(Debug)]
        #[expect(dead_code, reason = "only formatted")]
        struct Header {
            name: &'static str,
            value: Secret,
        }
        let captured = Captured::default();
        let subscriber = subscriber(filter(Some(LogLevel::Trace)), captured.clone(), false);
        let key = Secret::new("sk-ant-api03-DO-NOT-LOG");
        tracing::subscriber::with_default(subscriber, || {
            tracing::trace!(api_key = ?key, authorization = %key, "forwarding");
            let header = Header {
                name: "x-api-key",
                value: key.clone(),
            };
            tracing::info!(?header, "upstream header");
            let span = tracing::info_span!("request", credential = %key);
            span.in_scope(|| tracing::warn!("inside the span"));
        });
        let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        assert!(!logs.contains("DO-NOT-LOG"), "{logs}");
        assert!(logs.matches(Secret::REDACTED).count() >= 4, "{logs}");
    }

    #[test]
    fn level_flag_filters() {
        let captured = Captured::default();
        let subscriber = subscriber(filter(Some(LogLevel::Warn)), captured.clone(), false);
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!("hidden");
            tracing::warn!("shown");
        });
        let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        assert!(logs.contains("shown") && !logs.contains("hidden"), "{logs}");
    }
}
