//! The threads passes run on: as few as the passes that ever ran at once, the most recently
//! idle one first.
//!
//! A pass is synchronous work (SQLite, counting, rendering), so it cannot run on a runtime
//! worker as it is. Run in place (`block_in_place`) or on the runtime's blocking pool, it
//! lands on whichever pool thread is woken, and the pool wakes its threads in turn, so over
//! a session every thread of the pool counts tokens; each thread that counts keeps its own
//! tokenizer cache (about 1.2 MB) as long as it lives. Here an idle thread waits on a stack,
//! and a pass goes to the one on top: one session's passes all run on one thread, and the
//! threads number at most the passes that ran at once (bounded by
//! [`crate::app::App::pass_permits`]). A thread puts itself back on the stack before it hands
//! its result over, so a pass started once the previous one's result arrived always finds it.

use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex, PoisonError, Weak};

/// A pass to run; what it returns hands its result over.
type Job = Box<dyn FnOnce() -> Box<dyn FnOnce() + Send> + Send>;

/// Idle threads, each waiting on its own channel; the last pushed is the next used.
type Idle = Mutex<Vec<SyncSender<Job>>>;

/// The pass threads of one proxy; they end when it is dropped.
#[derive(Default)]
pub struct PassThreads {
    idle: Arc<Idle>,
}

/// A pass that did not return (it panicked, or no thread could be started for it).
#[derive(Debug)]
pub struct PassLost(pub String);

impl PassThreads {
    /// Runs `work` on a pass thread and waits for its result.
    pub async fn run<T, F>(&self, work: F) -> Result<T, PassLost>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (done, result) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let value = work();
            Box::new(move || {
                // The caller may have gone (its client disconnected); the result goes too.
                let _ = done.send(value);
            })
        });
        self.dispatch(job)?;
        result
            .await
            .map_err(|_| PassLost("the pass stopped before it returned".to_owned()))
    }

    /// Hands `job` to the most recently idle thread, or to a new one.
    fn dispatch(&self, mut job: Job) -> Result<(), PassLost> {
        loop {
            let waiting = self
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop();
            let Some(thread) = waiting else { break };
            // A thread whose pass panicked never listens again; the job comes back.
            match thread.send(job) {
                Ok(()) => return Ok(()),
                Err(mpsc::SendError(returned)) => job = returned,
            }
        }
        let idle = Arc::downgrade(&self.idle);
        std::thread::Builder::new()
            .name("mc-pass".to_owned())
            .spawn(move || serve_passes(job, &idle))
            .map(drop)
            .map_err(|error| PassLost(format!("cannot start a pass thread ({error})")))
    }

    /// Threads waiting for a pass now.
    #[cfg(test)]
    fn idle_threads(&self) -> usize {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// A pass thread's life: run a job, wait on the stack for the next, until the proxy is gone.
fn serve_passes(first: Job, idle: &Weak<Idle>) {
    let mut job = first;
    loop {
        let deliver = job();
        let (thread, next): (SyncSender<Job>, Receiver<Job>) = mpsc::sync_channel(1);
        let Some(stack) = idle.upgrade() else {
            deliver();
            return;
        };
        stack
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(thread);
        drop(stack);
        deliver();
        // Ends when the proxy dropped the stack, and this thread's sender with it.
        match next.recv() {
            Ok(received) => job = received,
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::thread::ThreadId;

    use super::*;

    #[tokio::test]
    async fn passes_one_after_another_run_on_one_thread() {
        let threads = PassThreads::default();
        let mut seen: Vec<ThreadId> = Vec::new();
        for _ in 0..20 {
            seen.push(threads.run(|| std::thread::current().id()).await.unwrap());
        }
        seen.dedup();
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_ne!(seen[0], std::thread::current().id());
        assert_eq!(threads.idle_threads(), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn threads_number_the_passes_that_ran_at_once() {
        let threads = Arc::new(PassThreads::default());
        let gate = Arc::new(std::sync::Barrier::new(3));
        let together: Vec<_> = (0..3)
            .map(|_| {
                let (threads, gate) = (Arc::clone(&threads), Arc::clone(&gate));
                tokio::spawn(async move { threads.run(move || gate.wait()).await })
            })
            .collect();
        for pass in together {
            pass.await.unwrap().unwrap();
        }
        assert_eq!(threads.idle_threads(), 3);
        for _ in 0..10 {
            threads.run(|| ()).await.unwrap();
        }
        assert_eq!(threads.idle_threads(), 3);
    }

    #[tokio::test]
    async fn a_pass_that_panics_is_reported_and_the_next_runs() {
        let threads = PassThreads::default();
        let lost = threads
            .run(|| -> u32 { std::panic::panic_any("a bug in a pass") })
            .await;
        assert!(lost.is_err());
        assert_eq!(threads.run(|| 7).await.unwrap(), 7);
    }

    /// Sends on its channel when dropped: as a thread-local, when its thread ends.
    struct OnExit(mpsc::Sender<()>);

    impl Drop for OnExit {
        fn drop(&mut self) {
            let _ = self.0.send(());
        }
    }

    thread_local! {
        static ON_EXIT: std::cell::RefCell<Option<OnExit>> = const { std::cell::RefCell::new(None) };
    }

    #[test]
    fn threads_end_with_the_proxy() {
        let threads = PassThreads::default();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (exited, ended) = mpsc::channel();
        runtime
            .block_on(threads.run(move || {
                ON_EXIT.with(|slot| *slot.borrow_mut() = Some(OnExit(exited)));
            }))
            .unwrap();
        assert!(ended.try_recv().is_err(), "the idle thread ended early");
        drop(threads);
        ended
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap();
    }
}
