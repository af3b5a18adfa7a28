//! Content hashes of messages and the hash chain of a conversation.
//!
//! The proxy recognises a conversation by its history: the stored session whose chain a new
//! request extends is the same conversation, and a request that diverges forks a branch. The
//! hash covers only what identifies a message (role and parts), never wire details such as
//! `cache_control`, which clients move from turn to turn.
//!
//! Hash format v1: BLAKE3 over a length-prefixed encoding of the message (see
//! [`Message::content_hash`]). The format is persisted, so changing it needs a migration.

use std::fmt;

use crate::conversation::{MediaKind, Message, Part, Role};

/// A 32-byte BLAKE3 digest.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContentHash([u8; 32]);

impl ContentHash {
    /// The digest bytes, as stored.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// A hash from stored bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// Parses the 64-character lowercase hex form printed by `Display`.
    pub fn from_hex(hex: &str) -> Result<Self, ParseHashError> {
        let hash = blake3::Hash::from_hex(hex).map_err(|_| ParseHashError {
            input: hex.chars().take(80).collect(),
        })?;
        Ok(Self(*hash.as_bytes()))
    }
}

impl fmt::Display for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ContentHash({self})")
    }
}

/// A string that is not a 64-digit hex hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseHashError {
    /// The rejected input (clipped).
    pub input: String,
}

impl fmt::Display for ParseHashError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not a content hash (expected 64 hex digits)",
            self.input
        )
    }
}

impl std::error::Error for ParseHashError {}

/// Writes a length-prefixed encoding that BLAKE3 then hashes, so that no two different
/// messages share an input (a bare concatenation would let `"ab" + "c"` collide with
/// `"a" + "bc"`).
///
/// The encoding is buffered and hashed in one call rather than fed piece by piece: BLAKE3
/// hashes a long input several chunks at a time with SIMD, which made chain hashing of a
/// 1 MB conversation about three times faster. The bytes hashed are the same either way.
struct Encoder<'a>(&'a mut Vec<u8>);

impl Encoder<'_> {
    fn tag(&mut self, tag: u8) {
        self.0.push(tag);
    }

    fn bytes(&mut self, bytes: &[u8]) {
        self.0
            .extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        self.0.extend_from_slice(bytes);
    }

    fn str(&mut self, text: &str) {
        self.bytes(text.as_bytes());
    }

    /// A JSON value by its compact serialisation (what `Value::to_string` writes), written
    /// in place behind a length slot filled in afterwards.
    fn json(&mut self, value: &serde_json::Value) {
        let slot = self.0.len();
        self.0.extend_from_slice(&[0; 8]);
        // Writing a `Value` into a `Vec` cannot fail: no I/O, and every key is a string.
        let _ = serde_json::to_writer(&mut *self.0, value);
        let len = (self.0.len() - slot - 8) as u64;
        self.0[slot..slot + 8].copy_from_slice(&len.to_le_bytes());
    }

    fn part(&mut self, part: &Part) {
        match part {
            Part::Text { text, fields } => {
                self.tag(1);
                self.str(text);
                // Plain text hashes as it always has; a text's own fields follow it.
                if let Some(fields) = fields {
                    self.tag(9);
                    self.json(&serde_json::Value::Object((**fields).clone()));
                }
            }
            Part::ToolCall { id, name, input } => {
                self.tag(2);
                self.str(id);
                self.str(name);
                self.json(input);
            }
            Part::ToolResult {
                call_id,
                content,
                is_error,
            } => {
                self.tag(3);
                self.str(call_id);
                self.tag(u8::from(*is_error));
                self.0
                    .extend_from_slice(&(content.len() as u64).to_le_bytes());
                for inner in content {
                    self.part(inner);
                }
            }
            Part::Thinking { text, signature } => {
                self.tag(4);
                self.str(text);
                match signature {
                    Some(signature) => {
                        self.tag(1);
                        self.str(signature);
                    }
                    None => self.tag(0),
                }
            }
            Part::RedactedThinking { data } => {
                self.tag(5);
                self.str(data);
            }
            Part::Media { media, source } => {
                self.tag(6);
                self.tag(match media {
                    MediaKind::Image => 0,
                    MediaKind::Document => 1,
                    MediaKind::Audio => 2,
                });
                self.json(source);
            }
            Part::Unknown { type_name, raw } => {
                self.tag(7);
                self.str(type_name);
                self.json(raw);
            }
        }
    }
}

