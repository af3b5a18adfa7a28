//! The upstream body of a session whose window the host manages (compaction off): the
//! client's own body, byte for byte, with the engine's head spliced in at the start of its
//! message list.
//!
//! Rendering such a call like any other would re-encode every message through the neutral
//! model, which drops what the model does not carry: the client's cache markers, a bare
//! string content, `"is_error": false`, the client's spelling of a number or an escape. The
//! host compacts by its own numbers and keeps its own cache markers, so anything but its
//! own bytes would work against it. Its markers also cache the head: the head sits before
//! every marker the client placed in its messages, and it changes only when the cache is
//! dead anyway. A body whose list cannot be found this way (a Responses `input` given as a
//! string, a duplicated key) is rendered as usual from the pass's messages, which with
//! compaction off are the client's messages unchanged.

use std::sync::Arc;

use bytes::Bytes;
use mc_core::Message;
use mc_wire::{anthropic, openai, responses};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::provider::Provider;

/// The message list of an Anthropic or Chat body.
#[derive(Deserialize)]
struct MessageList<'a> {
    #[serde(borrow)]
    messages: &'a RawValue,
}

/// The input list of a Responses body.
#[derive(Deserialize)]
struct InputList<'a> {
    #[serde(borrow)]
    input: &'a RawValue,
}

/// `body` with `head` (the pass's `m[0]` and `m[1]`) as the first entries of its message
/// list, everything else as the client sent it; `None` when the list is not found.
pub fn splice_head(provider: Provider, body: &[u8], head: &[Arc<Message>]) -> Option<Bytes> {
    let list = match provider {
        Provider::Anthropic | Provider::OpenAi => {
            serde_json::from_slice::<MessageList<'_>>(body)
                .ok()?
                .messages
        }
        Provider::OpenAiResponses => serde_json::from_slice::<InputList<'_>>(body).ok()?.input,
    };
    let list = list.get().as_bytes();
    if list.first() != Some(&b'[') {
        return None;
    }
    let open = (list.as_ptr() as usize).checked_sub(body.as_ptr() as usize)?;
    let entries = encoded_head(provider, head)?;
    let empty = list[1..]
        .iter()
        .find(|byte| !byte.is_ascii_whitespace())
        .is_some_and(|&byte| byte == b']');
    let mut spliced = Vec::with_capacity(body.len() + entries.len() + 1);
    spliced.extend_from_slice(&body[..=open]);
    spliced.extend_from_slice(&entries);
    if !empty {
        spliced.push(b',');
    }
    spliced.extend_from_slice(&body[open + 1..]);
    Some(Bytes::from(spliced))
}

/// The head's messages as the wire writes them, comma-separated.
fn encoded_head(provider: Provider, head: &[Arc<Message>]) -> Option<Vec<u8>> {
    let encoded: Vec<Vec<u8>> = match provider {
        Provider::Anthropic => head
            .iter()
            .map(|message| serde_json::to_vec(&anthropic::from_message(message)))
            .collect::<Result<_, _>>()
            .ok()?,
        Provider::OpenAi => head
            .iter()
            .flat_map(|message| openai::from_message(message))
            .map(|message| serde_json::to_vec(&message))
            .collect::<Result<_, _>>()
            .ok()?,
        Provider::OpenAiResponses => {
            responses::from_conversation(head.iter().map(|message| &**message), |_| false)
                .iter()
                .map(serde_json::to_vec)
                .collect::<Result<_, _>>()
                .ok()?
        }
    };
    Some(encoded.join(&b","[..]))
}

#[cfg(test)]
mod tests {
    use mc_core::{Part, Role};

    use super::*;

    fn head() -> Vec<Arc<Message>> {
        ["<m0>", "<m1>"]
            .into_iter()
            .map(|text| Arc::new(Message::new(Role::User, vec![Part::text(text)])))
            .collect()
    }

    #[test]
    fn the_head_goes_first_and_every_other_byte_stays() {
        let body = br#"{"model":"m",  "messages": [ {"role":"user","content":"hi \u00e9", "x": 2.50}],"stream":true}"#;
        let spliced = splice_head(Provider::Anthropic, body, &head()).unwrap();
        let expected = concat!(
            r#"{"model":"m",  "messages": [{"role":"user","content":[{"type":"text","text":"<m0>"}]},"#,
            r#"{"role":"user","content":[{"type":"text","text":"<m1>"}]}, {"role":"user","content":"hi \u00e9", "x": 2.50}],"stream":true}"#
        );
        assert_eq!(std::str::from_utf8(&spliced).unwrap(), expected);
    }

    #[test]
    fn responses_input_and_chat_messages_take_the_head_too() {
        let responses = br#"{"input":[],"model":"m"}"#;
        let spliced = splice_head(Provider::OpenAiResponses, responses, &head()).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&spliced).unwrap();
        assert_eq!(value["input"].as_array().unwrap().len(), 2, "{value}");
        let chat = br#"{"messages":[{"role":"user","content":"go"}]}"#;
        let spliced = splice_head(Provider::OpenAi, chat, &head()).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&spliced).unwrap();
        assert_eq!(
            value["messages"][2],
            serde_json::json!({"role":"user","content":"go"})
        );
        assert_eq!(value["messages"][0]["role"], "user");
    }

    #[test]
    fn a_list_that_cannot_be_found_is_left_to_the_usual_rendering() {
        let string_input = br#"{"input":"just text","model":"m"}"#;
        assert_eq!(
            splice_head(Provider::OpenAiResponses, string_input, &head()),
            None
        );
        let twice = br#"{"messages":[],"messages":[]}"#;
        assert_eq!(splice_head(Provider::Anthropic, twice, &head()), None);
    }
}
