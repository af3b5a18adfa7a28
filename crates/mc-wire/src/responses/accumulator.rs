//! Folds the events of a Responses stream into the response a non-streaming call would
//! have returned.
//!
//! The terminal event (`response.completed`, `.incomplete`, `.failed`) carries the whole
//! response, usage included, and wins. A stream cut before it still yields what it had: the
//! latest lifecycle response, with the items closed so far (`response.output_item.done`) as
//! its output. Accumulation never fails: a provider quirk changes nothing the proxy
//! forwards, so it must not stop the bookkeeping.

use std::collections::BTreeMap;

use super::event::StreamEvent;
use super::item::Item;
use super::response::{ResponsesResponse, ResponsesUsage};

/// Accumulates one stream; feed it every decoded event in order, then
/// [`finish`](Self::finish).
#[derive(Debug, Default)]
pub struct EventAccumulator {
    latest: Option<ResponsesResponse>,
    terminal: bool,
    items: BTreeMap<u64, Item>,
    events: usize,
}

impl EventAccumulator {
    /// An accumulator before the first event.
    pub fn new() -> Self {
        Self::default()
    }

    /// Folds one event in.
    pub fn push(&mut self, event: &StreamEvent) {
        self.events += 1;
        if let Some(response) = &event.response
            && !self.terminal
        {
            self.latest = Some(response.clone());
            self.terminal = event.is_terminal();
        }
        if event.kind == "response.output_item.done"
            && let Some(item) = &event.item
        {
            let index = event
                .output_index
                .unwrap_or_else(|| u64::try_from(self.items.len()).unwrap_or(u64::MAX));
            self.items.insert(index, item.clone());
        }
    }

    /// How many events were folded in.
    pub fn events(&self) -> usize {
        self.events
    }

    /// Whether the terminal event has arrived.
    pub fn is_finished(&self) -> bool {
        self.terminal
    }

    /// The usage reported so far (by the terminal event, in practice).
    pub fn usage(&self) -> Option<&ResponsesUsage> {
        self.latest.as_ref()?.usage.as_ref()
    }

    /// The response the stream adds up to; `None` if no event carried a response.
    pub fn finish(self) -> Option<ResponsesResponse> {
        let mut response = self.latest?;
        if response.output_items().is_empty() && !self.items.is_empty() {
            response.output = Some(self.items.into_values().collect());
        }
        Some(response)
    }
}
