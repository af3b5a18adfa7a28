//! Conversion between Responses items and the neutral conversation model.
//!
//! Into the model: consecutive items the model wrote (assistant messages, function and
//! custom tool calls, reasoning, server-side tool calls, `compaction`) become one assistant
//! [`Message`], in order, as Anthropic and Chat would carry them; each tool output becomes a
//! [`Role::Tool`] message with one [`Part::ToolResult`]; user messages become user messages
//! and `system` / `developer` messages [`Role::System`]. Text parts become [`Part::Text`]
//! (a refusal too: it is the model's words); images, files and audio [`Part::Media`] whose
//! source is the whole part.
//!
//! Whatever the model cannot hold without loss stays a whole item in a [`Part::Unknown`]:
//! reasoning (its `encrypted_content` is only the provider's to read), items of types not
//! typed here, and a message with a part type not typed here. So in a conversation taken
//! from this wire a [`Part::Unknown`] is always a whole item, and goes back out verbatim.
//!
//! Out of the model: a pure function of the messages, so the same stored rows always render
//! to the same bytes. Item ids and statuses are not kept (the provider does not need them on
//! input); custom tool calls are told from function calls by the request's tool list.

use std::collections::HashSet;

use mc_core::{MediaKind, Message, Part, Role};
use serde_json::{Map, Value};

use super::content::{Content, ContentPart, TextKind};
use crate::arguments::{parse_arguments, tool_input_text};
use crate::error::JsonPath;
use crate::object::FromJson;

use super::item::{
    CustomToolCallItem, FunctionCallItem, Item, MessageItem, MessageRole, OutputKind,
    ToolOutputItem,
};

/// The items as neutral messages (see the module docs for the grouping). An item with no
/// content (a message whose content is an empty list) is no message: rendering would leave
/// it out, and two assistant items on either side of it would then read back as one.
pub fn to_conversation(items: &[Item]) -> Vec<Message> {
    to_conversation_with_starts(items).0
}

/// [`to_conversation`], with the index of the item each message starts at: a message
/// that is not the assistant's is one item, an assistant's runs until the next message
/// starts. A follow-up request is converted by its new items only from these.
pub fn to_conversation_with_starts(items: &[Item]) -> (Vec<Message>, Vec<usize>) {
    let mut messages: Vec<Message> = Vec::new();
    let mut starts = Vec::new();
    let mut assistant_open = false;
    for (index, item) in items.iter().enumerate() {
        let (role, parts) = item_parts(item);
        if parts.is_empty() {
            continue;
        }
        if role == Role::Assistant {
            match messages.last_mut() {
                Some(last) if assistant_open => last.parts.extend(parts),
                _ => {
                    messages.push(Message::new(Role::Assistant, parts));
                    starts.push(index);
                }
            }
            assistant_open = true;
        } else {
            messages.push(Message::new(role, parts));
            starts.push(index);
            assistant_open = false;
        }
    }
    (messages, starts)
}

/// The role of the message an item belongs to in the model: what the model wrote is the
/// assistant's (messages, tool calls, reasoning, server-side calls, `compaction`), a tool
/// output the tool's, other unknown items the user's.
pub fn item_role(item: &Item) -> Role {
    match item {
        Item::Message(message) => match message.role {
            MessageRole::User => Role::User,
            MessageRole::Assistant => Role::Assistant,
            MessageRole::System | MessageRole::Developer => Role::System,
        },
        Item::FunctionCall(_) | Item::CustomToolCall(_) | Item::Reasoning(_) => Role::Assistant,
        Item::ToolOutput(_) => Role::Tool,
        Item::Other(_) => {
            let kind = item.type_name();
            if kind.ends_with("_call") || kind == "compaction" {
                Role::Assistant
            } else {
                Role::User
            }
        }
    }
}

/// The role an item belongs to ([`item_role`]) and its parts.
fn item_parts(item: &Item) -> (Role, Vec<Part>) {
    let parts = match item {
        Item::Message(message) => {
            content_parts(&message.content).unwrap_or_else(|| vec![opaque(item)])
        }
        Item::FunctionCall(call) => vec![Part::ToolCall {
            id: call.call_id.clone(),
            name: call.name.clone(),
            input: parse_arguments(&call.arguments)
                .unwrap_or_else(|| Value::String(call.arguments.clone())),
        }],
        Item::CustomToolCall(call) => vec![Part::ToolCall {
            id: call.call_id.clone(),
            name: call.name.clone(),
            input: Value::String(call.input.clone()),
        }],
        Item::ToolOutput(output) => vec![Part::ToolResult {
            call_id: output.call_id.clone(),
            content: output_parts(&output.output),
            is_error: false,
        }],
        Item::Reasoning(_) | Item::Other(_) => vec![opaque(item)],
    };
    (item_role(item), parts)
}

