//! `workspaces`: user file only, every problem named at its key, defaults documented.

use std::path::{Path, PathBuf};

use mc_config::{ConfigSources, Diagnostic, LoadedConfig, Source, load};
use mc_core::config::WorkspaceConfig;
use mc_core::head::MemoryCategory;

struct Files {
    _dir: tempfile::TempDir,
    user: PathBuf,
    project: PathBuf,
}

fn files(user: &str, project: Option<&str>) -> Files {
    let dir = tempfile::tempdir().unwrap();
    let user_path = dir.path().join("user.jsonc");
    let project_path = dir.path().join("project.jsonc");
    std::fs::write(&user_path, user).unwrap();
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
fn a_user_workspace_is_tidied_and_shares_all_categories_by_default() {
    let files = files(
        r#"{ "workspaces": {
            // a service and its client
            "shop": { "projects": ["~/src/shop-api/", "/home/dev//shop-web"] },
            "docs": { "projects": ["~/a", "~/b"], "categories": ["naming", "PROJECT_RULES", "Naming"] },
        } }"#,
        None,
    );
    let loaded = load_files(&files);
    assert_eq!(loaded.diagnostics, []);
    let workspaces = &loaded.config.workspaces;
    assert_eq!(
        workspaces["shop"],
        WorkspaceConfig {
            projects: vec!["~/src/shop-api".into(), "/home/dev/shop-web".into()],
            categories: MemoryCategory::ALL.to_vec(),
        }
    );
    assert_eq!(
        workspaces["docs"].categories,
        [MemoryCategory::ProjectRules, MemoryCategory::Naming]
    );
    assert_eq!(
        loaded.provenance["workspaces.shop.projects"],
        Source::User(files.user.clone())
    );
    // `config show` lists each workspace's keys with their values.
    let shown: Vec<(String, serde_json::Value)> = loaded
        .entries()
        .into_iter()
        .filter(|(key, _, _)| key.starts_with("workspaces"))
        .map(|(key, value, _)| (key, value))
        .collect();
    assert_eq!(
        shown,
        [
            (
                "workspaces.docs.projects".to_owned(),
                serde_json::json!(["~/a", "~/b"])
            ),
            (
                "workspaces.docs.categories".to_owned(),
                serde_json::json!(["PROJECT_RULES", "NAMING"])
            ),
            (
                "workspaces.shop.projects".to_owned(),
                serde_json::json!(["~/src/shop-api", "/home/dev/shop-web"])
            ),
            (
                "workspaces.shop.categories".to_owned(),
                serde_json::json!([
                    "PROJECT_RULES",
                    "ARCHITECTURE",
                    "CONSTRAINTS",
                    "CONFIG_VALUES",
                    "NAMING"
                ])
            ),
        ]
    );
}

#[test]
fn a_project_file_cannot_join_or_change_workspaces() {
    let files = files(
        r#"{ "workspaces": { "shop": { "projects": ["~/api", "~/web"] } } }"#,
        Some(
            r#"{ "workspaces": { "shop": { "projects": ["~/api", "~/web", "~/stranger"] } },
                 "pass": { "execute_threshold_percent": 70 } }"#,
        ),
    );
    let loaded = load_files(&files);
    assert_eq!(
        loaded.diagnostics,
        [diagnostic(
            &files.project,
            "workspaces",
            "`workspaces` is read from the user config only (`magic-context config show` names \
             it): a project's own file cannot join other projects' memories"
        )]
    );
    assert_eq!(
        loaded.config.workspaces["shop"].projects,
        ["~/api", "~/web"]
    );
    // The rest of the project file still applies.
    assert_eq!(loaded.config.pass.execute_threshold_percent.get(), 70);

    let only_project =
        files_without_user(r#"{ "workspaces": { "mine": { "projects": ["~/x", "~/y"] } } }"#);
    let loaded = load_files(&only_project);
    assert!(loaded.config.workspaces.is_empty());
    assert_eq!(loaded.diagnostics.len(), 1);
    assert_eq!(loaded.diagnostics[0].key.as_deref(), Some("workspaces"));
}

fn files_without_user(project: &str) -> Files {
    files("{}", Some(project))
}

#[test]
fn each_problem_is_named_at_its_key_and_drops_its_workspace() {
    let files = files(
        r#"{ "workspaces": {
            "good": { "projects": ["/srv/a", "/srv/b"] },
            "relative": { "projects": ["/srv/a", "src/b"] },
            "twice": { "projects": ["/srv/a", "/srv/a/"] },
            "alone": { "projects": ["/srv/a"] },
            "typo": { "projects": ["/srv/a", "/srv/b"], "categories": ["ARCHITECTURE", "ARCH"] },
            "none": { "projects": ["/srv/a", "/srv/b"], "categories": [] },
            "no roots": { "projects": ["/srv/a", "/srv/b"] },
            "unlisted": { "categories": ["NAMING"] },
            "extra": { "projects": ["/srv/a", "/srv/b"], "members": [] },
        } }"#,
        None,
    );
    let loaded = load_files(&files);
    let user = &files.user;
    assert_eq!(
        loaded.diagnostics,
        [
            diagnostic(
                user,
                "workspaces.relative.projects.1",
                "`src/b` is relative; write the project's root as an absolute path \
                 (`/home/me/src/api`) or from the home folder (`~/src/api`)"
            ),
            diagnostic(
                user,
                "workspaces.twice.projects.1",
                "`/srv/a` is already listed (entry 0); list each project once"
            ),
            diagnostic(
                user,
                "workspaces.alone.projects",
                "a workspace shares memories between projects: list at least two roots, not 1"
            ),
            diagnostic(
                user,
                "workspaces.typo.categories.1",
                "unknown memory category `ARCH`; use PROJECT_RULES, ARCHITECTURE, CONSTRAINTS, \
                 CONFIG_VALUES, NAMING"
            ),
            diagnostic(
                user,
                "workspaces.none.categories",
                "list at least one category, or leave `categories` out to share all five"
            ),
            diagnostic(
                user,
                "workspaces.\"no roots\"",
                "`no roots` cannot name a workspace: use 1 to 64 letters, digits, `-`, `_` or `.`"
            ),
            diagnostic(
                user,
                "workspaces.extra.members",
                "unknown key `members`; expected one of `projects`, `categories`"
            ),
            diagnostic(
                user,
                "workspaces.unlisted.projects",
                "list the workspace's project roots, at least two, e.g. [\"~/src/api\", \"~/src/web\"]"
            ),
        ]
    );
    let kept: Vec<&str> = loaded
        .config
        .workspaces
        .keys()
        .map(String::as_str)
        .collect();
    // A workspace with any bad key is left out whole: falling back key by key would have
    // `typo` share every category.
    assert_eq!(kept, ["good"]);
}

#[test]
fn a_project_file_cannot_choose_the_team_store() {
    let files = files(
        r#"{ "team_store": { "url": "postgres://me:mine@127.0.0.1/team" } }"#,
        Some(r#"{ "team_store": { "url": "postgres://them:theirs@evil.example/loot" } }"#),
    );
    let loaded = load_files(&files);
    assert_eq!(
        loaded.diagnostics,
        [diagnostic(
            &files.project,
            "team_store",
            "`team_store` is read from the user config only (`magic-context config show` names \
             it): a project's own file cannot send its user's memories to a server"
        )]
    );
    let url = loaded.config.team_store.url.unwrap();
    assert_eq!(url.redacted(), "postgres://me:<redacted>@127.0.0.1/team");
}
