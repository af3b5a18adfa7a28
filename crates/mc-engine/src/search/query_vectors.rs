//! The vectors of recent queries, so a repeated search does not embed its query again.
//!
//! Embedding the query is most of a hybrid search's time (the local model takes tens of
//! milliseconds; an endpoint, a round trip), and agents repeat searches: the same name
//! looked up again a few turns later, the same question after a retry. A query's vector
//! depends only on its text and the model, and one [`super::EmbeddedSearch`] has one model.

use std::collections::VecDeque;
use std::sync::Arc;

/// Queries remembered at most: enough for a session's repeated lookups, a few hundred KB
/// at the largest common dimensions.
pub const REMEMBERED_QUERIES: usize = 64;

/// Recent queries and their vectors, least recently used first.
#[derive(Debug, Default)]
pub struct QueryVectors {
    recent: VecDeque<(String, Arc<[f32]>)>,
}

impl QueryVectors {
    /// The vector of `query` when it was embedded recently; it becomes the most recent.
    pub fn get(&mut self, query: &str) -> Option<Arc<[f32]>> {
        let at = self.recent.iter().position(|(text, _)| text == query)?;
        let entry = self.recent.remove(at)?;
        let vector = Arc::clone(&entry.1);
        self.recent.push_back(entry);
        Some(vector)
    }

    /// Remembers `vector` as `query`'s, forgetting the least recently used past
    /// [`REMEMBERED_QUERIES`].
    pub fn put(&mut self, query: &str, vector: Arc<[f32]>) {
        if let Some(at) = self.recent.iter().position(|(text, _)| text == query) {
            self.recent.remove(at);
        }
        self.recent.push_back((query.to_owned(), vector));
        while self.recent.len() > REMEMBERED_QUERIES {
            self.recent.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vector(value: f32) -> Arc<[f32]> {
        Arc::from(vec![value; 3])
    }

    #[test]
    fn a_repeated_query_is_found_and_the_least_recent_is_forgotten() {
        let mut queries = QueryVectors::default();
        assert_eq!(queries.get("parse_card"), None);
        for n in 0..REMEMBERED_QUERIES {
            queries.put(&format!("q{n}"), vector(n as f32));
        }
        // Using q0 makes it the most recent: q1 is forgotten first.
        assert_eq!(queries.get("q0"), Some(vector(0.0)));
        queries.put("new", vector(-1.0));
        assert_eq!(queries.get("q1"), None);
        assert_eq!(queries.get("q0"), Some(vector(0.0)));
        assert_eq!(queries.get("new"), Some(vector(-1.0)));
        // Putting a query again replaces its vector, not a second entry.
        queries.put("new", vector(-2.0));
        assert_eq!(queries.get("new"), Some(vector(-2.0)));
        assert_eq!(queries.recent.len(), REMEMBERED_QUERIES);
    }
}
