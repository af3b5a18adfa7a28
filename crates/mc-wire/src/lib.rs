//! Provider wire codecs for Magic Context.
//!
//! Two properties are the point of this crate:
//! - *lossless*: every field and block type a codec does not model (`cache_control`,
//!   `context_management`, citations, server tool blocks, future fields) survives decode →
//!   encode unchanged, in its original key order;
//! - *byte-stable*: encoding is a pure function of the decoded value, so the same logical
//!   request always becomes the same bytes and the provider's prefix cache can hit.
//!
//! Provider JSON lives only here; the rest of the system sees typed wire structs and the
//! neutral [`mc_core::Message`] model they convert to.
//!
//! ```
//! use mc_wire::anthropic::MessagesRequest;
//!
//! let body = br#"{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}"#;
//! let request = MessagesRequest::decode(body, 1 << 20)?;
//! assert_eq!(request.model, "claude-sonnet-4-5");
//! assert_eq!(request.encode(), body.to_vec());
//! # Ok::<(), mc_wire::WireError>(())
//! ```

pub mod anthropic;
pub mod anthropic_incremental;
mod arguments;
pub mod chunked_body;
mod error;
#[cfg(feature = "fuzzing")]
pub mod incremental_check;
pub mod lineage;
pub mod list_split;
mod object;
pub mod openai;
pub mod recent_bodies;
pub mod recent_lists;
pub mod responses;
pub mod sse;
mod wire_object;

pub use error::{Result, WireError};
