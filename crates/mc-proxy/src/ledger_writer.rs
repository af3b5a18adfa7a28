//! Ledger rows written in batches on a thread of their own.
//!
//! Each call's row and reported usage took a write transaction of its own the moment its
//! response ended, often just as the client's next request wanted the store's one writer
//! for its pass. Rows now wait briefly in a queue and go in one transaction per batch. The
//! reported usage the next pass plans with does not wait: the proxy keeps each session's
//! latest in memory ([`crate::app::App::recent_usage`]) and the pass reads it from there, so
//! planning is the same as when the row was written at once; the stored copy is what a
//! restarted proxy plans with.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use mc_engine::{Engine, EngineError};
use mc_store::CallRow;

use crate::reported_usage::reported_usage;

/// How long the first queued row waits for others to join its batch.
const GATHER: Duration = Duration::from_millis(10);

/// Most rows in one transaction.
const BATCH_ROWS: usize = 64;

/// The queue and its writing thread. Dropping it writes what is queued and waits for that.
#[derive(Debug)]
pub struct LedgerWriter {
    queue: Option<Sender<CallRow>>,
    thread: Option<JoinHandle<()>>,
}

impl LedgerWriter {
    /// A writer into `engine`'s store.
    pub fn new(engine: Arc<Engine>) -> Self {
        let (queue, rows) = channel();
        let thread = thread::Builder::new()
            .name("mc-proxy-ledger".to_owned())
            .spawn(move || write_batches(&engine, &rows));
        match thread {
            Ok(thread) => Self {
                queue: Some(queue),
                thread: Some(thread),
            },
            Err(error) => {
                tracing::warn!(%error, "could not start the ledger thread; calls are not recorded");
                Self {
                    queue: None,
                    thread: None,
                }
            }
        }
    }

    /// Queues a call's row.
    pub fn record(&self, row: CallRow) {
        if let Some(queue) = &self.queue
            && queue.send(row).is_err()
        {
            tracing::warn!("the ledger thread has stopped; a call's row was not recorded");
        }
    }
}

impl Drop for LedgerWriter {
    fn drop(&mut self) {
        self.queue.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Writes rows as they come, each batch gathered for up to [`GATHER`] after its first row,
/// until the queue closes (then writes what is left).
fn write_batches(engine: &Engine, rows: &Receiver<CallRow>) {
    while let Ok(first) = rows.recv() {
        let mut batch = vec![first];
        let until = Instant::now() + GATHER;
        while batch.len() < BATCH_ROWS {
            match rows.recv_timeout(until.saturating_duration_since(Instant::now())) {
                Ok(row) => batch.push(row),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
            }
        }
        write(engine, &batch);
    }
}

/// Writes a batch in one transaction. A row the store refuses (its session was pruned
/// while its call ran) must not take the others with it: then each row is written alone,
/// and only the refused ones are lost. A busy store is not asked again row by row (each
/// would wait out the busy timeout); that batch is lost, and said so.
fn write(engine: &Engine, batch: &[CallRow]) {
    let Err(error) = write_rows(engine, batch) else {
        return;
    };
    let busy = matches!(&error, EngineError::Store(store) if store.is_retryable());
    if busy || batch.len() == 1 {
        tracing::warn!(%error, rows = batch.len(), "could not write calls' ledger rows and usage");
        return;
    }
    let lost = batch
        .iter()
        .filter(|row| write_rows(engine, std::slice::from_ref(*row)).is_err())
        .count();
    if lost > 0 {
        tracing::warn!(%error, lost, rows = batch.len(), "could not write some calls' ledger rows and usage");
    }
}

/// One transaction: every row, and each successful call's prompt size as its session's
/// reported usage.
fn write_rows(engine: &Engine, rows: &[CallRow]) -> Result<(), EngineError> {
    engine.store().write_with(|tx| {
        for row in rows {
            tx.record_call(row)?;
            if let Some((session, usage)) = reported_usage(row) {
                engine.record_usage_in(tx, session, usage.tokens, usage.pass)?;
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use mc_core::config::Config;
    use mc_core::{Host, SessionId};
    use mc_store::{NewSession, Store};

    use super::*;

    fn row(session: &str) -> CallRow {
        CallRow {
            session: Some(SessionId::new(session).unwrap()),
            pass_seq: None,
            started_ms: 1_000,
            route: "anthropic".into(),
            model: "claude-sonnet-4-5".into(),
            pass_kind: None,
            bust_cause: None,
            status: 500,
            uncached_tokens: None,
            cache_write_tokens: None,
            cache_read_tokens: None,
            output_tokens: None,
            first_byte_ms: None,
            total_ms: 10,
            stop_reason: None,
            usable_window: None,
            overflow_retry: false,
            error: Some("overloaded".into()),
            client_prompt_tokens: None,
            client_fixed_tokens: None,
            window_tokens: None,
        }
    }

    /// A row whose session is gone loses only itself: the batch's other rows are written.
    #[test]
    fn a_row_of_a_pruned_session_does_not_take_its_batch_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        let kept = SessionId::new("kept").unwrap();
        store
            .write(|tx| {
                tx.upsert_session(
                    &NewSession {
                        id: kept.clone(),
                        host: Host::Other,
                        project: None,
                    },
                    1_000,
                )
            })
            .unwrap();
        let engine = Engine::new(store, Config::default());
        write(
            &engine,
            &[row("kept"), row("pruned-meanwhile"), row("kept")],
        );
        let stored = engine.store().read(|tx| tx.calls(&kept, 10)).unwrap();
        assert_eq!(stored.len(), 2);
    }
}
