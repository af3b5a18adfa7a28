//! Decoding a follow-up Anthropic request by its new messages only.
//!
//! Clients resend the whole conversation on every call, and decoding, converting and hashing
//! it was most of a managed call's cost on long sessions. A follow-up repeats the previous
//! request's messages byte for byte, except the few whose `cache_control` marker moved and
//! the new ones. So the body is split at its message boundaries without building values
//! (a borrowed scan), each message's raw bytes are compared with the previous request's, and
//! only messages that differ are decoded and hashed; the rest of the request (model, system,
//! tools, parameters) is decoded from the body with its message list cut out. Equal bytes
//! decode to equal messages, so the result is the same as a full decode; anything unusual
//! (a syntax error, a message that does not decode, an empty list) takes the full decode,
//! whose error messages name the exact place.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::{Mutex, PoisonError};

use bytes::Bytes;
use mc_core::breakpoints::CacheTtlChoice;
use mc_core::{HashChain, Message};
use mc_wire::WireError;
use mc_wire::anthropic::{self, MessagesRequest};
use serde_json::value::RawValue;

use crate::render_anthropic;

/// Requests remembered; a proxy serves a handful of live conversations at a time.
const REMEMBERED: usize = 16;

/// Most body bytes remembered in all (each request's decoded conversation takes about as
/// much again): long sessions send multi-megabyte bodies.
const REMEMBERED_BYTES: usize = 96 * 1024 * 1024;

/// A request's message list, located in its body.
#[derive(serde::Deserialize)]
struct Messages<'a> {
    #[serde(borrow)]
    messages: Vec<&'a RawValue>,
}

/// A decoded request, and what the next request of its conversation can reuse.
#[derive(Debug)]
pub struct Decoded {
    /// The request with its message list emptied.
    pub request: MessagesRequest,
    /// The conversation in the neutral model.
    pub conversation: Vec<Message>,
    /// Its hash chain.
    pub chain: HashChain,
    /// The client's cache TTL choice, from every marker it sent.
    pub client_ttl: CacheTtlChoice,
    /// The body and where each message lies in it, for [`RecentRequests::remember`].
    pub layout: Layout,
}

/// Where a body's messages lie, and which of them carry a client 1-hour marker.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    body: Bytes,
    ranges: Vec<Range<usize>>,
    one_hour: Vec<bool>,
}

impl Layout {
    fn message(&self, index: usize) -> Option<&[u8]> {
        self.body.get(self.ranges.get(index)?.clone())
    }
}

/// A remembered request.
#[derive(Debug)]
struct Entry {
    layout: Layout,
    conversation: Vec<Message>,
    chain: HashChain,
}

/// Recently managed Anthropic requests, most recent last.
#[derive(Debug, Default)]
pub struct RecentRequests {
    recent: Mutex<VecDeque<Entry>>,
}

impl RecentRequests {
    /// Decodes `body`, reusing what it shares with a remembered request of its conversation.
    pub fn decode(&self, body: &Bytes, limit_bytes: usize) -> Result<Decoded, WireError> {
        match self.decode_incrementally(body, limit_bytes) {
            Some(decoded) => Ok(decoded),
            None => full_decode(body, limit_bytes),
        }
    }

    /// Remembers a managed request for the next one of its conversation.
    pub fn remember(&self, layout: Layout, conversation: Vec<Message>, chain: HashChain) {
        if layout.ranges.is_empty()
            || layout.ranges.len() != conversation.len()
            || chain.len() != conversation.len()
        {
            return;
        }
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        recent.push_back(Entry {
            layout,
            conversation,
            chain,
        });
        let mut bytes: usize = recent.iter().map(|entry| entry.layout.body.len()).sum();
        while recent.len() > REMEMBERED || (bytes > REMEMBERED_BYTES && recent.len() > 1) {
            if let Some(evicted) = recent.pop_front() {
                bytes -= evicted.layout.body.len();
            }
        }
    }

