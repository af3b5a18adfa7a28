//! A session's page: its figures, its cache timeline call by call, its compartments grouped
//! by the tier the decay renderer shows them at, the drops waiting for a bust, the
//! historian's runs, and the raw message log around any ordinal (`?around=N`).

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::Html;
use maud::{Markup, html};
use mc_core::head::DetailTier;

use super::api::{Around, read_log, read_session};
use super::composition::Composition;
use super::error::PageError;
use super::figures::{age, share, tokens, usd};
use super::host_compaction::HostCompactionComparison;
use super::memories_page::memories_url;
use super::page_layout::{Page, Section, render};
use super::session_detail::{CompartmentView, LogWindow, SessionDetail};
use super::sessions_page::{session_url, url_component};
use super::state::Dashboard;
use super::timeline_svg::{Limits, timeline};
use crate::clock::now_ms;

/// Tiers in the order the page lists them, most detailed first.
const TIERS: [DetailTier; 5] = [
    DetailTier::Full,
    DetailTier::Condensed,
    DetailTier::Paragraph,
    DetailTier::Line,
    DetailTier::Heading,
];

/// `GET /_magic-context/ui/sessions/{id}?around=N`.
pub async fn page(
    State(dashboard): State<Arc<Dashboard>>,
    Path(id): Path<String>,
    around: Result<Query<Around>, QueryRejection>,
) -> Result<Html<String>, PageError> {
    let Query(around) = around?;
    let token = dashboard.token().await?.as_str().to_owned();
    let detail = read_session(&dashboard, &id).await?;
    let log = read_log(&dashboard, &id, around.around).await?;
    Ok(render(Page {
        title: &format!("Session {id}"),
        section: Section::Sessions,
        token: &token,
        refresh_from: Some(format!(
            "/_magic-context/api/sessions/{}",
            url_component(&id)
        )),
        body: body(&detail, &log, around.around, now_ms()),
    }))
}

/// The page's content, the raw log opened `around` an ordinal; `now` dates the ages shown.
pub fn body(detail: &SessionDetail, log: &LogWindow, around: u64, now: i64) -> Markup {
    let summary = &detail.summary;
    html! {
        (figures(detail, now))
        h2 { "Cache timeline" }
        p.legend {
            span.key.read { "cache read" } " " span.key.write { "cache write" } " "
            span.key.uncached { "uncached" } " " span.key.bust { "▼ bust" } " "
            span.key.window { "usable window" } " " span.key.threshold { "execute threshold" }
        }
        (timeline(&detail.timeline, Limits {
            usable_window: summary.usable_window,
            execute_threshold_percent: detail.execute_threshold_percent,
        }))
        h2 { "The prompt now" }
        (prompt_parts(detail.composition.as_ref()))
        h2 { "Compartments by tier" }
        (compartments(&detail.compartments))
        h2 { "Pending drops" }
        @if detail.pending_drops.is_empty() {
            p.empty { "None: nothing waits for the next bust." }
        } @else {
            table { thead { tr { th { "Tag" } th { "Asked by" } th { "Queued" } } }
                tbody { @for drop in &detail.pending_drops {
                    tr { td { "§" (drop.tag) "§" } td { (drop.source) } td { (age(now, drop.queued_ms)) } }
                } }
            }
        }
        h2 { "Historian runs" }
        @if detail.historian_runs.is_empty() {
            p.empty { "No historian run yet." }
        } @else {
            table { thead { tr {
                th { "Started" } th { "Messages" } th { "Outcome" } th { "Model" }
                th { "Tokens in / out" } th { "Cost (list)" } th { "Compartments" }
            } }
                tbody { @for run in &detail.historian_runs {
                    tr {
                        td { (age(now, run.started_ms)) }
                        td { (run.chunk.0) "–" (run.chunk.1) }
                        td { (run.outcome) @if let Some(detail) = &run.detail { ": " (detail) } }
                        td { (run.model.as_deref().unwrap_or("–")) }
                        td.num { (tokens(run.input_tokens)) " / " (tokens(run.output_tokens)) }
                        td.num { (usd(run.cost_usd)) }
                        td.num { (run.compartments) }
                    }
                } }
            }
        }
        h2 #log { "Raw log" }
        form.filter method="get" action="#log" {
            label { "Around message " input type="number" name="around" min="0" value=(around); }
            button type="submit" { "Show" }
        }
        @match log.end {
            None => p.empty { "No messages there." },
            Some(end) => {
                p { "Messages " (log.start) "–" (end) " of " (detail.message_count) ":" }
                pre.log { @for line in &log.lines { (line) "\n" } }
            }
        }
    }
}

