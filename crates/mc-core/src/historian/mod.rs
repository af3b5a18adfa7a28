//! The historian's pure parts (DESIGN §5 "Historian"): which chunk of raw history to
//! summarise, the compact transcript the model reads, and the validation of what it answers.
//!
//! The historian runs in the background over the stored raw log and never blocks a request;
//! the calls to a model, the retries and the publishing live above the store. Everything here
//! is a pure function of stored rows, so a run can be replayed and its checks tested without a
//! model.

mod chunk;
mod fact_key;
mod output;
mod prompt;
mod quotes;
mod range_index;
mod transcript;
mod trigger;
mod validate;

pub use chunk::{Chunk, eligible_chunk, starts_a_turn};
pub use fact_key::fact_key;
pub use output::{CompartmentDraft, FactDraft, HistorianOutput};
pub use prompt::{
    HISTORIAN_SYSTEM, HISTORY_TOOL, StorySoFar, historian_user_message, history_tool, parse_answer,
};
pub use quotes::{QUOTE_MAX_CHARS, quotes_of, shortened as shortened_quote};
pub use range_index::range_index;
pub use transcript::render_transcript;
pub use trigger::{live_tail_start, trigger_tokens};
pub use validate::{Validated, ValidationError, validate, validate_closed};