    fn decode_incrementally(&self, body: &Bytes, limit_bytes: usize) -> Option<Decoded> {
        if body.len() > limit_bytes {
            return None;
        }
        let raw: Messages<'_> = serde_json::from_slice(body).ok()?;
        let ranges = raw
            .messages
            .iter()
            .map(|message| range_in(body, message.get().as_bytes()))
            .collect::<Option<Vec<_>>>()?;
        let (first, last) = (ranges.first()?.start, ranges.last()?.end);
        let open = body[..first].iter().rposition(|&b| b == b'[')?;
        let close = last + body[last..].iter().position(|&b| b == b']')?;
        let mut rest = Vec::with_capacity(body.len() - (close - open));
        rest.extend_from_slice(&body[..=open]);
        rest.extend_from_slice(&body[close..]);
        let request = MessagesRequest::decode(&rest, limit_bytes).ok()?;
        let mut layout = Layout {
            body: body.clone(),
            ranges,
            one_hour: Vec::new(),
        };

        let mut entry = self.take_best(&layout);
        let shared = entry
            .as_ref()
            .map_or(0, |entry| shared_prefix(&entry.layout, &layout));
        let (mut conversation, mut chain, mut one_hour) = match entry.take() {
            Some(mut entry) => {
                entry.conversation.truncate(shared);
                entry.chain.truncate(shared);
                entry.layout.one_hour.truncate(shared);
                (entry.conversation, entry.chain, entry.layout.one_hour)
            }
            None => (Vec::new(), HashChain::default(), Vec::new()),
        };
        for index in shared..layout.ranges.len() {
            let wire: anthropic::Message = serde_json::from_slice(layout.message(index)?).ok()?;
            one_hour.push(render_anthropic::uses_one_hour(&wire));
            let message = anthropic::into_message(wire);
            chain.push(message.content_hash());
            conversation.push(message);
        }
        let system_ttl = render_anthropic::client_ttl(&request);
        let client_ttl = if system_ttl == CacheTtlChoice::OneHour || one_hour.contains(&true) {
            CacheTtlChoice::OneHour
        } else {
            CacheTtlChoice::Default
        };
        layout.one_hour = one_hour;
        Some(Decoded {
            request,
            conversation,
            chain,
            client_ttl,
            layout,
        })
    }

    /// Takes out the remembered request sharing the longest message prefix with `layout`.
    fn take_best(&self, layout: &Layout) -> Option<Entry> {
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        let first = layout.message(0)?;
        let best = recent
            .iter()
            .enumerate()
            .filter(|(_, entry)| entry.layout.message(0) == Some(first))
            .map(|(position, entry)| (shared_prefix(&entry.layout, layout), position))
            .max()?;
        recent.remove(best.1)
    }
}

/// A full decode: the request, its conversation and chain, and its layout left empty (a
/// request that needed it is not remembered).
fn full_decode(body: &Bytes, limit_bytes: usize) -> Result<Decoded, WireError> {
    let mut request = MessagesRequest::decode(body, limit_bytes)?;
    let client_ttl = render_anthropic::client_ttl(&request);
    let conversation = anthropic::into_conversation(std::mem::take(&mut request.messages));
    let chain = HashChain::of(&conversation);
    Ok(Decoded {
        request,
        conversation,
        chain,
        client_ttl,
        layout: Layout::default(),
    })
}

/// Where `part` (a slice of `body`) lies in `body`.
fn range_in(body: &[u8], part: &[u8]) -> Option<Range<usize>> {
    let start = (part.as_ptr() as usize).checked_sub(body.as_ptr() as usize)?;
    let end = start.checked_add(part.len())?;
    (end <= body.len()).then_some(start..end)
}

