//! Storing the exchanges the client did not see, and putting them back.
//!
//! An exchange is anchored at the point of the conversation where the model's answer
//! began: the anchor hashes the project and the content-hash chain of every message before
//! it, as the upstream received them (spliced ones included), so the same point of the same
//! conversation always has the same anchor, whatever cache markers or session ids the client
//! sends. A splice applies only when the client's next message there is the answer the client
//! was given (its content hash is stored too): a client that rewound and got another answer
//! does not get this one's calls.
//!
//! Anchors belong to conversations, not sessions, so an exchange is kept by its use: each
//! splice records when a request last put it back ([`Used`]), and storing a new exchange
//! deletes those unused for longer than `tools.hidden_exchange_max_age_days`
//! ([`crate::keep`]).

use mc_core::{ContentHash, HashChain, ProjectId};
use mc_store::{ReadTx, Store, StoreError};
use mc_wire::anthropic::{self, BlockContent, MessageRole};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::answer_key::{answer_key, is_answer};

/// How stale an exchange's recorded last use must be before a request records it again: a
/// write per request would queue on the store's one writer for a date that only needs to be
/// right to within the days of `tools.hidden_exchange_max_age_days`.
const MARK_USED_EVERY_MS: i64 = 60 * 60 * 1000;

/// The exchanges a request put back whose last use is to be recorded.
#[derive(Debug)]
pub struct Used {
    now_ms: i64,
    anchors: Vec<String>,
}

impl Used {
    /// None yet, for a request made at `now_ms`.
    pub fn at(now_ms: i64) -> Self {
        Self {
            now_ms,
            anchors: Vec::new(),
        }
    }

    /// Notes that `found` was put back.
    pub fn note<T>(&mut self, found: &Found<T>) {
        if found.last_used_ms < self.now_ms.saturating_sub(MARK_USED_EVERY_MS) {
            self.anchors.push(found.anchor.clone());
        }
    }

    /// Records the use in `store`. A failure is logged and costs nothing now: the request
    /// still goes, and the exchange is only at risk of deletion once unused for the whole age.
    pub fn record(self, store: &Store) {
        if self.anchors.is_empty() {
            return;
        }
        if let Err(error) =
            store.write(|tx| tx.mark_hidden_exchanges_used(&self.anchors, self.now_ms))
        {
            tracing::warn!(%error, "could not record the use of hidden exchanges");
        }
    }
}

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
    /// The key of the answer as the client got it ([`crate::answer_key`]); a content hash
    /// (hex) in exchanges stored before keys.
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

/// The key of an answer as the client got it ([`crate::answer_key`]).
pub fn client_answer_key(message: &anthropic::Message) -> String {
    answer_key(&anthropic::to_message(message))
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
    used: &mut Used,
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
            && let Some(found) = stored::<Splice>(tx, &point.anchor())?
            && is_answer(
                &found.splice.client_answer,
                &anthropic::to_message(&message),
            )
        {
            used.note(&found);
            let splice = found.splice;
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

/// A stored splice and where it is kept.
#[derive(Debug)]
pub struct Found<T> {
    /// The splice.
    pub splice: T,
    anchor: String,
    last_used_ms: i64,
}

/// The splice stored under `anchor`, when there is one this wire can read. The caller
/// notes it in [`Used`] when it puts it back.
pub fn stored<T: DeserializeOwned>(
    tx: &ReadTx<'_>,
    anchor: &str,
) -> Result<Option<Found<T>>, StoreError> {
    let Some(exchange) = tx.hidden_exchange(anchor)? else {
        return Ok(None);
    };
    match serde_json::from_str(&exchange.splice) {
        Ok(splice) => Ok(Some(Found {
            splice,
            anchor: anchor.to_owned(),
            last_used_ms: exchange.last_used_ms,
        })),
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
            let mut used = Used::at(NOW_MS);
            let spliced = store
                .read(|tx| splice_in(tx, project.clone(), messages, &mut used))
                .unwrap();
            (spliced, used.anchors)
        };
        let ((first, end), used) = spliced(client.clone());
        assert_eq!(
            first,
            [question.clone(), call, result, answer, next.clone()]
        );
        assert_eq!(used, [point.anchor()]);
        let ((again, end_again), _) = spliced(client);
        assert_eq!((first, end.anchor()), (again, end_again.anchor()));

        let other = message(json!({"role": "assistant", "content": "Spaces."}));
        let ((rewound, _), used) = spliced(vec![question.clone(), other.clone(), next.clone()]);
        assert_eq!(rewound, [question, other, next]);
        assert_eq!(used, Vec::<String>::new(), "not put back, so not used");
    }

    const NOW_MS: i64 = 1_000 * 24 * 60 * 60 * 1000;

    /// Putting an exchange back records its use, at most once per [`MARK_USED_EVERY_MS`].
    #[test]
    fn a_splice_records_when_it_was_last_used() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("context.db")).unwrap();
        let (question, answer) = (
            message(json!({"role": "user", "content": "Indent?"})),
            message(json!({"role": "assistant", "content": "Tabs."})),
        );
        let mut point = Point::start("anthropic", None);
        point.pass(&message_hash(&question));
        let splice = Splice {
            before: vec![],
            full_answer: None,
            client_answer: message_hash(&answer).to_string(),
            results: None,
        };
        let text = serde_json::to_string(&splice).unwrap();
        let ten_days_ago = NOW_MS - 10 * 24 * 60 * 60 * 1000;
        store
            .write(|tx| tx.put_hidden_exchange(&point.anchor(), &text, ten_days_ago))
            .unwrap();
        let last_used = || {
            store
                .read(|tx| tx.hidden_exchange(&point.anchor()))
                .unwrap()
                .unwrap()
                .last_used_ms
        };
        let splice_at = |now_ms: i64| {
            let mut used = Used::at(now_ms);
            let messages = vec![question.clone(), answer.clone()];
            store
                .read(|tx| splice_in(tx, None, messages, &mut used))
                .unwrap();
            used.record(&store);
        };
        splice_at(NOW_MS);
        assert_eq!(last_used(), NOW_MS);
        splice_at(NOW_MS + MARK_USED_EVERY_MS);
        assert_eq!(last_used(), NOW_MS, "recorded again only once it is older");
        splice_at(NOW_MS + MARK_USED_EVERY_MS + 1);
        assert_eq!(last_used(), NOW_MS + MARK_USED_EVERY_MS + 1);
    }
}