fn opaque(item: &Item) -> Part {
    Part::Unknown {
        type_name: item.type_name().to_owned(),
        raw: Value::Object(item.to_object()),
    }
}

/// A message's content in the model, or `None` when a part has a type the model cannot
/// hold (the message is then kept whole).
fn content_parts(content: &Content) -> Option<Vec<Part>> {
    match content {
        Content::Text(text) => Some(vec![Part::text(text.clone())]),
        Content::Parts(parts) => parts
            .iter()
            .map(|part| match part {
                ContentPart::Text(part) => Some(Part::text(part.text.clone())),
                ContentPart::Refusal(part) => Some(Part::text(part.refusal.clone())),
                ContentPart::Other(raw) => media(raw),
            })
            .collect(),
    }
}

/// A tool output's content: as a message's, with unknown part types kept as unknown parts.
fn output_parts(output: &Content) -> Vec<Part> {
    match output {
        Content::Text(text) => vec![Part::text(text.clone())],
        Content::Parts(parts) => parts
            .iter()
            .map(|part| match part {
                ContentPart::Text(part) => Part::text(part.text.clone()),
                ContentPart::Refusal(part) => Part::text(part.refusal.clone()),
                ContentPart::Other(raw) => media(raw).unwrap_or_else(|| Part::Unknown {
                    type_name: part.type_name().to_owned(),
                    raw: Value::Object(raw.clone()),
                }),
            })
            .collect(),
    }
}

fn media(raw: &Map<String, Value>) -> Option<Part> {
    let media = match raw.get("type").and_then(Value::as_str)? {
        "input_image" => MediaKind::Image,
        "input_file" => MediaKind::Document,
        "input_audio" => MediaKind::Audio,
        _ => return None,
    };
    Some(Part::Media {
        media,
        source: Value::Object(raw.clone()),
    })
}

/// Renders neutral messages as items; `is_custom_tool` says which tool names are `custom`
/// tools (called with free text), from the request's tool list.
///
/// Text and media gather into message items (assistant text as `output_text`, everything
/// else as `input_text`; [`Role::Tool`] text becomes a user message); each tool call and
/// result becomes its own item where it stood; a [`Part::Unknown`] holding an item goes out
/// as that item. Dropped, because the wire has no place for them: visible thinking and
/// redacted thinking from another wire (reasoning from this wire is an item), media or
/// unknown parts that do not hold a Responses part or item, and reasoning items with nothing
/// after them in their message (the provider refuses reasoning without the item it led to).
pub fn from_conversation<'a>(
    messages: impl IntoIterator<Item = &'a Message> + Clone,
    is_custom_tool: impl Fn(&str) -> bool,
) -> Vec<Item> {
    let renderer = ItemRenderer::new(messages.clone(), is_custom_tool);
    let mut items = Vec::new();
    for message in messages {
        items.extend(renderer.render(message));
    }
    items
}

/// Renders a conversation's messages one at a time, each as [`from_conversation`] renders it
/// among the others: an output is a custom tool's when the conversation's call it answers
/// is one, so what a message becomes depends on the whole conversation only through those
/// call ids ([`Self::custom_calls`]).
pub struct ItemRenderer<F> {
    is_custom_tool: F,
    custom_calls: HashSet<String>,
}

impl<F: Fn(&str) -> bool> ItemRenderer<F> {
    /// The renderer of `messages`, whose custom tools `is_custom_tool` names.
    pub fn new<'a>(messages: impl IntoIterator<Item = &'a Message>, is_custom_tool: F) -> Self {
        let custom_calls = messages
            .into_iter()
            .flat_map(|message| &message.parts)
            .filter_map(|part| match part {
                Part::ToolCall { id, name, .. } if is_custom_tool(name) => Some(id.clone()),
                _ => None,
            })
            .collect();
        Self {
            is_custom_tool,
            custom_calls,
        }
    }

    /// The ids of the conversation's custom tool calls.
    pub fn custom_calls(&self) -> &HashSet<String> {
        &self.custom_calls
    }

    /// The ids of the conversation's custom tool calls, the renderer done with.
    pub fn into_custom_calls(self) -> HashSet<String> {
        self.custom_calls
    }

    /// One message's items.
    pub fn render(&self, message: &Message) -> Vec<Item> {
        let mut items = Vec::new();
        render_message(
            message,
            &self.is_custom_tool,
            &self.custom_calls,
            &mut items,
        );
        items
    }
}

