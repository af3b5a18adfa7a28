//! The config page: the effective settings with where each came from, what was ignored,
//! and the user file (or a project's file) edited in place ([`super::config`]).

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::response::Html;
use maud::{Markup, html};

use super::config::{ConfigFile, ConfigQuery, ConfigView};
use super::config_sources::{projects_with_folders, read_view};
use super::error::PageError;
use super::page_layout::{Page, Section, render};
use super::state::Dashboard;
use super::store_work;

/// `GET /_magic-context/ui/config?project=`.
pub async fn page(
    State(dashboard): State<Arc<Dashboard>>,
    query: Result<Query<ConfigQuery>, QueryRejection>,
) -> Result<Html<String>, PageError> {
    let Query(query) = query?;
    let token = dashboard.token().await?.as_str().to_owned();
    let projects = store_work::read(&dashboard.app, projects_with_folders).await?;
    let shown = read_view(&dashboard.app, &query).await?;
    Ok(render(Page {
        title: "Config",
        section: Section::Config,
        token: &token,
        refresh_from: None,
        body: body(&projects, &shown),
    }))
}

/// The page's content.
fn body(projects: &[String], shown: &ConfigView) -> Markup {
    let current = shown.project.as_deref().unwrap_or_default();
    html! {
        form.filter method="get" {
            label { "Project file of "
                select name="project" {
                    option value="" selected[current.is_empty()] { "none (the user file only)" }
                    @for known in projects {
                        option value=(known) selected[known == current] { (known) }
                    }
                }
            }
            button type="submit" { "Show" }
        }
        p.note { "serve reads the user file when it starts: a saved change applies from its next start. A project's file applies to the commands run in that project." }
        @for file in &shown.files { (editor(file, shown.project.as_deref())) }
        h2 { "Ignored" }
        @if shown.problems.is_empty() {
            p.empty { "Nothing: every key of every file applies." }
        } @else {
            ul #config-problems { @for problem in &shown.problems {
                li {
                    @if let Some(file) = &problem.file { code { (file) } ": " }
                    @if let Some(key) = &problem.key { code { (key) } ": " }
                    (problem.reason)
                }
            } }
        }
        h2 { "Effective settings" }
        table #config-settings {
            thead { tr { th { "Key" } th { "Value" } th { "From" } } }
            tbody { @for setting in &shown.settings {
                tr class=(if setting.source == "default" { "" } else { "set" }) {
                    td { code { (setting.key) } }
                    td { code { (setting.value) } }
                    td { (setting.source) }
                }
            } }
        }
    }
}

/// One file's editor: its text, saved only once it loads without a problem.
fn editor(file: &ConfigFile, project: Option<&str>) -> Markup {
    html! {
        h2 { "The " (file.layer) " file" }
        p.meta { code { (file.path) } @if !file.exists { " (not written yet)" } }
        form.change data-api="/_magic-context/api/config" {
            input type="hidden" name="layer" value=(file.layer);
            input type="hidden" name="project" value=(project.unwrap_or_default());
            textarea name="text" rows="12" spellcheck="false" { (file.text) }
            button type="submit" { "Check and save" }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dashboard::config::{Problem, Setting};
    use serde_json::json;

    #[test]
    fn the_page_shows_each_file_the_ignored_keys_and_where_values_came_from() {
        let shown = ConfigView {
            project: Some("p1".to_owned()),
            files: vec![ConfigFile {
                layer: "user",
                path: "/home/u/.config/magic-context/magic-context.jsonc".to_owned(),
                text: "// mine\n{\"pass\": {\"execute_threshold_percent\": 60}}".to_owned(),
                exists: true,
            }],
            settings: vec![
                Setting {
                    key: "pass.execute_threshold_percent".to_owned(),
                    value: json!(60),
                    source: "/home/u/.config/magic-context/magic-context.jsonc".to_owned(),
                },
                Setting {
                    key: "tools.mode".to_owned(),
                    value: json!("auto"),
                    source: "default".to_owned(),
                },
            ],
            problems: vec![Problem {
                file: Some("/p1/.magic-context.jsonc".to_owned()),
                key: Some("pass.nonsense".to_owned()),
                reason: "unknown key <ignored>".to_owned(),
            }],
        };
        let html = body(&["p1".to_owned()], &shown).into_string();
        insta::assert_snapshot!(html);
        assert!(html.contains("unknown key &lt;ignored&gt;"));
    }
}
