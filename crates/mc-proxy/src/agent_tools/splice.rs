//! Storing the exchanges the client did not see, and putting them back.
//!
//! An exchange is anchored at the point of the conversation where the model's answer
//! began: the anchor hashes the project and the content-hash chain of every message before
//! it, as the upstream received them (spliced ones included), so the same point of the same
//! conversation always has the same anchor, whatever cache markers or session ids the client
//! sends. A splice applies only when the client's next message there is the answer the client
//! was given (its content hash is stored too): a client that rewound and got another answer
//! does not get this one's calls.

use mc_core::{ContentHash, HashChain, ProjectId};
use mc_store::{ReadTx, StoreError};
use mc_wire::anthropic::{self, BlockContent, MessageRole};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// One stored exchange, put back when a later request passes its anchor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Splice {
    /// The rounds the client never saw: the model's turns that called only our tools, each
    /// followed by the user turn with their results. Inserted before the answer.
    pub before: Vec<anthropic::Message>,
    /// The answer as the model gave it, when the client got it otherwise (without our
    /// calls, or after the text of the hidden rounds, which a live stream showed); it
    /// replaces the client's copy.
    pub full_answer: Option<anthropic::Message>,
    /// The content hash (hex) of the answer as the client got it.
    pub client_answer: String,
    /// The results of our calls in the answer, a user turn whose blocks go before the
    /// client's own results in its next message.
    pub results: Option<anthropic::Message>,
}

/// Where a conversation stands while it is walked: its last chain link.
#[derive(Debug, Clone)]
pub struct Point {
    wire: &'static str,
    project: Option<ProjectId>,
    link: Option<ContentHash>,
}

impl Point {
    /// The start of a conversation of `project` on `wire` (whose splices differ in shape).
    pub fn start(wire: &'static str, project: Option<ProjectId>) -> Self {
        Self {
            wire,
            project,
            link: None,
        }
    }

    /// Moves past a message of this content hash.
    pub fn pass(&mut self, hash: &ContentHash) {
        self.link = Some(HashChain::next_link(self.link.as_ref(), hash));
    }

    /// The anchor of an answer given here.
    pub fn anchor(&self) -> String {
        let mut hasher = blake3::Hasher::new();
        hasher.update(b"mc-hidden-v1\0");
        hasher.update(self.wire.as_bytes());
        hasher.update(b"\0");
        hasher.update(
            self.project
                .as_ref()
                .map_or("", ProjectId::as_str)
                .as_bytes(),
        );
        hasher.update(b"\0");
        hasher.update(
            self.link
                .as_ref()
                .map_or(&[0; 32], ContentHash::as_bytes)
                .as_slice(),
        );
        hasher.finalize().to_hex().to_string()
    }
}

/// A message's content hash in the neutral model: blind to cache markers.
pub fn message_hash(message: &anthropic::Message) -> ContentHash {
    anthropic::to_message(message).content_hash()
}

/// `messages` with every stored exchange put back, and where the conversation then stands.
/// A splice that cannot be read is skipped with a warning: the request still goes, as the
/// client sent it, and the engine forks if it no longer matches the stored history.
pub fn splice_in(
    tx: &ReadTx<'_>,
    project: Option<ProjectId>,
    messages: Vec<anthropic::Message>,
) -> Result<(Vec<anthropic::Message>, Point), StoreError> {
    let mut point = Point::start("anthropic", project);
    let mut out = Vec::with_capacity(messages.len());
    let mut pending: Option<anthropic::Message> = None;
    for mut message in messages {
        if let Some(results) = pending.take() {
            if message.role == MessageRole::User {
                message = with_results_first(results, message);
            } else {
                point.pass(&message_hash(&results));
                out.push(results);
            }
        }
        if message.role == MessageRole::Assistant
            && let Some(splice) = stored::<Splice>(tx, &point.anchor())?
            && splice.client_answer == message_hash(&message).to_string()
        {
            for hidden in splice.before {
                point.pass(&message_hash(&hidden));
                out.push(hidden);
            }
            if let Some(full) = splice.full_answer {
                message = full;
            }
            pending = splice.results;
        }
        point.pass(&message_hash(&message));
        out.push(message);
    }
    // The client ended on the answer itself: our results still follow it.
    if let Some(results) = pending {
        point.pass(&message_hash(&results));
        out.push(results);
    }
    Ok((out, point))
}

/// The splice stored under `anchor`, when there is one this wire can read.
pub fn stored<T: DeserializeOwned>(tx: &ReadTx<'_>, anchor: &str) -> Result<Option<T>, StoreError> {
    let Some(text) = tx.hidden_exchange(anchor)? else {
        return Ok(None);
    };
    match serde_json::from_str(&text) {
        Ok(splice) => Ok(Some(splice)),
        Err(error) => {
            tracing::warn!(%error, anchor, "a stored hidden exchange is unreadable; not spliced");
            Ok(None)
        }
    }
}

/// The client's user turn with our results first: tool results lead a user turn, and ours
/// answer calls that came before the client's in the same answer.
fn with_results_first(
    results: anthropic::Message,
    mut message: anthropic::Message,
) -> anthropic::Message {
    let BlockContent::Blocks(mut blocks) = results.content else {
        return message;
    };
    match message.content {
        BlockContent::Blocks(theirs) => blocks.extend(theirs),
        BlockContent::Text(text) => blocks.push(anthropic::ContentBlock::text(text)),
    }
    message.content = BlockContent::Blocks(blocks);
    message
}

#[cfg(test)]
mod tests {
    use mc_store::Store;
    use serde_json::json;

    use super::*;

    fn message(value: serde_json::Value) -> anthropic::Message {
        serde_json::from_value(value).unwrap()
    }

    /// A stored exchange goes back before the answer it preceded, the same every time, and
    /// only when the client's answer is the one it was given.
    #[test]
    fn a_splice_goes_back_at_its_anchor_and_only_before_its_answer() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        let project = Some(ProjectId::new("p").unwrap());
        let question = message(json!({"role": "user", "content": "Indent?"}));
        let answer =
            message(json!({"role": "assistant", "content": [{"type": "text", "text": "Tabs."}]}));
        let call = message(
            json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ctx_search", "input": {"query": "indent"}}]}),
        );
        let result = message(
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "tabs"}]}),
        );
        let mut point = Point::start("anthropic", project.clone());
        point.pass(&message_hash(&question));
        let splice = Splice {
            before: vec![call.clone(), result.clone()],
            full_answer: None,
            client_answer: message_hash(&answer).to_string(),
            results: None,
        };
        store
            .write(|tx| {
                tx.put_hidden_exchange(&point.anchor(), &serde_json::to_string(&splice).unwrap(), 1)
            })
            .unwrap();
        let next = message(json!({"role": "user", "content": "Thanks."}));
        let client = vec![question.clone(), answer.clone(), next.clone()];
        let spliced = |messages: Vec<anthropic::Message>| {
            store
                .read(|tx| splice_in(tx, project.clone(), messages))
                .unwrap()
        };
        let (first, end) = spliced(client.clone());
        assert_eq!(
            first,
            [question.clone(), call, result, answer, next.clone()]
        );
        let (again, end_again) = spliced(client);
        assert_eq!((first, end.anchor()), (again, end_again.anchor()));

        let other = message(json!({"role": "assistant", "content": "Spaces."}));
        let (rewound, _) = spliced(vec![question.clone(), other.clone(), next.clone()]);
        assert_eq!(rewound, [question, other, next]);
    }
}
