//! A token counter that remembers: replays count the same blocks over and over.
//!
//! Every request of a session resends the history, and every strategy resends most of it, so
//! a replay asks for the count of the same block text hundreds of times. Tokenising is the
//! slow part (a few MB/s); looking a text up is not. The counts are exact (keyed by the whole
//! text), so memoising changes no figure.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use mc_sim::CountTokens;

/// Wraps a counter with a shared table of the counts it has made.
pub struct MemoCounter {
    inner: Arc<dyn CountTokens + Send + Sync>,
    counts: Mutex<HashMap<String, u64>>,
}

impl std::fmt::Debug for MemoCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoCounter")
            .field("entries", &self.len())
            .finish_non_exhaustive()
    }
}

impl MemoCounter {
    /// A memo in front of `inner`.
    pub fn new(inner: Arc<dyn CountTokens + Send + Sync>) -> Self {
        Self {
            inner,
            counts: Mutex::new(HashMap::new()),
        }
    }

    /// How many distinct texts have been counted.
    pub fn len(&self) -> usize {
        self.table().len()
    }

    /// Whether nothing has been counted yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The table; a thread that panicked while holding it left it consistent (an insert is
    /// atomic from the table's view), so a poisoned lock is used as is.
    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, u64>> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl CountTokens for MemoCounter {
    fn count_tokens(&self, text: &str) -> u64 {
        if let Some(&count) = self.table().get(text) {
            return count;
        }
        // Counted outside the lock so other threads are not held up by the tokenizer.
        let count = self.inner.count_tokens(text);
        self.table().insert(text.to_owned(), count);
        count
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    struct Calls(AtomicUsize);

    impl CountTokens for Calls {
        fn count_tokens(&self, text: &str) -> u64 {
            self.0.fetch_add(1, Ordering::Relaxed);
            text.len() as u64
        }
    }

    #[test]
    fn counts_each_text_once() {
        let inner = Arc::new(Calls(AtomicUsize::new(0)));
        let memo = MemoCounter::new(inner.clone());
        assert_eq!(memo.count_tokens("hello"), 5);
        assert_eq!(memo.count_tokens("hello"), 5);
        assert_eq!(memo.count_tokens("hi"), 2);
        assert_eq!(inner.0.load(Ordering::Relaxed), 2);
        assert_eq!(memo.len(), 2);
    }
}