impl Message {
    /// The message's content hash (format v1).
    ///
    /// Equal for equal role and parts, whatever wire the message came from; JSON values
    /// inside parts (tool inputs, media sources, unknown blocks) hash by their serialised
    /// text, so key order inside them counts, as it does for the provider's cache.
    pub fn content_hash(&self) -> ContentHash {
        self.content_hash_in(&mut Vec::new())
    }

    /// [`Self::content_hash`] with a caller's scratch buffer, reused across messages.
    fn content_hash_in(&self, buffer: &mut Vec<u8>) -> ContentHash {
        buffer.clear();
        let mut encoder = Encoder(buffer);
        encoder.str("mc-message-v1");
        encoder.tag(match self.role {
            Role::System => 0,
            Role::User => 1,
            Role::Assistant => 2,
            Role::Tool => 3,
        });
        encoder
            .0
            .extend_from_slice(&(self.parts.len() as u64).to_le_bytes());
        for part in &self.parts {
            encoder.part(part);
        }
        ContentHash(*blake3::hash(buffer).as_bytes())
    }
}

/// The running hash of a conversation: link `i` commits to messages `0..=i`.
///
/// Two conversations share link `i` exactly when they share their first `i + 1` messages, so
/// finding a stored session a request extends is one lookup of a link.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HashChain {
    links: Vec<ContentHash>,
}

impl HashChain {
    /// The chain of a whole message list.
    pub fn of(messages: &[Message]) -> Self {
        let mut chain = Self {
            links: Vec::with_capacity(messages.len()),
        };
        let mut buffer = Vec::new();
        for message in messages {
            chain.push(message.content_hash_in(&mut buffer));
        }
        chain
    }

    /// The link that follows `previous` (or starts a chain when `None`) for a message hash.
    pub fn next_link(previous: Option<&ContentHash>, message: &ContentHash) -> ContentHash {
        let mut hasher = blake3::Hasher::new();
        hasher.update(b"mc-chain-v1");
        match previous {
            Some(previous) => hasher.update(&previous.0),
            None => hasher.update(&[0; 32]),
        };
        hasher.update(&message.0);
        ContentHash(*hasher.finalize().as_bytes())
    }

    /// Appends one message's hash.
    pub fn push(&mut self, message: ContentHash) {
        let link = Self::next_link(self.links.last(), &message);
        self.links.push(link);
    }

    /// Keeps the links of the first `len` messages (all of them when there are fewer).
    pub fn truncate(&mut self, len: usize) {
        self.links.truncate(len);
    }

    /// The links, one per message.
    pub fn links(&self) -> &[ContentHash] {
        &self.links
    }

    /// The link of the last message, if any.
    pub fn head(&self) -> Option<&ContentHash> {
        self.links.last()
    }

    /// Number of messages covered.
    pub fn len(&self) -> usize {
        self.links.len()
    }

    /// Whether the chain covers no message.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// Whether this conversation starts with all of `prefix` (equal chains included).
    pub fn extends(&self, prefix: &HashChain) -> bool {
        match prefix.head() {
            None => true,
            Some(head) => self.links.get(prefix.len() - 1) == Some(head),
        }
    }

