//! Which tools a client is offered, and the guidance that introduces them: all five, or,
//! when the engine's compaction is off (the host manages the window, nothing is tagged),
//! every tool but `ctx_reduce`, which could only refuse.

use std::sync::LazyLock;

use super::guidance::{HOST_COMPACTS_GUIDANCE, TOOL_GUIDANCE};
use super::{ToolSpec, reduce, tool_specs};

/// The five tools, built once: their schemas are generated, and the bytes must be the same
/// on every request.
static ALL: LazyLock<Vec<ToolSpec>> = LazyLock::new(tool_specs);

/// Every tool but `ctx_reduce`, in the same order.
static WITHOUT_REDUCE: LazyLock<Vec<ToolSpec>> = LazyLock::new(|| {
    tool_specs()
        .into_iter()
        .filter(|spec| spec.name != reduce::NAME)
        .collect()
});

/// The tools offered and the guidance that goes with them.
#[derive(Debug, Clone, Copy)]
pub struct Offer {
    /// The tools' definitions, in a fixed order.
    pub specs: &'static [ToolSpec],
    /// The guidance block.
    pub guidance: &'static str,
}

/// What is offered with the engine's compaction on (`compaction_enabled`) or off.
pub fn offer(compaction_enabled: bool) -> Offer {
    if compaction_enabled {
        Offer {
            specs: &ALL,
            guidance: TOOL_GUIDANCE,
        }
    } else {
        Offer {
            specs: &WITHOUT_REDUCE,
            guidance: HOST_COMPACTS_GUIDANCE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compaction_off_offers_every_tool_but_reduce_in_the_same_order() {
        let names = |offer: Offer| offer.specs.iter().map(|spec| spec.name).collect::<Vec<_>>();
        assert_eq!(
            names(offer(true)),
            [
                "ctx_reduce",
                "ctx_expand",
                "ctx_note",
                "ctx_memory",
                "ctx_search"
            ]
        );
        assert_eq!(
            names(offer(false)),
            ["ctx_expand", "ctx_note", "ctx_memory", "ctx_search"]
        );
        assert_eq!(offer(true).guidance, TOOL_GUIDANCE);
        assert_eq!(offer(false).guidance, HOST_COMPACTS_GUIDANCE);
    }
}