fn render_message(
    message: &Message,
    is_custom_tool: &impl Fn(&str) -> bool,
    custom_calls: &HashSet<String>,
    items: &mut Vec<Item>,
) {
    let (role, text_kind) = match message.role {
        Role::System => (MessageRole::System, TextKind::Input),
        Role::User | Role::Tool => (MessageRole::User, TextKind::Input),
        Role::Assistant => (MessageRole::Assistant, TextKind::Output),
    };
    let mut pending: Vec<ContentPart> = Vec::new();
    let flush = |pending: &mut Vec<ContentPart>, items: &mut Vec<Item>| {
        if !pending.is_empty() {
            let content = Content::Parts(std::mem::take(pending));
            items.push(Item::Message(MessageItem::new(role, content)));
        }
    };
    // OpenAI refuses a reasoning item that nothing the model wrote follows: after the engine
    // dropped the call a reasoning item led to, the reasoning goes too.
    let answered_until = message
        .parts
        .iter()
        .rposition(|part| {
            !is_reasoning(part)
                && !matches!(part, Part::Thinking { .. } | Part::RedactedThinking { .. })
        })
        .map_or(0, |at| at + 1);
    for (at, part) in message.parts.iter().enumerate() {
        if at >= answered_until && is_reasoning(part) {
            continue;
        }
        match part {
            Part::Text { text, .. } => pending.push(ContentPart::text(text_kind, text.clone())),
            Part::Media {
                source: Value::Object(raw),
                ..
            } if raw.get("type").is_some_and(Value::is_string) => {
                pending.push(ContentPart::Other(raw.clone()));
            }
            Part::Media { .. } | Part::Thinking { .. } | Part::RedactedThinking { .. } => {}
            Part::Unknown { raw, .. } => {
                if let Value::Object(raw) = raw {
                    flush(&mut pending, items);
                    items.push(typed_item(raw));
                }
            }
            Part::ToolCall { id, name, input } => {
                flush(&mut pending, items);
                items.push(if is_custom_tool(name) {
                    Item::CustomToolCall(CustomToolCallItem::new(id, name, tool_input_text(input)))
                } else {
                    Item::FunctionCall(FunctionCallItem::new(id, name, tool_input_text(input)))
                });
            }
            Part::ToolResult {
                call_id, content, ..
            } => {
                flush(&mut pending, items);
                let kind = if custom_calls.contains(call_id) {
                    OutputKind::Custom
                } else {
                    OutputKind::Function
                };
                items.push(Item::ToolOutput(ToolOutputItem::new(
                    kind,
                    call_id,
                    output_content(content),
                )));
            }
        }
    }
    flush(&mut pending, items);
}

/// An item kept whole, read back into its typed form (a reasoning item is a
/// [`Item::Reasoning`] again); one that no longer reads goes out as it is.
fn typed_item(raw: &Map<String, Value>) -> Item {
    Item::from_json(Value::Object(raw.clone()), &JsonPath::Root)
        .unwrap_or_else(|_| Item::Other(raw.clone()))
}

fn is_reasoning(part: &Part) -> bool {
    matches!(part, Part::Unknown { type_name, .. } if type_name == "reasoning")
}

/// A tool result's content: a bare string when it is one text (the form clients send),
/// else parts.
fn output_content(content: &[Part]) -> Content {
    match content {
        [] => return Content::Text(String::new()),
        [Part::Text { text, .. }] => return Content::Text(text.clone()),
        _ => {}
    }
    Content::Parts(
        content
            .iter()
            .filter_map(|part| match part {
                Part::Text { text, .. } => Some(ContentPart::text(TextKind::Input, text.clone())),
                Part::Media {
                    source: Value::Object(raw),
                    ..
                }
                | Part::Unknown {
                    raw: Value::Object(raw),
                    ..
                } => Some(ContentPart::Other(raw.clone())),
                Part::Media { .. }
                | Part::Unknown { .. }
                | Part::ToolCall { .. }
                | Part::ToolResult { .. }
                | Part::Thinking { .. }
                | Part::RedactedThinking { .. } => None,
            })
            .collect(),
    )
}
