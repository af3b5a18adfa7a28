//! Preparing a follow-up Chat Completions request by its new messages only
//! ([`crate::list_walks`]), as [`super::recent_walks`] does for Anthropic.
//!
//! Made ready whole, a Chat request cost what its conversation costs on every call: decoded,
//! copied to be remembered, walked message by message with a store lookup per answer,
//! converted and hashed again, copied for the pass, and the result encoded again for it.
//! Each client message is one step of the walk; a follow-up keeps the steps of the messages
//! it shares. The prepared body is byte for byte what the whole preparation
//! (`super::chat::splice_whole`) encodes, and the pass decodes it as it decodes any
//! follow-up ([`crate::chat_incremental`]).
//!
//! As on Anthropic, an exchange put back is read again on every follow-up and must still be
//! stored unchanged, and an exchange stored later at an anchor a walk looked up in vain
//! forgets that walk ([`ChatWalks::forget_anchor`]).

use std::ops::Range;

use mc_core::Message;
use mc_store::{ReadTx, StoreError};
use mc_wire::openai::{self, ChatMessage, ChatRequest, ChatRole};

use crate::answer_key::is_answer;
use crate::chat_exchange::{ChatSplice, WIRE, add_chat_tools, guidance_message};
use crate::list_walks::{ListHead, ListWalk, ListWalks, ListWire};
use crate::splice::{Point, Used, stored};
use crate::walk_steps::{Progress, StepMark, encode};
use mc_engine::tools::Offer;
use mc_wire::list_split::{Split, decode_alone};

/// Recent Chat walks.
pub type ChatWalks = ListWalks<ChatWire>;
/// A Chat request outside its conversation.
pub type ChatHead = ListHead<ChatRequest>;

/// The Chat Completions wire, as the walk sees it.
#[derive(Debug)]
pub struct ChatWire;

/// The walk's state after one client message of the conversation (after the instructions).
#[derive(Debug, Clone)]
pub struct ChatStep {
    point: Point,
    progress: Progress,
}

impl StepMark for ChatStep {
    fn progress(&self) -> Progress {
        self.progress
    }
}

impl ListWire for ChatWire {
    const WIRE: &'static str = WIRE;
    type Request = ChatRequest;
    type Entry = ChatMessage;
    type Splice = ChatSplice;
    type Step = ChatStep;

    fn scan(body: &[u8]) -> Option<Split> {
        Split::scan(body)
    }

    fn decode(body: &[u8]) -> Option<(ChatRequest, Vec<ChatMessage>)> {
        let mut request = ChatRequest::decode(body, usize::MAX).ok()?;
        let messages = std::mem::take(&mut request.messages);
        Some((request, messages))
    }

    fn decode_entry(bytes: &[u8]) -> Option<ChatMessage> {
        decode_alone(bytes, ChatMessage::decode)
    }

    fn head(mut request: ChatRequest, messages: &[ChatMessage], offer: Offer) -> Option<ChatHead> {
        let instructions = messages.iter().take_while(|m| m.is_instruction()).count();
        let mut client = request.clone();
        client.messages = messages.get(..instructions)?.to_vec();
        add_chat_tools(&mut request, offer);
        let around = request.encode_around_messages();
        let leading = client
            .messages
            .iter()
            .chain(std::iter::once(&guidance_message(offer)))
            .map(encode)
            .collect::<Option<Vec<_>>>()?;
        Some(ListHead::new(
            client,
            instructions,
            request,
            around,
            leading,
        ))
    }

    /// Every message is one step: a follow-up keeps the steps of the messages it shares.
    fn kept_steps(_: &[ChatStep], shared: usize) -> usize {
        shared
    }

    fn walked(steps: &[ChatStep]) -> usize {
        steps.len()
    }

    fn point(step: &ChatStep) -> &Point {
        &step.point
    }

    fn walk_entries(
        walk: &mut ListWalk<Self>,
        tx: &ReadTx<'_>,
        point: &mut Point,
        messages: Vec<ChatMessage>,
        _walked: usize,
        used: &mut Used,
    ) -> Result<Option<()>, StoreError> {
        for message in messages {
            if pass(walk, tx, point, message, used)?.is_none() {
                return Ok(None);
            }
            let progress = walk.progress();
            walk.steps.push(ChatStep {
                point: point.clone(),
                progress,
            });
        }
        Ok(Some(()))
    }

    fn first_entries(body: &[u8], ranges: &[Range<usize>]) -> Option<Vec<ChatMessage>> {
        let bytes = body.get(ranges.first()?.clone())?;
        Some(vec![decode_alone(bytes, ChatMessage::decode)?])
    }

    fn first_message(messages: &[ChatMessage]) -> Option<Message> {
        openai::to_message(messages.first()?).ok()
    }
}

/// Moves the walk past one client message, as the whole preparation does; `None` when a
/// message does not convert or encode (the whole preparation then decides).
fn pass(
    walk: &mut ListWalk<ChatWire>,
    tx: &ReadTx<'_>,
    point: &mut Point,
    mut message: ChatMessage,
    used: &mut Used,
) -> Result<Option<()>, StoreError> {
    let Ok(mut converted) = openai::to_message(&message) else {
        return Ok(None);
    };
    let mut after = Vec::new();
    if message.role == ChatRole::Assistant {
        let anchor = point.anchor();
        match stored::<ChatSplice>(tx, &anchor)? {
            Some(found) if is_answer(&found.splice.client_answer, &converted) => {
                used.note(&found);
                walk.found.put_back(anchor, found.splice.clone());
                let splice = found.splice;
                for hidden in &splice.before {
                    if push(walk, point, hidden, None).is_none() {
                        return Ok(None);
                    }
                }
                if let Some(full) = splice.full_answer {
                    let Ok(full_converted) = openai::to_message(&full) else {
                        return Ok(None);
                    };
                    (message, converted) = (full, full_converted);
                }
                after = splice.results;
            }
            Some(_) | None => walk.found.missed(anchor),
        }
    }
    if push(walk, point, &message, Some(converted)).is_none() {
        return Ok(None);
    }
    for result in &after {
        if push(walk, point, result, None).is_none() {
            return Ok(None);
        }
    }
    Ok(Some(()))
}

/// Appends `message` (`converted`, its neutral form, when known) and moves the point past
/// it.
fn push(
    walk: &mut ListWalk<ChatWire>,
    point: &mut Point,
    message: &ChatMessage,
    converted: Option<Message>,
) -> Option<()> {
    let converted = match converted {
        Some(converted) => converted,
        None => openai::to_message(message).ok()?,
    };
    point.pass(&converted.content_hash());
    walk.out.push(encode(message)?);
    Some(())
}

#[cfg(test)]
#[path = "chat_walks_tests.rs"]
mod tests;
