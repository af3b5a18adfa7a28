//! Layering, provenance and per-key fallback across the user and project files.

use std::path::{Path, PathBuf};

use mc_config::{ConfigSources, Diagnostic, LoadedConfig, Source, load};
use mc_core::config::{CacheTtl, Config, ExecuteThreshold, Percent, Tokens};

struct Files {
    _dir: tempfile::TempDir,
    user: PathBuf,
    project: PathBuf,
}

fn files(user: Option<&str>, project: Option<&str>) -> Files {
    let dir = tempfile::tempdir().unwrap();
    let user_path = dir.path().join("user.jsonc");
    let project_path = dir.path().join("project.jsonc");
    if let Some(text) = user {
        std::fs::write(&user_path, text).unwrap();
    }
    if let Some(text) = project {
        std::fs::write(&project_path, text).unwrap();
    }
    Files {
        _dir: dir,
        user: user_path,
        project: project_path,
    }
}

fn load_files(files: &Files) -> LoadedConfig {
    load(&ConfigSources {
        user: Some(files.user.clone()),
        user_must_exist: false,
        project: Some(files.project.clone()),
    })
}

fn diagnostic(file: &Path, key: &str, reason: &str) -> Diagnostic {
    Diagnostic {
        file: Some(file.to_path_buf()),
        key: Some(key.to_owned()),
        reason: reason.to_owned(),
    }
}

#[test]
fn no_files_is_the_default_config() {
    let files = files(None, None);
    let loaded = load_files(&files);
    assert_eq!(loaded.config, Config::default());
    assert!(loaded.diagnostics.is_empty());
    assert!(
        loaded
            .provenance
            .values()
            .all(|source| *source == Source::Default)
    );
    assert_eq!(loaded.provenance.len(), loaded.entries().len());
    assert!(
        loaded
            .provenance
            .contains_key("dreamer.schedules.pin_key_files")
    );
}

#[test]
fn project_wins_key_by_key_and_maps_merge() {
    let files = files(
        Some(
            r#"{
            // user-wide
            "pass": { "execute_threshold_percent": 70, "refusal_percent": 97 },
            "cache": { "ttl_by_model": { "claude-opus-4": "1h", "gpt-5": "5m" } },
        }"#,
        ),
        Some(
            r#"{
            "pass": { "execute_threshold_percent": 60 },
            "cache": { "ttl_by_model": { "gpt-5": "never" } },
        }"#,
        ),
    );
    let loaded = load_files(&files);
    assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
    let config = &loaded.config;
    assert_eq!(
        config.pass.execute_threshold_percent,
        Percent::new(60).unwrap()
    );
    assert_eq!(config.pass.refusal_percent, Percent::new(97).unwrap());
    assert_eq!(config.cache.ttl_for("claude-opus-4-5"), CacheTtl::OneHour);
    assert_eq!(config.cache.ttl_for("gpt-5"), CacheTtl::Never);
    let source = |key: &str| loaded.provenance[key].clone();
    assert_eq!(
        source("pass.execute_threshold_percent"),
        Source::Project(files.project.clone())
    );
    assert_eq!(
        source("pass.refusal_percent"),
        Source::User(files.user.clone())
    );
    assert_eq!(
        source("cache.ttl_by_model.claude-opus-4"),
        Source::User(files.user.clone())
    );
    assert_eq!(
        source("cache.ttl_by_model.gpt-5"),
        Source::Project(files.project.clone())
    );
    assert_eq!(source("cache.ttl"), Source::Default);
}

/// A bad key costs only itself: it falls back to the layer below (not straight to the
/// default), and the other keys of the same file still apply.
#[test]
fn a_bad_key_falls_back_to_the_layer_below() {
    let files = files(
        Some(
            r#"{ "pass": { "execute_threshold_percent": 70 }, "reduction": { "protected_tags": "many", "drop_skeletons": 10 } }"#,
        ),
        Some(
            r#"{
            "pass": { "execute_threshold_percent": 95, "refusal_percent": 99 },
            "historian": { "fallback_model": ["claude-haiku-4-5"], "lookahead_ordinals": 4 },
        }"#,
        ),
    );
    let loaded = load_files(&files);
    let config = &loaded.config;
    assert_eq!(
        config.pass.execute_threshold_percent.get(),
        70,
        "the user's value, not the default"
    );
    assert_eq!(config.pass.refusal_percent.get(), 99);
    assert_eq!(config.reduction.protected_tags, 20);
    assert_eq!(config.reduction.drop_skeletons, 10);
    assert_eq!(config.historian.lookahead_ordinals, 4);
    assert_eq!(
        loaded.provenance["pass.execute_threshold_percent"],
        Source::User(files.user.clone())
    );
    assert_eq!(
        loaded.provenance["reduction.protected_tags"],
        Source::Default
    );
    assert_eq!(
        loaded.diagnostics,
        [
            diagnostic(
                &files.user,
                "reduction.protected_tags",
                "invalid type: string \"many\", expected a whole number, 0 or more"
            ),
            diagnostic(
                &files.project,
                "pass.execute_threshold_percent",
                "must be between 20 and 90 percent, got 95"
            ),
            diagnostic(
                &files.project,
                "historian.fallback_model",
                "unknown key `fallback_model` (did you mean `fallback_models`?)"
            ),
        ]
    );
}