/// The session's figures: who and where it is, how full, what it cost.
fn figures(detail: &SessionDetail, now: i64) -> Markup {
    let summary = &detail.summary;
    html! {
        dl.figures {
            dt { "Host" } dd { (summary.host) }
            dt { "Project" } dd {
                @match &summary.project {
                    Some(project) => a href=(memories_url(project)) title="its memories" { (project) },
                    None => "–",
                }
            }
            dt { "Mode" } dd {
                (summary.mode.replace('_', " "))
                @if let Some(parent) = &summary.spawned_by {
                    " of " a href=(session_url(parent)) { (parent) }
                }
            }
            @if let Some(earlier) = &detail.continues {
                dt { "Continues" } dd {
                    a href=(session_url(earlier)) { (earlier) }
                    " (the client compacted it; its head carries what it held)"
                }
            }
            dt { "Model" } dd { (summary.model.as_deref().unwrap_or("–")) }
            dt { "Context used" } dd {
                (summary.context_used_tokens.map_or_else(|| "–".to_owned(), tokens))
                " / " (summary.usable_window.map_or_else(|| "?".to_owned(), tokens))
                " (" (share(summary.context_used_share)) ")"
            }
            dt { "Cache read" } dd { (share(summary.cache_read_share)) }
            dt { "Calls" } dd { (summary.calls) }
            dt { "Busts" } dd {
                @if summary.busts.is_empty() { "none" }
                @for bust in &summary.busts { span.bust { (bust.cause) " ×" (bust.passes) } " " }
            }
            dt { "Cost (list)" } dd { (usd(summary.cost_usd)) }
            dt { "Host's own compaction" } dd #host-compaction {
                (host_compaction(detail.host_compaction.as_ref()))
            }
            dt { "Messages" } dd { (detail.message_count) }
            dt { "Last activity" } dd { (age(now, summary.last_seen_ms)) }
        }
    }
}

/// The session's cost beside the host's own compaction on the same calls, labelled as the
/// estimate it is.
fn host_compaction(comparison: Option<&HostCompactionComparison>) -> Markup {
    let Some(comparison) = comparison else {
        return html! {
            span.empty { "no estimate: no call of this session recorded the client's own prompt" }
        };
    };
    let estimate = &comparison.estimate;
    html! {
        "about " strong { (usd(estimate.cost_usd)) } " (estimate) against "
        strong { (usd(comparison.session_cost_usd)) } " here"
        " (calls " (usd(comparison.calls_cost_usd))
        " + historian " (usd(comparison.historian_cost_usd)) ")"
        br;
        span.meta {
            "Claude Code's rule over the client's own prompts: "
            (estimate.compactions) " compaction" @if estimate.compactions != 1 { "s" }
            ", list prices, 5-minute cache"
            @if comparison.calls_compared < comparison.calls_total {
                "; over " (comparison.calls_compared) " of " (comparison.calls_total)
                " calls (the others failed or were recorded before the client's prompt was)"
            }
        }
    }
}

