//! Tests of the built `magic-context` binary, run as a user would run it: a fresh HOME and
//! XDG_CONFIG_HOME in a tempdir, no inherited environment.

// Marks the whole harness as test code, so fixtures may unwrap like tests do.
#![cfg(test)]

mod claude_code;
mod claude_code_compaction_off;
mod claude_code_historian;
mod claude_code_hosts;
mod claude_code_image;
mod claude_code_mcp;
mod claude_code_proxy;
mod claude_code_small_window;
mod claude_code_subagent;
mod cli;
mod codex;
mod codex_small_window;
mod config_schema;
mod config_show;
mod crash;
mod dashboard;
mod doctor;
mod dream;
#[cfg(feature = "local-embeddings")]
mod locomo_cross_validation;
mod mcp;
mod memory;
mod opencode;
mod opencode_small_window;
mod opencode_subagent;
mod pi_agent;
mod pi_hidden_round_then_bash;
mod pi_sessions;
mod pi_small_window;
mod profile;
mod proxy_tools_real_clients;
mod prune_backup;
mod readme_config;
mod reduce;
mod replay;
mod run_agent;
mod search;
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod serve_allocator;
mod serve_dreamer;
mod serve_port;
mod setup_command;
mod setup_hosts;
mod setup_real_hosts;
mod sim_with_claude_code;
mod status;
mod store_locked;
mod store_read_only;
mod support;
mod team_concurrent_writes;
mod team_latency;
mod team_memory;
mod team_serves;
mod team_store;
mod workspaces;
mod wrapup_recomp;
