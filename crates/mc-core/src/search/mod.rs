//! Search, the pure parts: turning what a user or an agent typed into a full-text query that
//! cannot be misread as query syntax, the text of a message worth indexing, and the fusion of
//! ranked lists from several sources and signals into one ranking.
//!
//! The store runs the queries and the engine orchestrates them; everything here is a pure
//! function of its arguments, so rankings are reproducible and tested without a database.

mod fusion;
mod indexed_text;
mod query;

pub use fusion::{Candidate, Fused, FusionWeights, Lead, Signal, Source, fuse};
pub use indexed_text::indexed_text;
pub use query::{FtsQuery, MAX_QUERY_TERMS, QueryError, fts_query, writes_name};