/// What the prompt is made of, in tokens (the engine's estimates; the system prompt and
/// tools are what the provider counted beyond them).
fn prompt_parts(composition: Option<&Composition>) -> Markup {
    let Some(parts) = composition else {
        return html! { p.empty { "No pass yet." } };
    };
    let unknown = || "–".to_owned();
    html! {
        table #prompt-parts {
            thead { tr { th { "Part" } th { "Tokens" } } }
            tbody {
                tr { td { "System prompt and tools" }
                     td.num { (parts.system_and_tools_tokens.map_or_else(unknown, tokens)) } }
                tr { td { "m[0]: history, memories and docs as of the last fold" }
                     td.num { (tokens(parts.m0_tokens)) } }
                tr { td { "m[1]: what changed since" } td.num { (tokens(parts.m1_tokens)) } }
                tr { td { "Raw tail, from message " (parts.boundary) }
                     td.num { (tokens(parts.tail_tokens)) } }
                tr { td { "of which shown smaller (excerpts, clipped inputs)" }
                     td.num { (tokens(parts.reshaped_tokens)) } }
                tr { td { "Whole prompt, as the provider counted the last call" }
                     td.num { (parts.reported_tokens.map_or_else(unknown, tokens)) } }
            }
        }
    }
}

/// The compartments grouped by tier, each with the ordinals it covers.
fn compartments(all: &[CompartmentView]) -> Markup {
    if all.is_empty() {
        return html! { p.empty { "No compartments yet: the historian has not summarised this session." } };
    }
    html! {
        @for tier in TIERS {
            @let shown: Vec<&CompartmentView> = all.iter().filter(|view| view.tier == tier).collect();
            @if !shown.is_empty() {
                h3 { (tier_name(tier)) " (" (shown.len()) ")" }
                ul.compartments { @for view in shown {
                    li {
                        span.range { (view.start_ordinal) "–" (view.end_ordinal) }
                        " " strong { (view.title) }
                        " · importance " (view.importance)
                        @if !view.line.is_empty() { br; span.line { (view.line) } }
                    }
                } }
            }
        }
    }
}

