//! Tool calls an assistant message makes (`tool_calls[]`).
//!
//! Only `id` and the function's `name` and `arguments` are typed: they are what pairs a call
//! with its `tool` message and what the neutral model records. `type` (always `"function"`
//! today) stays in `rest`, so a call goes back out exactly as it came.

use serde_json::{Map, Value};

use crate::error::{JsonPath, Result};
use crate::object::{FromJson, KeyOrder, ObjectReader, WireObject, adopt_fields, wire_serde};
use crate::wire_object::wire_object;

/// One entry of an assistant message's `tool_calls`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The call id the answering `tool` message names in `tool_call_id`.
    pub id: String,
    /// The function called.
    pub function: FunctionCall,
    /// Unmodelled fields (`type`, …).
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl ToolCall {
    /// Takes the fields and key order `client` (the same call as the client sent it) has
    /// beside the ones the engine renders: `type`, an `index`, fields of the harness.
    pub fn adopt_client_fields(&mut self, client: &ToolCall) {
        adopt_fields(&mut self.rest, &mut self.order, &client.rest, &client.order);
        let (ours, theirs) = (&mut self.function, &client.function);
        adopt_fields(&mut ours.rest, &mut ours.order, &theirs.rest, &theirs.order);
    }

    /// A `function` call with no other fields.
    ///
    /// Written as `{"id", "function", "type": "function"}`: typed keys first, then `rest`.
    pub fn function(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        let mut rest = Map::new();
        rest.insert("type".to_owned(), Value::String("function".to_owned()));
        Self {
            id: id.into(),
            function: FunctionCall::new(name, arguments),
            rest,
            order: KeyOrder::default(),
        }
    }
}

impl FromJson for ToolCall {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let mut reader = ObjectReader::from_value(value, path, Self::FIELDS)?;
        let id = reader.require(0)?;
        let function = reader.require(1)?;
        let (rest, order) = reader.finish();
        Ok(Self {
            id,
            function,
            rest,
            order,
        })
    }
}

/// The function half of a [`ToolCall`].
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionCall {
    /// The tool's name.
    pub name: String,
    /// The arguments as the model wrote them: a JSON document in a string, which the model
    /// may have left invalid. Kept as a string so a round trip never reformats it.
    pub arguments: String,
    /// Unmodelled fields.
    pub rest: Map<String, Value>,
    order: KeyOrder,
}

impl FunctionCall {
    /// A function call with no other fields.
    pub fn new(name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            arguments: arguments.into(),
            rest: Map::new(),
            order: KeyOrder::default(),
        }
    }
}

impl FromJson for FunctionCall {
    fn from_json(value: Value, path: &JsonPath<'_>) -> Result<Self> {
        let mut reader = ObjectReader::from_value(value, path, Self::FIELDS)?;
        let name = reader.require(0)?;
        let arguments = reader.require(1)?;
        let (rest, order) = reader.finish();
        Ok(Self {
            name,
            arguments,
            rest,
            order,
        })
    }
}

wire_object!(ToolCall, [0 => "id": id, 1 => "function": function]);
wire_object!(FunctionCall, [0 => "name": name, 1 => "arguments": arguments]);
wire_serde!(ToolCall, FunctionCall);
