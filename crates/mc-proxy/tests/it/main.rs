//! Integration tests of the proxy, linked as one binary: a real proxy on a loopback port,
//! a real SQLite store in a tempdir, and in-process upstreams (mc-sim, or recording axum
//! servers scripted per test).
//!
//! `cfg(test)` (always true here) lets clippy treat the helpers as test code, where unwrap
//! is allowed.
#![cfg(test)]

mod agent_tools;
mod agent_tools_answer_forms;
mod agent_tools_chat;
mod agent_tools_disconnect;
mod agent_tools_live;
mod agent_tools_responses;
mod agent_tools_retention;
mod bad_input;
mod browser_requests;
mod cache_budget;
mod continued_sessions;
mod dashboard;
mod dashboard_browser;
mod dashboard_host_compaction;
mod dreamer_steps_wait;
mod dreamer_waits;
mod embeddings;
mod failures;
mod fault_upstream;
mod happy_path;
mod headers;
mod historian;
mod historian_responses;
mod hostile;
mod hostile_bounds;
mod hostile_chat;
mod media;
mod module_graph;
mod nudges;
mod numbers_as_sent;
mod openai;
mod overflow;
mod overflow_responses;
mod projects;
mod responses;
mod responses_fields;
mod round_trip;
mod routing;
mod secrets;
mod session_modes;
mod sessions;
mod sessions_wires;
mod side_calls;
mod store_faults;
mod support;
mod upstream_faults;
mod usage_to_the_end;
