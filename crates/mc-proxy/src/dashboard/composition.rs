//! What a session's prompt is made of now, in tokens: the system prompt and tools, `m[0]`
//! (the history, memories and docs as of the last fold), `m[1]` (what changed since), and
//! the raw tail, with the part of it shown smaller (excerpts, clipped tool inputs).
//!
//! The engine records its own estimates of the head and the tail with the session's state;
//! the provider reported the whole prompt of the last call. The system prompt and tools are
//! what the provider counted beyond the engine's parts (so they carry the estimates' error),
//! and are left out when the provider reported nothing.

use mc_core::SessionId;
use mc_engine::EngineState;
use mc_store::ReadTx;
use serde::Serialize;

/// The prompt's parts as of the session's last pass, in tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Composition {
    /// The last call's whole prompt as the provider counted it.
    pub reported_tokens: Option<u64>,
    /// The system prompt and tools: the reported prompt less the engine's parts.
    pub system_and_tools_tokens: Option<u64>,
    /// `m[0]`, estimated.
    pub m0_tokens: u64,
    /// `m[1]`, estimated.
    pub m1_tokens: u64,
    /// The raw tail as rendered (excerpts included), estimated.
    pub tail_tokens: u64,
    /// Of the tail, the units shown smaller (excerpts, clipped tool inputs), as rendered.
    pub reshaped_tokens: u64,
    /// The first message sent raw: those before it are in the head.
    pub boundary: u64,
}

/// `session`'s composition, or `None` before its first pass.
pub fn composition(
    tx: &ReadTx<'_>,
    session: &SessionId,
    reported_tokens: Option<u64>,
) -> mc_store::Result<Option<Composition>> {
    Ok(EngineState::read(tx, session)?.map(|state| of_state(&state, reported_tokens)))
}

fn of_state(state: &EngineState, reported_tokens: Option<u64>) -> Composition {
    let tail_tokens = state.rendered_tail.map_or(0, |(_, tokens)| tokens);
    // Reshaped units are counted once, by "ordinal:part"; those now in the head are not
    // in the tail.
    let reshaped_tokens = state
        .shown_tokens
        .iter()
        .filter(|(unit, _)| {
            unit.split(':')
                .next()
                .and_then(|ordinal| ordinal.parse::<u64>().ok())
                .is_some_and(|ordinal| ordinal >= state.boundary)
        })
        .map(|(_, tokens)| tokens)
        .sum();
    let engine_parts = state.m0_tokens + state.m1_tokens + tail_tokens;
    Composition {
        reported_tokens,
        system_and_tools_tokens: reported_tokens.map(|total| total.saturating_sub(engine_parts)),
        m0_tokens: state.m0_tokens,
        m1_tokens: state.m1_tokens,
        tail_tokens,
        reshaped_tokens,
        boundary: state.boundary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_add_up_to_what_the_provider_counted() {
        let mut state = EngineState {
            m0_tokens: 3_000,
            m1_tokens: 200,
            boundary: 40,
            rendered_tail: Some((40, 12_000)),
            ..EngineState::default()
        };
        state.shown_tokens.insert("39:0".to_owned(), 900);
        state.shown_tokens.insert("41:1".to_owned(), 150);
        state.shown_tokens.insert("57:0".to_owned(), 50);
        let composition = of_state(&state, Some(20_000));
        assert_eq!(composition.system_and_tools_tokens, Some(4_800));
        assert_eq!(composition.tail_tokens, 12_000);
        assert_eq!(
            composition.reshaped_tokens, 200,
            "only the tail's reshaped units"
        );
        assert_eq!(of_state(&state, None).system_and_tools_tokens, None);
        assert_eq!(
            of_state(&state, Some(1_000)).system_and_tools_tokens,
            Some(0)
        );
    }
}
