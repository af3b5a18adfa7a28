//! A client's model call, decoded, whichever provider wire it came on.

use std::sync::Arc;

use mc_agent_tools::{names_tool, offers_ours};
use mc_core::Message;
use mc_engine::PassOutcome;
use mc_wire::anthropic::{BlockContent, ContentBlock, MessagesRequest};
use mc_wire::openai::{ChatMessage, ChatRequest};
use mc_wire::responses::{Input, Item, ResponsesRequest};
use serde_json::Value;

use crate::body_layout::BodyLayout;
use crate::chunked_body::ChunkedBody;
use crate::encoded_chat;
use crate::encoded_head::EncodedHeads;
use crate::encoded_list::EncodedList;
use crate::encoded_responses;
use crate::{render_anthropic, render_openai, render_responses};

/// A decoded model call.
#[derive(Debug)]
pub enum ClientRequest {
    /// `POST /v1/messages`, its messages taken out (shared: requests repeating a head's
    /// bytes share its decoding).
    Anthropic(Arc<MessagesRequest>),
    /// `POST /v1/chat/completions`.
    OpenAi(ChatRequest),
    /// `POST /v1/responses`.
    Responses(ResponsesRequest),
}

impl ClientRequest {
    /// The model the call names.
    pub fn model(&self) -> &str {
        match self {
            Self::Anthropic(request) => &request.model,
            Self::OpenAi(request) => &request.model,
            Self::Responses(request) => &request.model,
        }
    }

    /// The most output tokens the call allows, when it says.
    pub fn max_output_tokens(&self) -> Option<u64> {
        let rest = match self {
            Self::Anthropic(request) => &request.rest,
            Self::OpenAi(request) => &request.rest,
            Self::Responses(request) => &request.rest,
        };
        ["max_tokens", "max_completion_tokens", "max_output_tokens"]
            .iter()
            .find_map(|key| rest.get(*key).and_then(Value::as_u64))
    }

    /// The extended-thinking budget the call asks for (Anthropic `thinking.budget_tokens`),
    /// 0 when none: the answer's room must hold it.
    pub fn thinking_budget(&self) -> u64 {
        let rest = match self {
            Self::Anthropic(request) => &request.rest,
            Self::OpenAi(request) => &request.rest,
            Self::Responses(request) => &request.rest,
        };
        rest.get("thinking")
            .and_then(|thinking| thinking.get("budget_tokens"))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    }

    /// Anthropic `metadata.user_id`, where Claude Code writes its session id.
    pub fn metadata_user_id(&self) -> Option<&str> {
        match self {
            Self::Anthropic(request) => request.metadata_user_id(),
            Self::OpenAi(_) | Self::Responses(_) => None,
        }
    }

    /// Responses `prompt_cache_key`, where Codex, OpenCode and Pi write their session id.
    pub fn prompt_cache_key(&self) -> Option<&str> {
        match self {
            Self::Responses(request) => request.prompt_cache_key(),
            Self::Anthropic(_) | Self::OpenAi(_) => None,
        }
    }

    /// Identity of the system prompt and tools, blind to the client's cache markers.
    pub fn prefix_identity(&self) -> String {
        match self {
            Self::Anthropic(request) => {
                let mut request = MessagesRequest::clone(request);
                mc_wire::anthropic::strip_client_markers(&mut request);
                mc_wire::anthropic::prefix_identity(&request)
            }
            Self::OpenAi(request) => render_openai::prefix_identity(request),
            Self::Responses(request) => render_responses::prefix_identity(request),
        }
    }

    /// System blocks the upstream request carries (breakpoint placement).
    pub fn system_blocks(&self) -> usize {
        match self {
            Self::Anthropic(request) => render_anthropic::system_blocks(request),
            Self::OpenAi(_) | Self::Responses(_) => 0,
        }
    }

    /// Whether the call offers the model any tool (an empty list offers none).
    pub fn has_tools(&self) -> bool {
        match self {
            Self::Anthropic(request) => request
                .tools
                .as_ref()
                .is_some_and(|tools| !tools.is_empty()),
            Self::OpenAi(request) => request.has_tools(),
            Self::Responses(request) => request.has_tools(),
        }
    }

    /// The names of the tools the call offers the model, those inside a Responses
    /// `namespace` tool (as Codex offers MCP tools) included.
    pub fn tool_names(&self) -> Vec<&str> {
        match self {
            Self::Anthropic(request) => request
                .tools
                .iter()
                .flatten()
                .map(|tool| tool.name.as_str())
                .collect(),
            Self::OpenAi(request) => request.tool_names().collect(),
            Self::Responses(request) => request.tool_names().collect(),
        }
    }

    /// Whether the call offers the model `tool`, under its own name or the name a host gives
    /// an MCP server's tool ([`names_tool`]).
    pub fn offers_tool(&self, tool: &str) -> bool {
        self.tool_names()
            .into_iter()
            .any(|listed| names_tool(listed, tool))
    }

    /// Whether the call's tools already include ours (from our MCP server), so the proxy
    /// does not add them again.
    pub fn offers_our_tools(&self) -> bool {
        offers_ours(self.tool_names().into_iter())
    }