#[test]
fn the_historian_wire_takes_the_responses_api_by_name() {
    let files = files(
        Some(r#"{ "historian": { "wire": "openai-responses" } }"#),
        Some(r#"{ "historian": { "wire": "responses" } }"#),
    );
    let loaded = load_files(&files);
    assert_eq!(
        loaded.config.historian.wire,
        Some(mc_core::config::HistorianWire::OpenAiResponses),
        "the user's value: the project's is not a wire"
    );
    assert_eq!(
        loaded.diagnostics,
        [diagnostic(
            &files.project,
            "historian.wire",
            "`responses` is not a wire; use `anthropic`, `openai` or `openai-responses`"
        )]
    );
}

#[test]
fn a_broken_file_is_skipped_and_the_other_still_applies() {
    let files = files(
        Some("{ \"pass\": { \"execute_threshold_percent\": 70 }"),
        Some(r#"{ "expand": { "cap_tokens": 20000 } }"#),
    );
    let loaded = load_files(&files);
    assert_eq!(loaded.config.pass.execute_threshold_percent.get(), 65);
    assert_eq!(loaded.config.expand.cap_tokens, Tokens(20_000));
    assert_eq!(loaded.diagnostics.len(), 1);
    let only = &loaded.diagnostics[0];
    assert_eq!(
        (only.file.as_deref(), only.key.as_deref()),
        (Some(files.user.as_path()), None)
    );
    assert!(
        only.reason.starts_with("syntax error at line 1, column "),
        "{}",
        only.reason
    );
}

#[test]
fn explicit_user_file_must_exist() {
    let files = files(None, None);
    let loaded = load(&ConfigSources {
        user: Some(files.user.clone()),
        user_must_exist: true,
        project: None,
    });
    assert_eq!(loaded.config, Config::default());
    assert_eq!(loaded.diagnostics.len(), 1);
    assert_eq!(
        loaded.diagnostics[0].reason,
        "file not found (it is named by MAGIC_CONTEXT_CONFIG); check the path"
    );
}

#[test]
fn null_resets_to_the_default_and_model_thresholds_merge() {
    let files = files(
        Some(
            r#"{ "pass": { "execute_threshold_percent": 70, "execute_threshold_by_model": { "gpt-5": { "percent": 80 } } } }"#,
        ),
        Some(
            r#"{ "pass": { "execute_threshold_percent": null, "execute_threshold_by_model": { "gpt-5": { "tokens": 150000 } } } }"#,
        ),
    );
    let loaded = load_files(&files);
    assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
    assert_eq!(loaded.config.pass.execute_threshold_percent.get(), 65);
    // credited to the file that reset it, which is where the user has to look
    assert_eq!(
        loaded.provenance["pass.execute_threshold_percent"],
        Source::Project(files.project.clone())
    );
    // both spellings are set for gpt-5 (percent by the user, tokens by the project): tokens win
    assert_eq!(
        loaded.config.pass.execute_threshold_for("gpt-5"),
        ExecuteThreshold::Tokens(Tokens(150_000))
    );
    assert_eq!(
        loaded.provenance["pass.execute_threshold_by_model.gpt-5.tokens"],
        Source::Project(files.project.clone())
    );
}

#[test]
fn a_null_section_resets_the_whole_section() {
    let files = files(
        Some(
            r#"{ "reduction": { "protected_tags": 5, "nudges": false }, "expand": { "cap_tokens": 20000 } }"#,
        ),
        Some(r#"{ "reduction": null }"#),
    );
    let loaded = load_files(&files);
    assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
    assert_eq!(loaded.config.reduction, Config::default().reduction);
    assert_eq!(loaded.config.expand.cap_tokens, Tokens(20_000));
    assert_eq!(
        loaded.provenance["reduction.nudges"],
        Source::Project(files.project.clone())
    );
    assert_eq!(
        loaded.provenance["expand.cap_tokens"],
        Source::User(files.user.clone())
    );
}