fn tier_name(tier: DetailTier) -> &'static str {
    match tier {
        DetailTier::Full => "Full",
        DetailTier::Condensed => "Condensed",
        DetailTier::Paragraph => "Paragraph",
        DetailTier::Line => "One line",
        DetailTier::Heading => "Heading and the user's words",
        DetailTier::Title => "Heading only",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dashboard::page_layout::{Page, Section, render};
    use crate::dashboard::session_detail::{PendingDrop, RunView, TimelineCall};
    use crate::dashboard::session_list::{BustSummary, SessionSummary};
    use mc_core::host_compaction::HostCompactionEstimate;

    const NOW_MS: i64 = 1_800_000_000_000;

    fn call(
        minutes_ago: i64,
        read: u64,
        write: u64,
        kind: &str,
        cause: Option<&str>,
    ) -> TimelineCall {
        TimelineCall {
            started_ms: NOW_MS - minutes_ago * 60_000,
            model: "claude-sonnet-4-5".to_owned(),
            pass_kind: Some(kind.to_owned()),
            bust_cause: cause.map(str::to_owned),
            status: 200,
            uncached_tokens: 40,
            cache_write_tokens: write,
            cache_read_tokens: read,
            output_tokens: 300,
            usable_window: Some(180_000),
            cost_usd: 0.01,
        }
    }

    fn detail() -> SessionDetail {
        SessionDetail {
            summary: SessionSummary {
                id: "s-1".to_owned(),
                host: "claude-code".to_owned(),
                project: Some("p-1".to_owned()),
                mode: "subagent".to_owned(),
                spawned_by: Some("s-0".to_owned()),
                wire: Some("anthropic".to_owned()),
                last_pass: Some("cache_hit".to_owned()),
                model: Some("claude-sonnet-4-5".to_owned()),
                context_used_tokens: Some(92_040),
                usable_window: Some(180_000),
                context_used_share: Some(92_040.0 / 180_000.0),
                cache_read_share: Some(0.91),
                busts: vec![
                    BustSummary {
                        cause: "first_render".to_owned(),
                        passes: 1,
                    },
                    BustSummary {
                        cause: "threshold".to_owned(),
                        passes: 1,
                    },
                ],
                bust_total: 2,
                calls: 4,
                cost_usd: 0.8312,
                pending_drops: 1,
                last_seen_ms: NOW_MS - 90_000,
            },
            execute_threshold_percent: 65,
            continues: Some("s-before".to_owned()),
            composition: Some(Composition {
                reported_tokens: Some(92_040),
                system_and_tools_tokens: Some(18_040),
                m0_tokens: 9_000,
                m1_tokens: 1_000,
                tail_tokens: 64_000,
                reshaped_tokens: 2_500,
                boundary: 120,
            }),
            timeline: vec![
                call(40, 0, 30_000, "hard_fold", Some("first_render")),
                call(30, 30_000, 20_000, "cache_hit", None),
                call(20, 50_000, 70_000, "soft_bust", Some("threshold")),
                call(10, 120_000, 2_000, "cache_hit", None),
            ],
            compartments: vec![
                CompartmentView {
                    start_ordinal: 0,
                    end_ordinal: 41,
                    title: "Set up the parser".to_owned(),
                    importance: 40,
                    tier: DetailTier::Line,
                    line: "Parser skeleton with <tokens> & errors".to_owned(),
                },
                CompartmentView {
                    start_ordinal: 42,
                    end_ordinal: 90,
                    title: "Fixed the lexer".to_owned(),
                    importance: 80,
                    tier: DetailTier::Full,
                    line: String::new(),
                },
            ],
            pending_drops: vec![PendingDrop {
                tag: 17,
                source: "ctx_reduce".to_owned(),
                queued_ms: NOW_MS - 300_000,
            }],
            historian_runs: vec![RunView {
                started_ms: NOW_MS - 3_600_000,
                took_ms: 9_000,
                chunk: (0, 41),
                outcome: "published".to_owned(),
                model: Some("claude-haiku-4-5".to_owned()),
                calls: 1,
                input_tokens: 20_000,
                output_tokens: 900,
                cost_usd: 0.0245,
                compartments: 1,
                detail: None,
            }],
            message_count: 91,
            host_compaction: Some(HostCompactionComparison {
                calls_compared: 3,
                calls_total: 4,
                calls_cost_usd: 0.8012,
                historian_cost_usd: 0.0245,
                session_cost_usd: 0.8257,
                estimate: HostCompactionEstimate {
                    calls: 3,
                    compactions: 1,
                    uncached_tokens: 0,
                    cache_write_tokens: 190_000,
                    cache_read_tokens: 240_000,
                    output_tokens: 2_106,
                    cost_usd: 0.7876,
                },
            }),
        }
    }

    /// A session whose calls predate the client's prompt in the ledger says so, and shows no
    /// figure for the host.
    #[test]
    fn without_the_client_prompt_there_is_no_estimate() {
        let shown = host_compaction(None).into_string();
        assert!(shown.contains("no estimate"), "{shown}");
        assert!(!shown.contains('$'), "{shown}");
    }

    /// The whole page, framed, pinned byte for byte: a change to what the page shows or how
    /// the timeline is drawn shows up here for review.
    #[test]
    fn a_session_page_is_pinned() {
        let log = LogWindow {
            start: 80,
            end: Some(82),
            lines: vec![
                "#80 user: run the tests".to_owned(),
                "#81 assistant: §12§ 3 failed".to_owned(),
                "#82 user: fix <them>".to_owned(),
            ],
        };
        let html = render(Page {
            title: "Session s-1",
            section: Section::Sessions,
            token: "test-token",
            refresh_from: Some("/_magic-context/api/sessions/s-1".to_owned()),
            body: body(&detail(), &log, 90, NOW_MS),
        });
        insta::assert_snapshot!(html.0);
    }
}