    /// Each tool definition as the JSON the provider renders into the prompt.
    pub fn tool_definitions(&self) -> Vec<String> {
        match self {
            Self::Anthropic(request) => request
                .tools
                .iter()
                .flatten()
                .map(|tool| {
                    let mut definition = tool.rest.clone();
                    definition.insert("name".to_owned(), Value::from(tool.name.clone()));
                    Value::Object(definition).to_string()
                })
                .collect(),
            Self::OpenAi(request) => request
                .tools
                .iter()
                .flatten()
                .map(|tool| serde_json::to_string(&*tool.raw).unwrap_or_default())
                .collect(),
            Self::Responses(request) => request
                .tools
                .iter()
                .flatten()
                .map(|tool| serde_json::to_string(&*tool.raw).unwrap_or_default())
                .collect(),
        }
    }

    /// Texts where a client states its environment: the system prompt's blocks.
    pub fn system_texts(&self) -> Vec<&str> {
        match self {
            Self::Anthropic(request) => match &request.system {
                Some(BlockContent::Text(text)) => vec![text.as_str()],
                Some(BlockContent::Blocks(blocks)) => blocks
                    .iter()
                    .filter_map(|block| match block {
                        ContentBlock::Text(text) => Some(text.text.as_str()),
                        _ => None,
                    })
                    .collect(),
                None => Vec::new(),
            },
            Self::OpenAi(request) => request.instruction_texts(),
            Self::Responses(request) => request.instruction_texts(),
        }
    }

    /// The upstream body for a pass ([`render_anthropic::render`],
    /// [`encoded_chat::render`]). A streamed OpenAI request is sent asking for the usage
    /// chunk; when the client did not ask for it, the returned flag says to remove it from
    /// the client's stream.
    ///
    /// `previous` is the encoded conversation of the session's previous request, reused
    /// where it is the same; the returned one is for its next. `layout` locates the
    /// request's messages in the client body.
    pub fn render(
        self,
        outcome: &PassOutcome,
        window: Option<u64>,
        input_hint: Option<u64>,
        previous: Option<EncodedList>,
        layout: Option<&BodyLayout>,
        heads: &EncodedHeads,
    ) -> Rendered {
        match self {
            Self::Anthropic(request) => {
                let previous = previous.and_then(EncodedList::into_anthropic);
                let (body, encoded) = render_anthropic::render(
                    &request, outcome, previous, heads, window, input_hint,
                );
                Rendered {
                    body,
                    hide_usage_chunk: false,
                    encoded: Some(EncodedList::Anthropic(encoded)),
                    client_messages: None,
                }
            }
            Self::OpenAi(request) => {
                let previous = previous.and_then(EncodedList::into_chat);
                let layout = match layout {
                    Some(BodyLayout::Chat(layout)) => Some(layout),
                    _ => None,
                };
                let rendered = encoded_chat::render(request, &outcome.messages, layout, previous);
                Rendered {
                    body: rendered.body,
                    hide_usage_chunk: rendered.added_usage,
                    encoded: rendered.encoded.map(EncodedList::Chat),
                    client_messages: Some(ClientMessages::Chat(rendered.client_messages)),
                }
            }
            // Responses streams always end with their usage: nothing to ask for or hide.
            Self::Responses(request) => {
                let previous = previous.and_then(EncodedList::into_responses);
                let layout = match layout {
                    Some(BodyLayout::Responses(layout)) => Some(layout),
                    _ => None,
                };
                let rendered =
                    encoded_responses::render(request, &outcome.messages, layout, previous);
                Rendered {
                    body: rendered.body,
                    hide_usage_chunk: false,
                    encoded: rendered.encoded.map(EncodedList::Responses),
                    client_messages: Some(ClientMessages::Responses(rendered.client_items)),
                }
            }
        }
    }
}

impl ClientRequest {
    /// The client's messages on its wire, as the session's next request is decoded by
    /// (none for Anthropic, whose layout holds what its decode needs). For a call sent up
    /// without rendering (compaction off), as a rendering would have returned them.
    pub fn into_client_messages(self) -> Option<ClientMessages> {
        match self {
            Self::Anthropic(_) => None,
            Self::OpenAi(request) => Some(ClientMessages::Chat(request.messages)),
            Self::Responses(request) => Some(ClientMessages::Responses(match request.input {
                Some(Input::Items(items)) => items,
                Some(Input::Text(_)) | None => Vec::new(),
            })),
        }
    }
}

/// An upstream body and what the response path must know about it.
#[derive(Debug)]
pub struct Rendered {
    /// The request body.
    pub body: ChunkedBody,
    /// The proxy asked for an OpenAI usage chunk the client did not ask for.
    pub hide_usage_chunk: bool,
    /// The encoded conversation, for the session's next request (Anthropic and Chat).
    pub encoded: Option<EncodedList>,
    /// The client's messages, as it sent them, for its next request (Chat and Responses).
    pub client_messages: Option<ClientMessages>,
}

/// A client's messages as it sent them, on its wire.
#[derive(Debug)]
pub enum ClientMessages {
    /// Chat Completions messages.
    Chat(Vec<ChatMessage>),
    /// Responses items.
    Responses(Vec<Item>),
}

/// Texts of the first message of a conversation (Claude Code puts its environment there).
pub fn first_message_texts(conversation: &[Message]) -> impl Iterator<Item = &str> {
    conversation.first().into_iter().flat_map(Message::texts)
}
