//! One request against the cache: which prefix it reads, which it writes, and the usage the
//! provider would report for it.

use crate::error::CacheError;
use crate::prompt::PromptBlock;
use crate::state::CacheState;
use crate::ttl::Ttl;
use mc_core::models::min_cacheable_tokens;

/// The provider's limit on `cache_control` blocks per request.
pub const MAX_BREAKPOINTS: usize = 4;

/// How many blocks before a breakpoint the provider also checks for a stored prefix.
pub const LOOKBACK_BLOCKS: usize = 20;

/// The usage the provider would report for one request.
///
/// `input_tokens + cache_creation_input_tokens + cache_read_input_tokens == prompt_tokens`
/// always holds, as does `cache_creation_5m + cache_creation_1h == cache_creation_input_tokens`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheUsage {
    /// Tokens neither read from nor written to the cache (billed at 1x).
    pub input_tokens: u64,
    /// Tokens written to the cache.
    pub cache_creation_input_tokens: u64,
    /// The part of the write that lives 5 minutes (billed at 1.25x).
    pub cache_creation_5m: u64,
    /// The part of the write that lives 1 hour (billed at 2x).
    pub cache_creation_1h: u64,
    /// Tokens read from the cache (billed at 0.1x).
    pub cache_read_input_tokens: u64,
    /// The whole prompt.
    pub prompt_tokens: u64,
}

/// Runs one request (already [`crate::linearise`]d) on `model` at `now_ms` through `state`.
///
/// Reads first: the longest live prefix ending at a breakpoint or at one of the
/// [`LOOKBACK_BLOCKS`] blocks before it is the read, and its lifetime restarts. Then every
/// breakpoint whose prefix is not live is written, when the prefix reaches the model's minimum;
/// writes that end inside the read prefix cost nothing, since those tokens were read. A
/// rejected request leaves `state` untouched, as a 400 does.
pub fn apply(
    state: &mut CacheState,
    blocks: &[PromptBlock],
    model: &str,
    now_ms: u64,
) -> Result<CacheUsage, CacheError> {
    let breakpoints: Vec<(usize, Ttl)> = blocks
        .iter()
        .enumerate()
        .filter_map(|(index, block)| block.breakpoint.map(|ttl| (index, ttl)))
        .collect();
    check_breakpoints(blocks, &breakpoints)?;

    // ends[i]: tokens of the prefix that ends with block i.
    let ends: Vec<u64> = blocks
        .iter()
        .scan(0u64, |total, block| {
            *total = total.saturating_add(block.tokens);
            Some(*total)
        })
        .collect();
    let prompt_tokens = ends.last().copied().unwrap_or(0);

    let hit = find_hit(state, blocks, &breakpoints, now_ms);
    let read = hit.map_or(0, |index| ends[index]);
    if let Some(index) = hit {
        state.refresh(&blocks[index].prefix, blocks[index].breakpoint, now_ms);
    }

    let min_tokens = min_cacheable_tokens(model);
    let mut cursor = read;
    let mut usage = CacheUsage {
        cache_read_input_tokens: read,
        prompt_tokens,
        ..CacheUsage::default()
    };
    for &(index, ttl) in &breakpoints {
        let prefix = &blocks[index].prefix;
        if state.is_cached(prefix, now_ms) {
            // Part of what was just read, so it was used: keep it alive too.
            state.refresh(prefix, Some(ttl), now_ms);
            continue;
        }
        if ends[index] < min_tokens {
            continue;
        }
        state.write(*prefix, ttl, now_ms);
        if hit.is_some_and(|hit| index <= hit) {
            continue;
        }
        // Tokens since the previous write belong to this breakpoint's entry and its TTL.
        let written = ends[index] - cursor;
        match ttl {
            Ttl::FiveMinutes => usage.cache_creation_5m += written,
            Ttl::OneHour => usage.cache_creation_1h += written,
        }
        cursor = ends[index];
    }
    usage.cache_creation_input_tokens = cursor - read;
    usage.input_tokens = prompt_tokens - cursor;
    Ok(usage)
}

/// Whether the provider would accept `blocks`' breakpoints, checked without touching a cache,
/// so a caller can order this check before others (the context window) as the provider does.
pub(crate) fn validate(blocks: &[PromptBlock]) -> Result<(), CacheError> {
    let breakpoints: Vec<(usize, Ttl)> = blocks
        .iter()
        .enumerate()
        .filter_map(|(index, block)| block.breakpoint.map(|ttl| (index, ttl)))
        .collect();
    check_breakpoints(blocks, &breakpoints)
}

/// The provider's validation of breakpoints: the count first, then the TTL order.
fn check_breakpoints(
    blocks: &[PromptBlock],
    breakpoints: &[(usize, Ttl)],
) -> Result<(), CacheError> {
    if breakpoints.len() > MAX_BREAKPOINTS {
        return Err(CacheError::TooManyBreakpoints {
            found: breakpoints.len(),
        });
    }
    let mut seen_five_minutes = false;
    for &(index, ttl) in breakpoints {
        match ttl {
            Ttl::FiveMinutes => seen_five_minutes = true,
            Ttl::OneHour if seen_five_minutes => {
                return Err(CacheError::TtlOrder {
                    path: blocks[index].path,
                });
            }
            Ttl::OneHour => {}
        }
    }
    Ok(())
}

/// The index of the last block of the longest live prefix within reach of a breakpoint.
fn find_hit(
    state: &CacheState,
    blocks: &[PromptBlock],
    breakpoints: &[(usize, Ttl)],
    now_ms: u64,
) -> Option<usize> {
    breakpoints
        .iter()
        .rev()
        .filter_map(|&(breakpoint, _)| {
            (breakpoint.saturating_sub(LOOKBACK_BLOCKS)..=breakpoint)
                .rev()
                .find(|&index| state.is_cached(&blocks[index].prefix, now_ms))
        })
        .max()
}

#[cfg(test)]
mod tests;
