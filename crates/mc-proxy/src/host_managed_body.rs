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

use crate::chunked_body::ChunkedBody;
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
///
/// `open` is where the list opens as the decode found it: then the client's bytes are
/// shared, not copied, and not read again (a long session's body is megabytes, and this
/// runs on every call). Without it the body is parsed to find the list.
pub fn splice_head(
    provider: Provider,
    body: &ChunkedBody,
    open: Option<usize>,
    head: &[Arc<Message>],
) -> Option<ChunkedBody> {
    let open = match open {
        Some(open) if body.get(open..open + 1).as_deref() == Some(b"[") => open,
        _ => list_open(provider, &body.to_bytes())?,
    };
    let after = body.slice(open + 1..body.len())?;
    let mut entries = encoded_head(provider, head)?;
    if !list_is_empty(&after) {
        entries.push(b',');
    }
    let mut spliced = body.slice(0..open + 1)?;
    spliced.push(Bytes::from(entries));
    spliced.append(after);
    Some(spliced.bounded())
}

/// Where the message list (Responses: the input list) of `body` opens, by parsing it;
/// `None` when there is no such list (a Responses `input` given as a string, a duplicated key).
fn list_open(provider: Provider, body: &[u8]) -> Option<usize> {
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
    (list.as_ptr() as usize).checked_sub(body.as_ptr() as usize)
}

/// Whether the bytes after a list's `[` close it at once.
fn list_is_empty(after: &ChunkedBody) -> bool {
    after
        .chunks()
        .iter()
        .flat_map(|chunk| chunk.iter())
        .find(|byte| !byte.is_ascii_whitespace())
        == Some(&b']')
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

    /// `body` spliced as the pass finds its list (parsed), as text.
    fn spliced(provider: Provider, body: &[u8]) -> Option<String> {
        let body = ChunkedBody::from(body.to_vec());
        let spliced = splice_head(provider, &body, None, &head())?;
        Some(String::from_utf8(spliced.to_bytes().to_vec()).unwrap())
    }

    #[test]
    fn the_head_goes_first_and_every_other_byte_stays() {
        let body = br#"{"model":"m",  "messages": [ {"role":"user","content":"hi \u00e9", "x": 2.50}],"stream":true}"#;
        let expected = concat!(
            r#"{"model":"m",  "messages": [{"role":"user","content":[{"type":"text","text":"<m0>"}]},"#,
            r#"{"role":"user","content":[{"type":"text","text":"<m1>"}]}, {"role":"user","content":"hi \u00e9", "x": 2.50}],"stream":true}"#
        );
        assert_eq!(spliced(Provider::Anthropic, body).unwrap(), expected);
    }

    #[test]
    fn responses_input_and_chat_messages_take_the_head_too() {
        let responses = spliced(Provider::OpenAiResponses, br#"{"input":[],"model":"m"}"#);
        let value: serde_json::Value = serde_json::from_str(&responses.unwrap()).unwrap();
        assert_eq!(value["input"].as_array().unwrap().len(), 2, "{value}");
        let chat = spliced(
            Provider::OpenAi,
            br#"{"messages":[{"role":"user","content":"go"}]}"#,
        );
        let value: serde_json::Value = serde_json::from_str(&chat.unwrap()).unwrap();
        assert_eq!(
            value["messages"][2],
            serde_json::json!({"role":"user","content":"go"})
        );
        assert_eq!(value["messages"][0]["role"], "user");
    }

    #[test]
    fn a_list_that_cannot_be_found_is_left_to_the_usual_rendering() {
        let string_input = br#"{"input":"just text","model":"m"}"#;
        assert_eq!(spliced(Provider::OpenAiResponses, string_input), None);
        let twice = br#"{"messages":[],"messages":[]}"#;
        assert_eq!(spliced(Provider::Anthropic, twice), None);
    }

    #[test]
    fn a_known_list_start_shares_the_clients_bytes_however_they_are_cut() {
        let body: &[u8] = br#"{"model":"m","messages":[{"role":"user","content":"one"},{"role":"assistant","content":"two"}],"stream":true}"#;
        let open = body.iter().position(|&byte| byte == b'[').unwrap();
        let whole = spliced(Provider::Anthropic, body).unwrap();
        for cut in 1..body.len() {
            let mut chunked = ChunkedBody::new();
            chunked.push(Bytes::copy_from_slice(&body[..cut]));
            chunked.push(Bytes::copy_from_slice(&body[cut..]));
            let known = splice_head(Provider::Anthropic, &chunked, Some(open), &head()).unwrap();
            assert_eq!(known.to_bytes(), whole.as_bytes(), "cut at {cut}");
            let first = &known.chunks()[0];
            assert_eq!(
                first.as_ptr(),
                chunked.chunks()[0].as_ptr(),
                "the client's first bytes are shared, not copied (cut at {cut})"
            );
        }
    }

    #[test]
    fn a_known_start_that_is_not_the_list_is_not_trusted() {
        let body: &[u8] = br#"{"model":"m","messages":[{"role":"user","content":"[x]"}]}"#;
        let whole = spliced(Provider::Anthropic, body).unwrap();
        let chunked = ChunkedBody::from(body.to_vec());
        for wrong in [0, 5, body.len() - 1, body.len() + 10] {
            let spliced = splice_head(Provider::Anthropic, &chunked, Some(wrong), &head()).unwrap();
            assert_eq!(spliced.to_bytes(), whole.as_bytes(), "claimed {wrong}");
        }
    }
}
