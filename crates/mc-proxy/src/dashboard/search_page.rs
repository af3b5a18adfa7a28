//! The search page: one box over a project's memories, notes, earlier messages, history
//! summaries and commits ([`super::search`]), each result linked to where it lives.

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::response::Html;
use maud::{Markup, html};
use mc_engine::search::{HitPlace, SearchHit};

use super::error::PageError;
use super::figures::age;
use super::memories::known_projects;
use super::page_layout::{Page, Section, render};
use super::search::{self, SearchQuery, SearchResults};
use super::sessions_page::{session_url, url_component};
use super::state::Dashboard;
use super::store_work;
use crate::clock::now_ms;

/// `GET /_magic-context/ui/search?q=&project=`: the box, and the results when `q` is given.
pub async fn page(
    State(dashboard): State<Arc<Dashboard>>,
    query: Result<Query<SearchQuery>, QueryRejection>,
) -> Result<Html<String>, PageError> {
    let Query(query) = query?;
    let token = dashboard.token().await?.as_str().to_owned();
    let projects = store_work::read(&dashboard.app, known_projects).await?;
    let asked = query.q.as_deref().is_some_and(|q| !q.trim().is_empty());
    let results = if asked {
        Some(search::run(&dashboard.app, &query).await?)
    } else {
        None
    };
    Ok(render(Page {
        title: "Search",
        section: Section::Search,
        token: &token,
        refresh_from: None,
        body: body(&projects, &query, results.as_ref(), now_ms()),
    }))
}

/// The page's content; `now` dates the ages shown.
fn body(
    projects: &[String],
    query: &SearchQuery,
    results: Option<&SearchResults>,
    now: i64,
) -> Markup {
    let current = query.project.as_deref().unwrap_or_default();
    html! {
        form.filter method="get" {
            label { "Project "
                select name="project" {
                    option value="" selected[current.is_empty()] { "every project" }
                    @for known in projects {
                        option value=(known) selected[known == current] { (known) }
                    }
                }
            }
            label { "Words " input type="search" name="q" autofocus value=(query.q.as_deref().unwrap_or_default()); }
            button type="submit" { "Search" }
        }
        @match results {
            None => p.empty { "Memories, notes, earlier messages of every session, history summaries and commits, in one ranking." },
            Some(results) if results.results.is_empty() => p.empty { "Nothing found for “" (results.query) "”." },
            Some(results) => {
                table #search-results {
                    thead { tr { th { "#" } th { "Source" } th { "Where" } th { "When" } th { "Found by" } th { "Excerpt" } } }
                    tbody { @for (rank, hit) in results.results.iter().enumerate() {
                        tr {
                            td.num { (rank + 1) }
                            td { (hit.source) }
                            td { (place(hit, results.project.as_deref())) }
                            td { (age(now, hit.at_ms)) }
                            td { (found_by(hit)) }
                            td { (hit.preview) }
                        }
                    } }
                }
            }
        }
    }
}

/// Where a hit lives, linked to the page that shows it: a session's log around its first
/// message, or the project's memories.
fn place(hit: &SearchHit, project: Option<&str>) -> Markup {
    match &hit.place {
        HitPlace::Messages { session, start, .. } => html! {
            a href={ (session_url(session.as_str())) "?around=" (start) } { (hit.place) }
        },
        HitPlace::Memory { .. } => match project {
            Some(project) => html! {
                a href={ "/_magic-context/ui/memories?project=" (url_component(project)) } { (hit.place) }
            },
            None => html! { (hit.place) },
        },
        HitPlace::Note { .. } | HitPlace::Commit { .. } => html! { (hit.place) },
    }
}

fn found_by(hit: &SearchHit) -> &'static str {
    match (hit.full_text, hit.semantic) {
        (true, true) => "words and meaning",
        (false, true) => "meaning",
        _ => "words",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mc_core::SessionId;

    fn hit(source: &'static str, place: HitPlace, preview: &str) -> SearchHit {
        SearchHit {
            source,
            place,
            at_ms: 1_000,
            score: 1.0,
            full_text: true,
            semantic: false,
            preview: preview.to_owned(),
        }
    }

    #[test]
    fn results_link_to_where_they_live_and_are_escaped() {
        let results = SearchResults {
            query: "retry".to_owned(),
            project: Some("p/1".to_owned()),
            results: vec![
                hit(
                    "message",
                    HitPlace::Messages {
                        session: SessionId::new("s 1").unwrap(),
                        start: 7,
                        end: 7,
                    },
                    "the <retry> loop",
                ),
                hit(
                    "memory",
                    HitPlace::Memory {
                        id: 3,
                        category: "fact".to_owned(),
                        shared_by: None,
                    },
                    "retries back off",
                ),
            ],
        };
        let query = SearchQuery {
            q: Some("retry".to_owned()),
            project: Some("p/1".to_owned()),
            limit: None,
        };
        let html = body(&["p/1".to_owned()], &query, Some(&results), 61_000).into_string();
        insta::assert_snapshot!(html);
        assert!(html.contains("/_magic-context/ui/sessions/s%201?around=7"));
        assert!(html.contains("the &lt;retry&gt; loop"));
        assert!(html.contains("/_magic-context/ui/memories?project=p%2F1"));
    }

    #[test]
    fn an_empty_result_says_so() {
        let results = SearchResults {
            query: "nothing".to_owned(),
            project: None,
            results: Vec::new(),
        };
        let html = body(&[], &SearchQuery::default(), Some(&results), 0).into_string();
        assert!(html.contains("Nothing found for “nothing”"));
    }
}
