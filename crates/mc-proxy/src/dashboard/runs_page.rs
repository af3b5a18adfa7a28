//! The runs page: what the historian and the dreamer did in the background, newest first,
//! with their outcome, tokens and cost at list price.

use std::sync::Arc;

use axum::extract::State;
use axum::response::Html;
use maud::{Markup, html};

use super::error::PageError;
use super::figures::{age, tokens, usd};
use super::page_layout::{Page, Section, render};
use super::runs::{Runs, recent_runs};
use super::sessions_page::session_url;
use super::state::Dashboard;
use super::store_work;
use crate::clock::now_ms;

/// `GET /_magic-context/ui/runs`.
pub async fn page(State(dashboard): State<Arc<Dashboard>>) -> Result<Html<String>, PageError> {
    let token = dashboard.token().await?.as_str().to_owned();
    let runs = store_work::read(&dashboard.app, recent_runs).await?;
    Ok(render(Page {
        title: "Runs",
        section: Section::Runs,
        token: &token,
        refresh_from: Some("/_magic-context/api/runs".to_owned()),
        body: body(&runs, now_ms()),
    }))
}

/// The page's content; `now` dates the ages shown.
fn body(runs: &Runs, now: i64) -> Markup {
    html! {
        h2 { "Historian" }
        @if runs.historian.is_empty() {
            p.empty { "No historian run yet." }
        } @else {
            table #historian-runs { thead { tr {
                th { "Started" } th { "Session" } th { "Messages" } th { "Outcome" } th { "Model" }
                th { "Tokens in / out" } th { "Cost (list)" } th { "Compartments" }
            } }
                tbody { @for row in &runs.historian {
                    tr {
                        td { (age(now, row.run.started_ms)) }
                        td { a href=(session_url(&row.session)) { (row.session) } }
                        td { (row.run.chunk.0) "–" (row.run.chunk.1) }
                        td { (row.run.outcome) @if let Some(detail) = &row.run.detail { ": " (detail) } }
                        td { (row.run.model.as_deref().unwrap_or("–")) }
                        td.num { (tokens(row.run.input_tokens)) " / " (tokens(row.run.output_tokens)) }
                        td.num { (usd(row.run.cost_usd)) }
                        td.num { (row.run.compartments) }
                    }
                } }
            }
        }
        h2 { "Dreamer" }
        @if runs.dreamer.is_empty() {
            p.empty { "No dreamer run yet." }
        } @else {
            table #dreamer-runs { thead { tr {
                th { "Started" } th { "Task" } th { "Project" } th { "Outcome" } th { "Model" }
                th { "Tokens in / out" } th { "Cost (list)" } th { "Changes" }
            } }
                tbody { @for run in &runs.dreamer {
                    tr {
                        td { (age(now, run.started_ms)) }
                        td { (run.task) }
                        td { (run.project) }
                        td {
                            (run.outcome)
                            @if let Some(class) = &run.failure_class { " (" (class) ")" }
                            @if let Some(detail) = &run.detail { ": " (detail) }
                        }
                        td { (run.model.as_deref().unwrap_or("–")) }
                        td.num { (tokens(run.input_tokens)) " / " (tokens(run.output_tokens)) }
                        td.num { (usd(run.cost_usd)) }
                        td.num { (run.changes) }
                    }
                } }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dashboard::runs::{DreamerRunRow, HistorianRunRow};
    use crate::dashboard::session_detail::RunView;

    const NOW_MS: i64 = 1_800_000_000_000;

    #[test]
    fn both_kinds_of_run_are_pinned() {
        let runs = Runs {
            historian: vec![HistorianRunRow {
                session: "s-1".to_owned(),
                run: RunView {
                    started_ms: NOW_MS - 3_600_000,
                    took_ms: 4_000,
                    chunk: (0, 41),
                    outcome: "published".to_owned(),
                    model: Some("claude-haiku-4-5".to_owned()),
                    calls: 1,
                    input_tokens: 20_000,
                    output_tokens: 900,
                    cost_usd: 0.0245,
                    compartments: 2,
                    detail: None,
                },
            }],
            dreamer: vec![DreamerRunRow {
                task: "verify_memories".to_owned(),
                project: "p-1".to_owned(),
                started_ms: NOW_MS - 60_000,
                took_ms: 9_000,
                outcome: "failed",
                model: Some("claude-haiku-4-5".to_owned()),
                model_calls: 2,
                input_tokens: 5_000,
                output_tokens: 300,
                cost_usd: 0.0065,
                changes: 0,
                failure_class: Some("rate_limited".to_owned()),
                detail: Some("429 <too many> requests".to_owned()),
            }],
        };
        insta::assert_snapshot!(body(&runs, NOW_MS).into_string());
        let empty = Runs {
            historian: Vec::new(),
            dreamer: Vec::new(),
        };
        let html = body(&empty, NOW_MS).into_string();
        assert!(html.contains("No historian run yet."), "{html}");
        assert!(html.contains("No dreamer run yet."), "{html}");
    }
}
