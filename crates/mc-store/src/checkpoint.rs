//! WAL checkpoints off the write path.
//!
//! SQLite's automatic checkpoint runs inside the commit that takes the log past its
//! threshold, so that one commit copies the whole log into the database file and syncs it:
//! in the proxy's latency benchmark the pass after a new session's first (large) write
//! committed in 10 ms instead of 0.1 ms. The writer instead reports the log's size after
//! each commit (SQLite's WAL hook, which also replaces the automatic checkpoint), and past
//! the same threshold a thread with its own connection runs a passive checkpoint, which never
//! waits for the writer or readers. Durability is unchanged: a commit is in the log either
//! way; the checkpoint only moves it into the database file.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::{self, JoinHandle};

use rusqlite::Connection;
use rusqlite::hooks::Wal;
use rusqlite::wal::CheckpointMode;

use crate::connection::{self, StoreOptions};
use crate::error::{Result, StoreError};

/// Log pages after which a checkpoint is due: SQLite's own default for the automatic one.
const CHECKPOINT_PAGES: i32 = 1000;

/// The checkpointing thread. Dropping it stops the thread and waits for it, so its
/// connection is closed before the store's own close (the last connection to close
/// checkpoints what is left and removes the log).
#[derive(Debug)]
pub(crate) struct Checkpointer {
    due: SyncSender<()>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Hooks `writer` so that a log past [`CHECKPOINT_PAGES`] wakes a checkpointing thread
    /// on its own connection. `None` where no thread can be started: the writer then keeps
    /// SQLite's automatic checkpoint.
    pub fn start(
        writer: &mut Connection,
        path: &Path,
        options: &StoreOptions,
    ) -> Result<Option<Self>> {
        let conn = connection::open_checkpointer(path, options)?;
        let (due, wake) = sync_channel::<()>(1);
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let started = thread::Builder::new()
            .name("mc-store-checkpoint".to_owned())
            .spawn(move || checkpoint_when_due(&conn, &wake, &stopped));
        let Ok(thread) = started else {
            return Ok(None);
        };
        let hook_due = due.clone();
        writer
            .wal_hook(Some(move |_: &mut Wal, pages: i32| {
                if pages >= CHECKPOINT_PAGES {
                    // A full channel means a checkpoint is already due: it takes these too.
                    let _ = hook_due.try_send(());
                }
                Ok(())
            }))
            .map_err(StoreError::sqlite("hooking the write-ahead log"))?;
        Ok(Some(Self {
            due,
            stop,
            thread: Some(thread),
        }))
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Full means the thread is already due to wake.
        let _ = self.due.try_send(());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Runs a passive checkpoint each time one is due. One that fails (the disk, a lock it would
/// have to wait for) leaves the pages in the log for the next, and SQLite checkpoints what is
/// left when the store closes.
fn checkpoint_when_due(conn: &Connection, wake: &Receiver<()>, stop: &AtomicBool) {
    while wake.recv().is_ok() && !stop.load(Ordering::Acquire) {
        let _ = conn.wal_checkpoint_v2(None::<&str>, CheckpointMode::PASSIVE);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_due_checkpoint_moves_the_log_into_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::Store::open(dir.path().join("context.db")).unwrap();
        let wal = dir.path().join("context.db-wal");
        let session = mc_core::SessionId::new("s").unwrap();
        let big = "x".repeat(8 * 1024);
        for ordinal in 0..600u64 {
            store
                .write(|tx| {
                    tx.upsert_session(
                        &crate::NewSession {
                            id: session.clone(),
                            host: mc_core::Host::Other,
                            project: None,
                        },
                        1,
                    )?;
                    let message = mc_core::Message::new(
                        mc_core::Role::User,
                        vec![mc_core::Part::text(big.clone())],
                    );
                    tx.append_messages(&session, ordinal, &[message], 1)
                })
                .unwrap();
        }
        // 600 commits of ~8 KB wrote far past 1000 pages; the checkpointer (not the commits)
        // copied them into the database file, which now holds the messages.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let db = dir.path().join("context.db");
        while std::fs::metadata(&db).unwrap().len() < 4 * 1024 * 1024 {
            assert!(std::time::Instant::now() < deadline, "no checkpoint ran");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(wal.exists());
    }
}
