//! The proxy's store: opened when the proxy starts or, failing that, on a later call.
//!
//! A store can be out of reach for a while: another process holds its write lock past the
//! busy timeout, the disk is full, the file is read-only. Managed calls are refused while
//! it is (DESIGN §7), and the refusal tells the client to retry, so the proxy must notice
//! when the cause is gone without being restarted. A managed call that finds the store
//! closed starts one attempt to open it, off the async threads, and waits for it at most
//! [`OPEN_WAIT`]: a store that stays locked costs a call that bound, not the store's busy
//! timeout. Calls arriving meanwhile wait on the same attempt rather than start their own,
//! and an attempt that outlives the call goes on in the background, so the lock's release
//! is seen as soon as SQLite's busy handler sees it.
//!
//! What runs over the store (the historian, the embedding task, the ledger's writer) starts
//! with it, so it starts with the first successful attempt.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use mc_engine::Engine;
use mc_llm::RetryPolicy;
use tokio::sync::watch;

use crate::embedding_runtime::EmbeddingRuntime;
use crate::historian_runtime::HistorianRuntime;
use crate::ledger_writer::LedgerWriter;

/// The longest a call waits for an attempt to open the store before it is refused.
///
/// Opening an unlocked store takes milliseconds; the bound only matters while something
/// else holds the lock, when each call should learn that quickly rather than after the
/// five-second busy timeout.
pub const OPEN_WAIT: Duration = Duration::from_millis(500);

/// Opens the engine over the store again after a failed open, or says why it cannot. It
/// blocks (SQLite waits for locks), so the slot runs it on the blocking pool.
pub type Reopen = Box<dyn Fn() -> Result<Engine, String> + Send + Sync>;

/// The engine over an open store and what runs over it.
pub struct OpenStore {
    /// The engine.
    pub engine: Arc<Engine>,
    /// The background historian, when it is on.
    pub historian: Option<HistorianRuntime>,
    /// The embedding model for semantic search, when there is one.
    pub embeddings: Option<EmbeddingRuntime>,
    /// Ledger rows, written in batches off the request path.
    pub ledger: LedgerWriter,
}

impl OpenStore {
    fn start(engine: Engine, historian_retry: RetryPolicy) -> Self {
        // What reaches the proxy's port is stored before a provider has seen it: its
        // sessions wait for a provider's acceptance before search and the historian see
        // their new messages ([`crate::acceptance`]).
        let engine = Arc::new(engine.gated_until_accepted());
        Self {
            historian: HistorianRuntime::new(&engine, historian_retry),
            embeddings: EmbeddingRuntime::new(&engine),
            ledger: LedgerWriter::new(Arc::clone(&engine)),
            engine,
        }
    }
}

/// The store once open, or why it is not and how to try again.
pub struct StoreSlot {
    open: OnceLock<OpenStore>,
    reopen: Option<Reopen>,
    historian_retry: RetryPolicy,
    closed: Mutex<Closed>,
}

/// Why the store is not open, and the attempt running to open it, if any.
struct Closed {
    reason: String,
    /// Turns `true` when the running attempt has finished.
    attempt: Option<watch::Receiver<bool>>,
}

impl StoreSlot {
    /// A slot holding `engine`, or (when it could not be opened) the reason, retried with
    /// `reopen` when there is one and kept for good when there is none.
    pub fn new(
        engine: Result<Engine, String>,
        reopen: Option<Reopen>,
        historian_retry: RetryPolicy,
    ) -> Self {
        let open = OnceLock::new();
        let reason = match engine {
            Ok(engine) => {
                let _ = open.set(OpenStore::start(engine, historian_retry));
                String::new()
            }
            Err(reason) => reason,
        };
        Self {
            open,
            reopen,
            historian_retry,
            closed: Mutex::new(Closed {
                reason,
                attempt: None,
            }),
        }
    }

    /// The open store, or why it is not open.
    pub fn get(&self) -> Result<&OpenStore, String> {
        self.open.get().ok_or_else(|| self.lock().reason.clone())
    }

    /// The engine over the open store, or why the store is not open.
    pub fn engine(&self) -> Result<&Arc<Engine>, String> {
        self.get().map(|open| &open.engine)
    }

    /// Whether the store is open.
    pub fn is_open(&self) -> bool {
        self.open.get().is_some()
    }

    /// When the store is closed and may be opened again, tries to (or joins the attempt
    /// already running) and waits for it at most [`OPEN_WAIT`]. Never fails: the caller
    /// reads the outcome from [`Self::get`].
    pub async fn open_if_closed(self: &Arc<Self>) {
        if self.is_open() || self.reopen.is_none() {
            return;
        }
        let Some(mut finished) = self.attempt() else {
            return;
        };
        let _ = tokio::time::timeout(OPEN_WAIT, finished.wait_for(|done| *done)).await;
    }

    /// The running attempt, started here when none runs; `None` once the store is open.
    fn attempt(self: &Arc<Self>) -> Option<watch::Receiver<bool>> {
        let mut closed = self.lock();
        // An attempt sets `open` before it clears `attempt` under this lock: checked here,
        // a store that has just opened is never opened twice.
        if self.is_open() {
            return None;
        }
        // A closed channel means the attempt died without finishing (it panicked).
        if let Some(running) = closed
            .attempt
            .as_ref()
            .filter(|running| running.has_changed().is_ok())
        {
            return Some(running.clone());
        }
        let (done, finished) = watch::channel(false);
        closed.attempt = Some(finished.clone());
        let slot = Arc::clone(self);
        tokio::task::spawn_blocking(move || slot.try_open(&done));
        Some(finished)
    }

    /// One attempt to open the store; says on `done` when it has finished.
    fn try_open(&self, done: &watch::Sender<bool>) {
        let Some(reopen) = &self.reopen else {
            return;
        };
        // Built before the lock is taken: starting the embedding model may take a while,
        // and a refused call reads the reason under that lock.
        let failure = match reopen() {
            Ok(engine) => {
                let _ = self
                    .open
                    .set(OpenStore::start(engine, self.historian_retry));
                tracing::info!("the store is open again; managed calls are served");
                None
            }
            Err(reason) => Some(reason),
        };
        let mut closed = self.lock();
        if let Some(reason) = failure {
            if reason != closed.reason {
                tracing::warn!(%reason, "the store still cannot be opened; managed calls are refused");
            }
            closed.reason = reason;
        }
        closed.attempt = None;
        drop(closed);
        let _ = done.send(true);
    }

    fn lock(&self) -> MutexGuard<'_, Closed> {
        self.closed.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
