//! The agent tools the proxy serves itself, for clients with no MCP server of ours
//! (DESIGN §6, "by the proxy itself"): what is the same on every wire.
//!
//! A client request that gets our tools may take several upstream rounds: while the model
//! calls only our tools, the proxy runs them and asks again; once it calls the client's, or
//! none, the client gets the answer. This crate holds the parts of that which know no wire
//! and no HTTP:
//!
//! - [`round_driver`]: the state machine that decides what follows a round, with the round
//!   limit ([`MAX_ROUNDS`]), and [`round_cap`], what the client reads when the limit ends an
//!   answer;
//! - [`hidden_rounds`]: the rounds the client does not see, over one adapter per wire
//!   ([`hidden_rounds::RoundWire`]): which calls run, what goes upstream next, what the
//!   client was shown, and the exchange stored for its next request;
//! - [`ours`]: which tools are ours, and how a client's tool list shows it has them already;
//! - [`run`]: running the model's calls to our tools against the engine;
//! - [`splice`], [`answer_key`] and [`keep`]: the exchanges the client never saw, stored
//!   under an anchor of the conversation before them and put back into every later request
//!   at the same place, so the upstream bytes repeat the first sending;
//! - per wire, what our tools add to a request and how an exchange is put back
//!   ([`anthropic_exchange`], [`chat_exchange`], [`responses_exchange`]), a whole request
//!   made ready ([`chat_splice`], [`responses_splice`]), and a follow-up made ready by its
//!   new entries only ([`chat_walks`], [`responses_walks`], over the wire-neutral
//!   [`list_walks`] and [`walk_steps`]).
//!
//! The proxy's adapter for each wire (parsing calls, writing the live stream, sending the
//! rounds) calls these; nothing here calls back.

pub mod answer_key;
pub mod anthropic_exchange;
pub mod anthropic_splice;
pub mod anthropic_walks;
pub mod chat_exchange;
pub mod chat_splice;
pub mod chat_walks;
pub mod hidden_rounds;
pub mod keep;
pub mod list_walks;
pub mod ours;
pub mod responses_exchange;
pub mod responses_splice;
pub mod responses_walks;
pub mod round_cap;
pub mod round_driver;
pub mod run;
pub mod splice;
pub mod walk_steps;

pub use ours::{is_ours, names_tool, offers_ours};
pub use round_driver::{MAX_ROUNDS, Next, RoundDriver};
