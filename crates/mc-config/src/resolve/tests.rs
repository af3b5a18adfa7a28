use mc_core::config::{DreamerSchedules, TaskSchedule};
use serde_json::json;

use super::*;

fn raw(value: serde_json::Value) -> RawConfig {
    serde_json::from_value(value).unwrap()
}

#[test]
fn empty_raw_is_the_default_config() {
    assert_eq!(resolve(&RawConfig::default()), (Config::default(), vec![]));
}

#[test]
fn tools_mode_is_read_and_defaults_to_auto() {
    assert_eq!(Config::default().tools.mode, ToolsMode::Auto);
    for (written, mode) in [
        ("proxy", ToolsMode::Proxy),
        ("mcp", ToolsMode::Mcp),
        ("off", ToolsMode::Off),
        ("auto", ToolsMode::Auto),
    ] {
        let (config, issues) = resolve(&raw(json!({"tools": {"mode": written}})));
        assert_eq!((config.tools.mode, issues), (mode, vec![]));
    }
}

#[test]
fn the_hidden_exchange_age_is_read_and_bounded() {
    let (config, issues) = resolve(&raw(json!({"tools": {"hidden_exchange_max_age_days": 7}})));
    assert_eq!(
        (config.tools.hidden_exchange_max_age_days, issues),
        (7, vec![])
    );
    let (config, issues) = resolve(&raw(json!({"tools": {"hidden_exchange_max_age_days": 0}})));
    assert_eq!(config.tools.hidden_exchange_max_age_days, 30);
    let keys: Vec<String> = issues.iter().map(|i| i.key.to_string()).collect();
    assert_eq!(keys, ["tools.hidden_exchange_max_age_days"]);
}

#[test]
fn compaction_is_on_unless_turned_off() {
    assert!(resolve(&raw(json!({}))).0.compaction.enabled);
    let (config, issues) = resolve(&raw(json!({"compaction": {"enabled": false}})));
    assert_eq!((config.compaction.enabled, issues), (false, vec![]));
    let (config, _) = resolve(&raw(json!({"compaction": {"enabled": null}})));
    assert!(
        config.compaction.enabled,
        "null resets the key to its default"
    );
}

#[test]
fn the_session_retention_is_read_and_bounded() {
    let (config, issues) = resolve(&raw(json!({"retention": {"session_days": 30}})));
    assert_eq!((config.retention.session_days, issues), (30, vec![]));
    let (config, issues) = resolve(&raw(json!({"retention": {"session_days": 0}})));
    assert_eq!(config.retention.session_days, 90);
    let keys: Vec<String> = issues.iter().map(|i| i.key.to_string()).collect();
    assert_eq!(keys, ["retention.session_days"]);
}

#[test]
fn doc_files_must_stay_in_the_project() {
    let (config, issues) = resolve(&raw(json!({
        "project_docs": {"files": ["docs/ARCHITECTURE.md"], "budget_percent": 5}
    })));
    assert_eq!(config.project_docs.files, ["docs/ARCHITECTURE.md"]);
    assert_eq!(config.project_docs.budget_percent.get(), 5);
    assert_eq!(issues, vec![]);
    let (config, issues) = resolve(&raw(json!({
        "project_docs": {"files": ["../secrets.md"], "budget_percent": 50}
    })));
    assert_eq!(
        config.project_docs,
        mc_core::config::ProjectDocsConfig::default()
    );
    let keys: Vec<String> = issues.iter().map(|i| i.key.to_string()).collect();
    assert_eq!(keys, ["project_docs.files", "project_docs.budget_percent"]);
}

#[test]
fn set_keys_apply_and_bad_ones_keep_their_default() {
    let (config, issues) = resolve(&raw(json!({
        "pass": {"execute_threshold_percent": 95, "refusal_percent": 97},
        "cache": {"ttl": "1h"},
        "dreamer": {"schedules": {"maintain_docs": "off", "pin_key_files": "every day"}},
    })));
    assert_eq!(
        config.pass.execute_threshold_percent,
        Config::default().pass.execute_threshold_percent
    );
    assert_eq!(config.pass.refusal_percent.get(), 97);
    assert_eq!(config.cache.ttl, CacheTtl::OneHour);
    assert_eq!(config.dreamer.schedules.maintain_docs, TaskSchedule::Off);
    assert_eq!(
        config.dreamer.schedules.pin_key_files,
        DreamerSchedules::default().pin_key_files
    );
    let keys: Vec<String> = issues.iter().map(|i| i.key.to_string()).collect();
    assert_eq!(
        keys,
        [
            "pass.execute_threshold_percent",
            "dreamer.schedules.pin_key_files"
        ]
    );
    assert_eq!(
        issues[0].reason,
        "must be between 20 and 90 percent, got 95"
    );
}

