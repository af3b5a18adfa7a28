//! The sessions page: every session's standing in one table, sortable by any figure an
//! operator scans for and filterable by project; it reloads when the list changes.

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::response::Html;
use maud::{Markup, html};

use super::error::PageError;
use super::figures::{age, share, tokens, usd};
use super::memories::known_projects;
use super::page_layout::{Page, Section, render};
use super::session_list::{ListQuery, SessionSummary, SortKey, list_sessions};
use super::state::Dashboard;
use super::store_work;
use crate::clock::now_ms;

/// `GET /_magic-context/ui/`.
pub async fn page(
    State(dashboard): State<Arc<Dashboard>>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Html<String>, PageError> {
    let Query(query) = query?;
    let token = dashboard.token().await?.as_str().to_owned();
    let listed = query.clone();
    let (rows, projects) = store_work::read(&dashboard.app, move |tx| {
        Ok((list_sessions(tx, &listed)?, known_projects(tx)?))
    })
    .await?;
    let project = query.project.clone().unwrap_or_default();
    let refresh = format!(
        "/_magic-context/api/sessions?sort={}&project={}",
        query.sort.as_str(),
        url_component(&project)
    );
    Ok(render(Page {
        title: "Sessions",
        section: Section::Sessions,
        token: &token,
        refresh_from: Some(refresh),
        body: body(&rows, &projects, &query, now_ms()),
    }))
}

fn body(rows: &[SessionSummary], projects: &[String], query: &ListQuery, now: i64) -> Markup {
    let project = query.project.as_deref().unwrap_or_default();
    let sort_link =
        |key: SortKey| format!("?sort={}&project={}", key.as_str(), url_component(project));
    let header = |key: SortKey, label: &str| {
        html! {
            th {
                a href=(sort_link(key)) class=(if query.sort == key { "sorted" } else { "" }) {
                    (label)
                }
            }
        }
    };
    html! {
        form.filter method="get" {
            label { "Project "
                select name="project" {
                    option value="" { "all" }
                    @for known in projects {
                        option value=(known) selected[known == project] { (known) }
                    }
                }
            }
            input type="hidden" name="sort" value=(query.sort.as_str());
            button type="submit" { "Filter" }
        }
        @if rows.is_empty() {
            p.empty { "No sessions yet: point your agent at this proxy." }
        } @else {
            table #sessions {
                thead { tr {
                    th { "Session" } th { "Host" } (header(SortKey::Project, "Project")) th { "Mode" }
                    th { "Wire · last pass" } th { "Model" }
                    (header(SortKey::ContextUsed, "Context used"))
                    (header(SortKey::CacheReadShare, "Cache read"))
                    (header(SortKey::Busts, "Busts by cause"))
                    (header(SortKey::Cost, "Cost (list)"))
                    (header(SortKey::LastActivity, "Last activity"))
                } }
                tbody {
                    @for row in rows {
                        tr.session data-id=(row.id) {
                            td { a href=(session_url(&row.id)) { (row.id) } }
                            td { (row.host) }
                            td { (row.project.as_deref().unwrap_or("–")) }
                            td.mode {
                                (row.mode.replace('_', " "))
                                @if let Some(parent) = &row.spawned_by {
                                    " of "
                                    a href=(session_url(parent)) { (parent) }
                                }
                            }
                            td { (row.wire.as_deref().unwrap_or("–")) " · " (row.last_pass.as_deref().unwrap_or("–")) }
                            td { (row.model.as_deref().unwrap_or("–")) }
                            td.num {
                                @match (row.context_used_tokens, row.usable_window) {
                                    (Some(used), Some(window)) => {
                                        (tokens(used)) " / " (tokens(window)) " (" (share(row.context_used_share)) ")"
                                        (meter(row.context_used_share))
                                    }
                                    (Some(used), None) => { (tokens(used)) " / ?" }
                                    (None, _) => { "–" }
                                }
                            }
                            td.num { (share(row.cache_read_share)) }
                            td {
                                @if row.busts.is_empty() { "none" }
                                @for bust in &row.busts { span.bust { (bust.cause) " ×" (bust.passes) } " " }
                            }
                            td.num { (usd(row.cost_usd)) }
                            td { (age(now, row.last_seen_ms)) }
                        }
                    }
                }
            }
        }
    }
}

/// A bar showing how full the window is.
fn meter(share: Option<f64>) -> Markup {
    let percent = share.unwrap_or(0.0).clamp(0.0, 1.0) * 100.0;
    html! {
        svg.meter width="100" height="6" viewBox="0 0 100 6" role="img" {
            rect.meter-back width="100" height="6" {}
            rect.meter-fill width=(format!("{percent:.1}")) height="6" {}
        }
    }
}

/// The page of session `id`.
pub fn session_url(id: &str) -> String {
    format!("/_magic-context/ui/sessions/{}", url_component(id))
}

/// `value` escaped for a URL's path segment or query value.
pub fn url_component(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}