    /// How many leading messages the two conversations share.
    pub fn common_prefix_len(&self, other: &HashChain) -> usize {
        self.links
            .iter()
            .zip(&other.links)
            .take_while(|(a, b)| a == b)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A text part's own fields count for its hash; plain text hashes as before they were
    /// kept, so stores written earlier still match their clients' messages.
    #[test]
    fn a_texts_fields_count_and_plain_text_is_unchanged() {
        let plain = Message::new(Role::Assistant, vec![Part::text("Found it.")]);
        let mut fields = serde_json::Map::new();
        fields.insert("citations".to_owned(), serde_json::json!([]));
        let cited = Message::new(
            Role::Assistant,
            vec![Part::Text {
                text: "Found it.".to_owned(),
                fields: Some(Box::new(fields)),
            }],
        );
        assert_ne!(plain.content_hash(), cited.content_hash());
        let stored: Part = serde_json::from_str(r#"{"kind":"text","text":"Found it."}"#).unwrap();
        assert_eq!(stored, Part::text("Found it."));
        assert_eq!(
            serde_json::to_string(&Part::text("x")).unwrap(),
            r#"{"kind":"text","text":"x"}"#
        );
    }
    use proptest::prelude::*;
    use serde_json::json;

    fn text(role: Role, text: &str) -> Message {
        Message::new(role, vec![Part::text(text)])
    }

    #[test]
    fn hash_is_pinned() {
        // The format is persisted: a change here breaks every stored chain.
        let hash = text(Role::User, "hello").content_hash();
        assert_eq!(hash, ContentHash::from_hex(&hash.to_string()).unwrap());
        assert_eq!(
            hash.to_string(),
            "a08e12e38465d36dff93ba498fd5bbc8a0d0b8cab33b081f604b7f28a08ab963"
        );
    }

    #[test]
    fn role_and_boundaries_count() {
        assert_ne!(
            text(Role::User, "hi").content_hash(),
            text(Role::Assistant, "hi").content_hash()
        );
        let split = Message::new(Role::User, vec![Part::text("ab"), Part::text("c")]);
        let other = Message::new(Role::User, vec![Part::text("a"), Part::text("bc")]);
        assert_ne!(split.content_hash(), other.content_hash());
    }

    #[test]
    fn json_key_order_counts() {
        let a = Message::new(
            Role::Assistant,
            vec![Part::ToolCall {
                id: "1".into(),
                name: "t".into(),
                input: json!({"a": 1, "b": 2}),
            }],
        );
        let b = Message::new(
            Role::Assistant,
            vec![Part::ToolCall {
                id: "1".into(),
                name: "t".into(),
                input: json!({"b": 2, "a": 1}),
            }],
        );
        assert_ne!(a.content_hash(), b.content_hash());
    }

    #[test]
    fn bad_hex_is_rejected() {
        let err = ContentHash::from_hex("xyz").unwrap_err();
        assert!(err.to_string().contains("64 hex digits"));
    }

    fn arb_message() -> impl Strategy<Value = Message> {
        let role = prop_oneof![Just(Role::User), Just(Role::Assistant), Just(Role::System)];
        (role, prop::collection::vec("[a-z ]{0,8}", 1..3)).prop_map(|(role, texts)| {
            Message::new(role, texts.into_iter().map(Part::text).collect())
        })
    }

    proptest! {
        #[test]
        fn a_chain_extends_exactly_its_prefixes(
            messages in prop::collection::vec(arb_message(), 0..12),
            cut in 0usize..12,
            other in arb_message(),
        ) {
            let cut = cut.min(messages.len());
            let whole = HashChain::of(&messages);
            let prefix = HashChain::of(&messages[..cut]);
            prop_assert!(whole.extends(&prefix));
            prop_assert_eq!(whole.common_prefix_len(&prefix), cut);

            let mut forked = messages[..cut].to_vec();
            forked.push(other.clone());
            let fork = HashChain::of(&forked);
            let diverges = messages.get(cut).is_some_and(|next| next.content_hash() != other.content_hash());
            prop_assert_eq!(whole.extends(&fork), !diverges && cut < messages.len());
        }
    }
}