/// How many leading messages two bodies share byte for byte.
fn shared_prefix(a: &Layout, b: &Layout) -> usize {
    (0..a.ranges.len().min(b.ranges.len()))
        .take_while(|&index| a.message(index) == b.message(index))
        .count()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn body(messages: &[Value], one_hour_on_system: bool) -> Bytes {
        let mut system = json!({"type": "text", "text": "You are careful."});
        if one_hour_on_system {
            system["cache_control"] = json!({"type": "ephemeral", "ttl": "1h"});
        }
        Bytes::from(
            json!({"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": [system],
                "messages": messages, "stream": true, "metadata": {"user_id": "u"}})
            .to_string(),
        )
    }

    fn turn(n: usize) -> Vec<Value> {
        vec![
            json!({"role": "assistant", "content": [
                {"type": "text", "text": format!("step {n}")},
                {"type": "tool_use", "id": format!("t{n}"), "name": "Bash", "input": {"command": format!("ls {n}")}}]}),
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": format!("t{n}"), "content": format!("out {n}")}]}),
        ]
    }

    fn assert_same_as_full(decoded: &Decoded, body: &Bytes) {
        let full = full_decode(body, usize::MAX).unwrap();
        assert_eq!(decoded.request, full.request);
        assert_eq!(decoded.conversation, full.conversation);
        assert_eq!(decoded.chain, full.chain);
        assert_eq!(decoded.client_ttl, full.client_ttl);
    }

    #[test]
    fn follow_ups_decode_as_a_full_decode_does() {
        let recent = RecentRequests::default();
        let mut messages = vec![json!({"role": "user", "content": "fix the bug"})];
        for n in 0..6 {
            messages.extend(turn(n));
            // The client moves its marker to the newest message each turn.
            let mut sent = messages.clone();
            if let Some(last) = sent.last_mut() {
                last["content"][0]["cache_control"] = json!({"type": "ephemeral"});
            }
            let body = body(&sent, false);
            let decoded = recent.decode(&body, usize::MAX).unwrap();
            assert_same_as_full(&decoded, &body);
            assert_eq!(decoded.layout.ranges.len(), sent.len());
            recent.remember(decoded.layout, decoded.conversation, decoded.chain);
        }
        // An edit of an early message, and a one-hour marker in the middle.
        let mut edited = messages.clone();
        edited[1]["content"][0]["text"] = json!("another step");
        edited[3]["content"][0]["cache_control"] = json!({"type": "ephemeral", "ttl": "1h"});
        let body = body(&edited, false);
        let decoded = recent.decode(&body, usize::MAX).unwrap();
        assert_same_as_full(&decoded, &body);
        assert_eq!(
            decoded.layout.ranges.len(),
            edited.len(),
            "decoded incrementally"
        );
        assert_eq!(decoded.client_ttl, CacheTtlChoice::OneHour);
        let system_hour = self::body(&messages, true);
        let decoded = recent.decode(&system_hour, usize::MAX).unwrap();
        assert_same_as_full(&decoded, &system_hour);
        assert_eq!(decoded.client_ttl, CacheTtlChoice::OneHour);
    }

    #[test]
    fn odd_bodies_take_the_full_decode_and_its_errors() {
        let recent = RecentRequests::default();
        let empty = body(&[], false);
        let decoded = recent.decode(&empty, usize::MAX).unwrap();
        assert_same_as_full(&decoded, &empty);
        let bad_message = Bytes::from_static(
            br#"{"model":"m","max_tokens":1,"messages":[{"role":"robot","content":"x"}]}"#,
        );
        let error = recent.decode(&bad_message, usize::MAX).unwrap_err();
        assert_eq!(error, full_decode(&bad_message, usize::MAX).unwrap_err());
        let syntax = Bytes::from_static(br#"{"model":"m","messages":[{"role":"user""#);
        let error = recent.decode(&syntax, usize::MAX).unwrap_err();
        assert_eq!(error, full_decode(&syntax, usize::MAX).unwrap_err());
        let spaced = Bytes::from_static(
            b"{ \"model\" : \"m\" , \"messages\" : [ {\"role\":\"user\",\"content\":\"hi\"} ] , \"max_tokens\" : 5 }",
        );
        let decoded = recent.decode(&spaced, usize::MAX).unwrap();
        assert_same_as_full(&decoded, &spaced);
        assert_eq!(
            decoded.request.encode(),
            full_decode(&spaced, usize::MAX).unwrap().request.encode()
        );
    }
}
