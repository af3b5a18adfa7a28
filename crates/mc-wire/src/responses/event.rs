//! One `data:` payload of a streamed response: an event named by its `type`.
//!
//! A stream opens with `response.created` (and `response.in_progress`), each carrying the
//! response so far; every output item is announced by `response.output_item.added`, grows
//! by deltas (`response.output_text.delta`, `response.function_call_arguments.delta`, …)
//! and is closed by `response.output_item.done` carrying it whole; the stream ends with
//! `response.completed` (or `response.incomplete` / `response.failed`) carrying the final
//! response with its usage. Typed is what the accumulator needs; every other field and
//! every event type we do not know survive a round trip.

use serde_json::{Map, Value};

use super::item::Item;
use super::response::ResponsesResponse;
use crate::error::{JsonPath, Result};
use crate::object::{
    FromJson, KeyOrder, ObjectReader, WireObject, encode_json, parse_body, wire_serde,
};
use crate::wire_object::wire_object;

/// One stream event.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamEvent {
    /// The event's `type` (`response.completed`, …).
    pub kind: String,
    /// The response, in lifecycle events.
    pub response: Option<ResponsesResponse>,
    /// The item, in `response.output_item.added` / `.done`.
    pub item: Option<Item>,
    /// Which output item the event is about.
    pub output_index: Option<u64>,
    /// A piece of text or arguments, in delta events; kept as sent.
    pub delta: Option<Value>,
    /// Unmodelled fields (`sequence_number`, `item_id`, `content_index`, …).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl StreamEvent {
    /// An event of `kind` with nothing else set.
    pub fn new(kind: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            response: None,
            item: None,
            output_index: None,
            delta: None,
            rest: Map::new(),
            order: KeyOrder::default(),
        }
    }

    /// Decodes one `data:` payload no larger than `limit_bytes`.
    pub fn decode(data: &[u8], limit_bytes: usize) -> Result<Self> {
        Self::from_json(parse_body(data, limit_bytes)?, &JsonPath::Root)
    }

    /// Encodes the event; a pure function of its value.
    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }

    /// The delta as text, when it is a string.
    pub fn delta_text(&self) -> Option<&str> {
        self.delta.as_ref()?.as_str()
    }

    /// Whether this event ends the stream (`response.completed`, `.incomplete`, `.failed`).
    pub fn is_terminal(&self) -> bool {
        matches!(
            self.kind.as_str(),
            "response.completed" | "response.incomplete" | "response.failed"
        )
    }
}

impl FromJson for StreamEvent {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let mut reader = ObjectReader::from_value(value, path, Self::FIELDS)?;
        let kind = reader.require(0)?;
        let response = reader.take(1)?;
        let item = reader.take(2)?;
        let output_index = reader.take(3)?;
        let delta = reader.take(4)?;
        let (rest, order) = reader.finish();
        Ok(Self {
            kind,
            response,
            item,
            output_index,
            delta,
            rest,
            order,
        })
    }
}

wire_object!(
    StreamEvent,
    [
        0 => "type": kind,
        1 => "response": response as optional,
        2 => "item": item as optional,
        3 => "output_index": output_index as optional,
        4 => "delta": delta as optional,
    ]
);
wire_serde!(StreamEvent);