#[test]
fn allowed_hosts_keep_the_usable_entries_and_name_the_others() {
    let (config, issues) = resolve(&raw(json!({"proxy": {"allowed_hosts":
        ["gateway.internal", "https://gateway.internal", "*.corp"]}})));
    assert_eq!(config.proxy.allowed_hosts, ["gateway.internal"]);
    let keys: Vec<String> = issues.iter().map(|issue| issue.key.to_string()).collect();
    assert_eq!(keys, ["proxy.allowed_hosts.1", "proxy.allowed_hosts.2"]);
}

#[test]
fn the_cache_budget_is_read_in_mib_within_its_bounds() {
    let (config, issues) = resolve(&raw(json!({"proxy": {"cache_budget_mb": 64}})));
    assert!(issues.is_empty());
    assert_eq!(config.proxy.cache_budget_bytes(), 64 * 1024 * 1024);
    let (config, issues) = resolve(&raw(json!({"proxy": {"cache_budget_mb": 0}})));
    assert!(issues.is_empty());
    assert_eq!(config.proxy.cache_budget_bytes(), 0);
    let (config, issues) = resolve(&raw(json!({"proxy": {"cache_budget_mb": 1_000_000}})));
    assert_eq!(config.proxy.cache_budget_mb, 256);
    assert_eq!(issues[0].key.to_string(), "proxy.cache_budget_mb");
}

#[test]
fn a_working_set_caps_the_planned_window_within_its_bounds() {
    let (config, issues) = resolve(&raw(json!({"pass": {"working_set_tokens": 60_000}})));
    assert!(issues.is_empty());
    assert_eq!(config.pass.working_set_tokens, Some(Tokens(60_000)));
    assert_eq!(
        config.pass.planned_window(Some(Tokens(180_000))),
        Some(Tokens(60_000))
    );
    assert_eq!(
        config.pass.planned_window(Some(Tokens(30_000))),
        Some(Tokens(30_000))
    );
    assert_eq!(config.pass.planned_window(None), Some(Tokens(60_000)));
    let (config, issues) = resolve(&raw(json!({"pass": {"working_set_tokens": 500}})));
    assert_eq!(config.pass.working_set_tokens, None);
    assert_eq!(issues[0].key.to_string(), "pass.working_set_tokens");
}

#[test]
fn model_thresholds_prefer_tokens_and_need_one_of_the_two() {
    let (config, issues) = resolve(&raw(json!({"pass": {"execute_threshold_by_model": {
        "gpt-5": {"percent": 70, "tokens": 150000},
        "o3": {"percent": 70, "tokens": 5},
        "gpt-4.1": {},
    }}})));
    let by_model = &config.pass.execute_threshold_by_model;
    assert_eq!(by_model["gpt-5"], ExecuteThreshold::Tokens(Tokens(150_000)));
    assert_eq!(
        by_model["o3"],
        ExecuteThreshold::Percent(Percent::new(70).unwrap())
    );
    assert!(!by_model.contains_key("gpt-4.1"));
    let keys: Vec<String> = issues.iter().map(|i| i.key.to_string()).collect();
    assert_eq!(
        keys,
        [
            r#"pass.execute_threshold_by_model."gpt-4.1""#,
            "pass.execute_threshold_by_model.o3.tokens"
        ]
    );
}

#[test]
fn the_archive_age_is_read_in_days_and_a_too_short_one_keeps_the_default() {
    let (config, issues) = resolve(&raw(json!({"dreamer": {"archive_after_days": 30}})));
    assert_eq!(config.dreamer.archive_after_days, 30);
    assert!(issues.is_empty(), "{issues:?}");
    let (config, issues) = resolve(&raw(json!({"dreamer": {"archive_after_days": 2}})));
    assert_eq!(config.dreamer.archive_after_days, 90);
    assert_eq!(issues[0].key.to_string(), "dreamer.archive_after_days");
    assert_eq!(issues[0].reason, "must be between 7 and 36500 days, got 2");
}

