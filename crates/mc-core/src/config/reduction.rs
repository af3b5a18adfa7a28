//! How much of the live tail reduction leaves alone (DESIGN §5 "Tags and reduction").

use serde::Serialize;

use super::units::Bounds;

/// Reduction settings: queued drops, skeletons and nudges.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReductionConfig {
    /// The newest this many tags are protected: a drop aimed at them waits until they age
    /// out, so the model never loses what it is working on right now.
    pub protected_tags: u32,
    /// The newest this many dropped tool results keep their call as a skeleton (input strings
    /// clipped) so the model still sees what it did; older drops remove call and result whole.
    pub drop_skeletons: u32,
    /// Whether the engine reminds the model to reduce when context grows; a nudge that
    /// changes bytes rides the pass's bust permission like any other mutation.
    pub nudges: bool,
}

impl ReductionConfig {
    /// Accepted [`Self::protected_tags`].
    pub const PROTECTED_TAGS: Bounds = Bounds::count(0, 1_000, "tags");
    /// Accepted [`Self::drop_skeletons`].
    pub const DROP_SKELETONS: Bounds = Bounds::count(0, 1_000, "dropped results");
}

impl Default for ReductionConfig {
    fn default() -> Self {
        Self {
            protected_tags: 20,
            drop_skeletons: 20,
            nudges: true,
        }
    }
}
