//! A session's cache timeline as an SVG drawn on the server: one stacked bar per upstream
//! call (cache read at the bottom, then cache write, then uncached input), each bust marked
//! above its bar with its cause, and the usable window and the execute threshold drawn
//! across.
//!
//! Drawn on the server so the page needs no chart library and no build step; colours come
//! from the stylesheet's classes, so the drawing holds only geometry. Every number is
//! formatted to one decimal, so the same calls always give the same bytes.

use maud::{Markup, html};

use super::figures::tokens;
use super::session_detail::TimelineCall;

/// The drawing's size in SVG units; the page scales it to its width.
const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 260.0;

/// Room left for the axis labels and the bust markers.
const LEFT: f64 = 64.0;
const RIGHT: f64 = 8.0;
const TOP: f64 = 18.0;
const BOTTOM: f64 = 22.0;

/// The gap between bars, as a share of each bar's slot, while bars are wide enough to show
/// one.
const GAP_SHARE: f64 = 0.2;

/// What the timeline draws besides the calls.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The usable window, when a call stated one.
    pub usable_window: Option<u64>,
    /// The execute threshold, percent of the usable window.
    pub execute_threshold_percent: u8,
}

/// The timeline of `calls` (oldest first).
pub fn timeline(calls: &[TimelineCall], limits: Limits) -> Markup {
    let window = limits.usable_window.filter(|window| *window > 0);
    let tallest = calls
        .iter()
        .map(TimelineCall::prompt_tokens)
        .chain(window)
        .max()
        .unwrap_or(0)
        .max(1);
    let plot_width = WIDTH - LEFT - RIGHT;
    let plot_height = HEIGHT - TOP - BOTTOM;
    let slot = plot_width / calls.len().max(1) as f64;
    let bar_width = if slot >= 3.0 {
        slot * (1.0 - GAP_SHARE)
    } else {
        slot
    };
    let y_of = |count: u64| TOP + plot_height * (1.0 - count as f64 / tallest as f64);
    let height_of = |count: u64| plot_height * count as f64 / tallest as f64;
    let execute = window
        .map(|window| window * u64::from(limits.execute_threshold_percent) / 100)
        .filter(|_| limits.execute_threshold_percent > 0);
    html! {
        svg.timeline viewBox=(format!("0 0 {WIDTH} {HEIGHT}")) role="img"
            aria-label=(format!("cache timeline of {} calls", calls.len())) {
            line.axis x1=(n(LEFT)) y1=(n(TOP + plot_height)) x2=(n(WIDTH - RIGHT)) y2=(n(TOP + plot_height)) {}
            text.label x=(n(LEFT - 4.0)) y=(n(TOP + 4.0)) text-anchor="end" { (tokens(tallest)) }
            text.label x=(n(LEFT - 4.0)) y=(n(TOP + plot_height)) text-anchor="end" { "0" }
            text.label x=(n(LEFT)) y=(n(HEIGHT - 6.0)) { "call 1" }
            text.label x=(n(WIDTH - RIGHT)) y=(n(HEIGHT - 6.0)) text-anchor="end" {
                "call " (calls.len())
            }
            @for (index, call) in calls.iter().enumerate() {
                @let x = LEFT + slot * index as f64 + (slot - bar_width) / 2.0;
                @let read_top = y_of(call.cache_read_tokens);
                @let write_top = read_top - height_of(call.cache_write_tokens);
                @let uncached_top = write_top - height_of(call.uncached_tokens);
                g.call data-index=(index + 1) {
                    title { (call_title(index, call)) }
                    rect.read x=(n(x)) y=(n(read_top)) width=(n(bar_width))
                        height=(n(height_of(call.cache_read_tokens))) {}
                    rect.write x=(n(x)) y=(n(write_top)) width=(n(bar_width))
                        height=(n(height_of(call.cache_write_tokens))) {}
                    rect.uncached x=(n(x)) y=(n(uncached_top)) width=(n(bar_width))
                        height=(n(height_of(call.uncached_tokens))) {}
                    @if call.is_bust() {
                        @let middle = x + bar_width / 2.0;
                        @let tip = uncached_top - 2.0;
                        path.bust d=(format!(
                            "M{} {}L{} {}L{} {}Z",
                            n(middle), n(tip),
                            n(middle - 4.0), n(tip - 8.0),
                            n(middle + 4.0), n(tip - 8.0)
                        )) {}
                    }
                }
            }
            @if let Some(window) = window {
                line.window x1=(n(LEFT)) y1=(n(y_of(window))) x2=(n(WIDTH - RIGHT)) y2=(n(y_of(window))) {
                    title { "usable window: " (tokens(window)) " tokens" }
                }
            }
            @if let Some(execute) = execute {
                line.threshold x1=(n(LEFT)) y1=(n(y_of(execute))) x2=(n(WIDTH - RIGHT)) y2=(n(y_of(execute))) {
                    title {
                        "execute threshold: " (limits.execute_threshold_percent) "% = "
                        (tokens(execute)) " tokens"
                    }
                }
            }
        }
    }
}

/// What hovering a bar says.
fn call_title(index: usize, call: &TimelineCall) -> String {
    let mut title = format!(
        "call {}: {} read, {} written, {} uncached, {} out",
        index + 1,
        tokens(call.cache_read_tokens),
        tokens(call.cache_write_tokens),
        tokens(call.uncached_tokens),
        tokens(call.output_tokens)
    );
    if let Some(kind) = &call.pass_kind {
        title.push_str(&format!("; {kind}"));
    }
    if let Some(cause) = &call.bust_cause {
        title.push_str(&format!(" ({cause})"));
    }
    if call.status >= 400 {
        title.push_str(&format!("; status {}", call.status));
    }
    title
}

/// A coordinate, to one decimal.
fn n(value: f64) -> String {
    format!("{value:.1}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(read: u64, write: u64, uncached: u64, kind: &str) -> TimelineCall {
        TimelineCall {
            started_ms: 0,
            model: "claude-sonnet-4-5".to_owned(),
            pass_kind: Some(kind.to_owned()),
            bust_cause: (kind != "cache_hit").then(|| "threshold".to_owned()),
            status: 200,
            uncached_tokens: uncached,
            cache_write_tokens: write,
            cache_read_tokens: read,
            output_tokens: 10,
            usable_window: Some(1_000),
            cost_usd: 0.0,
        }
    }

    #[test]
    fn one_bar_per_call_and_a_marker_per_bust() {
        let calls = [
            call(0, 500, 10, "hard_fold"),
            call(500, 20, 10, "cache_hit"),
            call(100, 300, 10, "soft_bust"),
        ];
        let svg = timeline(
            &calls,
            Limits {
                usable_window: Some(1_000),
                execute_threshold_percent: 65,
            },
        )
        .into_string();
        assert_eq!(svg.matches("<g class=\"call\"").count(), 3);
        assert_eq!(svg.matches("class=\"bust\"").count(), 2);
        assert_eq!(svg.matches("class=\"window\"").count(), 1);
        assert!(svg.contains("execute threshold: 65% = 650 tokens"), "{svg}");
    }

    #[test]
    fn no_calls_draw_an_empty_chart() {
        let svg = timeline(
            &[],
            Limits {
                usable_window: None,
                execute_threshold_percent: 65,
            },
        )
        .into_string();
        assert!(!svg.contains("class=\"call\""));
        assert!(!svg.contains("class=\"threshold\""));
    }
}