#[test]
fn the_rewrite_budget_is_read_in_characters_and_a_too_small_one_keeps_the_default() {
    let (config, issues) = resolve(&raw(json!({"dreamer": {"rewrite_over_chars": 600}})));
    assert_eq!(config.dreamer.rewrite_over_chars, 600);
    assert!(issues.is_empty(), "{issues:?}");
    let (config, issues) = resolve(&raw(json!({"dreamer": {"rewrite_over_chars": 20}})));
    assert_eq!(config.dreamer.rewrite_over_chars, 400);
    assert_eq!(issues[0].key.to_string(), "dreamer.rewrite_over_chars");
    assert_eq!(
        issues[0].reason,
        "must be between 100 and 10000 characters, got 20"
    );
}

#[test]
fn pin_key_files_settings_are_read_and_checked() {
    let (config, issues) = resolve(&raw(json!({"dreamer": {
        "pin_key_files_max_files": 2,
        "pin_key_files_budget_tokens": 1500,
        "pin_key_files_min_reads": 5
    }})));
    assert!(issues.is_empty(), "{issues:?}");
    let d = &config.dreamer;
    assert_eq!(
        (
            d.pin_key_files_max_files,
            d.pin_key_files_budget_tokens,
            d.pin_key_files_min_reads
        ),
        (2, 1_500, 5)
    );
    let (config, issues) = resolve(&raw(json!({"dreamer": {
        "pin_key_files_max_files": 50,
        "pin_key_files_min_reads": 0
    }})));
    let keys: Vec<String> = issues.iter().map(|issue| issue.key.to_string()).collect();
    assert_eq!(
        keys,
        [
            "dreamer.pin_key_files_max_files",
            "dreamer.pin_key_files_min_reads"
        ]
    );
    assert_eq!(
        (
            config.dreamer.pin_key_files_max_files,
            config.dreamer.pin_key_files_min_reads
        ),
        (4, 3),
        "the defaults stand in"
    );
}

#[test]
fn the_agent_loop_caps_are_read_and_out_of_range_ones_keep_their_defaults() {
    let (config, issues) = resolve(&raw(json!({"dreamer": {
        "agent_max_steps": 5, "agent_token_budget": 9000, "agent_max_seconds": 60
    }})));
    assert!(issues.is_empty(), "{issues:?}");
    let caps = &config.dreamer;
    assert_eq!(
        (
            caps.agent_max_steps,
            caps.agent_token_budget,
            caps.agent_max_seconds
        ),
        (5, 9000, 60)
    );
    let (config, issues) = resolve(&raw(json!({"dreamer": {
        "agent_max_steps": 0, "agent_token_budget": 100, "agent_max_seconds": 7200
    }})));
    let caps = &config.dreamer;
    assert_eq!(
        (
            caps.agent_max_steps,
            caps.agent_token_budget,
            caps.agent_max_seconds
        ),
        (12, 40_000, 180)
    );
    let said: Vec<String> = issues
        .iter()
        .map(|issue| format!("{}: {}", issue.key, issue.reason))
        .collect();
    assert_eq!(
        said,
        [
            "dreamer.agent_max_steps: must be between 1 and 100 steps, got 0",
            "dreamer.agent_token_budget: must be between 2000 and 2000000 tokens, got 100",
            "dreamer.agent_max_seconds: must be between 10 and 3600 seconds, got 7200",
        ]
    );
}

#[test]
fn the_team_store_url_is_checked_and_never_shown_with_its_password() {
    let (config, issues) = resolve(&raw(json!({
        "team_store": {"url": "postgres://team:hunter2@127.0.0.1:5432/mc"}
    })));
    assert_eq!(issues, vec![]);
    let url = config.team_store.url.as_ref().unwrap();
    assert_eq!(url.expose(), "postgres://team:hunter2@127.0.0.1:5432/mc");
    let shown = serde_json::to_string(&config).unwrap();
    assert!(
        shown.contains(r#""team_store":{"url":"postgres://team:<redacted>@127.0.0.1:5432/mc"}"#),
        "{shown}"
    );
    assert!(!format!("{config:?}").contains("hunter2"));

    let (config, issues) = resolve(&raw(
        json!({"team_store": {"url": "mysql://team:hunter2@h/mc"}}),
    ));
    assert_eq!(config.team_store.url, None);
    let keys: Vec<String> = issues.iter().map(|i| i.key.to_string()).collect();
    assert_eq!(keys, ["team_store.url"]);
    assert!(
        !issues[0].reason.contains("hunter2"),
        "{}",
        issues[0].reason
    );
}
