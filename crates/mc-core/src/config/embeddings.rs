//! Whether search uses embeddings, and their shape.

use serde::Serialize;

use super::units::Bounds;

/// Semantic search embeddings (DESIGN §5 "Search", §9).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EmbeddingsConfig {
    /// Whether search adds embedding similarity to full-text ranking; without it search
    /// uses FTS5 alone.
    pub enabled: bool,
    /// Vector size of the embedding model (all-MiniLM-L6-v2 class: 384). Stored vectors of
    /// another size are re-embedded rather than compared.
    pub dimensions: u32,
}

impl EmbeddingsConfig {
    /// Accepted [`Self::dimensions`].
    pub const DIMENSIONS: Bounds = Bounds::count(1, 8_192, "dimensions");
}

impl Default for EmbeddingsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            dimensions: 384,
        }
    }
}
