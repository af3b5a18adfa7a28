//! The `--plot` picture: context size and cumulative cost per request, one line per
//! strategy, as a self-contained SVG written by hand (no plotting dependency).
//!
//! Two panels share the x axis (the requests of every recording, one after the other, in
//! load order): the prompt each request sent, with the window drawn across, and the money
//! spent so far. Output is a pure function of the series, so it can be snapshot-tested.

use std::fmt::Write as _;

/// One strategy's line.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotSeries {
    /// The strategy's name, for the legend.
    pub name: String,
    /// Prompt tokens of each step's main request.
    pub context_tokens: Vec<u64>,
    /// Cost in USD of all calls up to and including each step.
    pub cumulative_cost_usd: Vec<f64>,
}

const WIDTH: f64 = 1000.0;
const HEIGHT: f64 = 720.0;
const LEFT: f64 = 90.0;
/// Room for the legend, whose longest name is `clear-tools-batched`.
const RIGHT: f64 = 210.0;
const TOP: f64 = 50.0;
const PANEL_HEIGHT: f64 = 260.0;
const PANEL_GAP: f64 = 80.0;
const TICKS: f64 = 5.0;

/// Line colours, in series order (a colour-blind-safe palette).
const COLOURS: [&str; 6] = [
    "#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9",
];

/// Which quantity a panel shows, which decides its tick labels.
#[derive(Clone, Copy)]
enum Unit {
    Tokens,
    Usd,
}

/// One panel's frame: where it sits and what its axes span.
struct Panel {
    top: f64,
    x_max: f64,
    y_max: f64,
}

impl Panel {
    fn width() -> f64 {
        WIDTH - LEFT - RIGHT
    }

    fn x(&self, value: f64) -> f64 {
        LEFT + value / self.x_max * Self::width()
    }

    fn y(&self, value: f64) -> f64 {
        self.top + PANEL_HEIGHT - value / self.y_max * PANEL_HEIGHT
    }
}

/// Renders the two panels for `series`, with the context window drawn at `window_tokens`.
pub fn render_svg(title: &str, series: &[PlotSeries], window_tokens: u64) -> String {
    let steps = series
        .iter()
        .map(|line| line.context_tokens.len())
        .max()
        .unwrap_or(0);
    let x_step = nice_step(steps.saturating_sub(1).max(1) as f64).max(1.0);
    let x_max = round_up(steps.saturating_sub(1).max(1) as f64, x_step);

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    svg.push_str("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    let _ = writeln!(
        svg,
        r#"<text x="{LEFT}" y="28" font-size="16" font-weight="bold">{}</text>"#,
        escape(title)
    );

    let peak = series
        .iter()
        .flat_map(|line| line.context_tokens.iter().copied())
        .max()
        .unwrap_or(0)
        .max(window_tokens) as f64;
    let y_step = nice_step(peak.max(1.0));
    let context = Panel {
        top: TOP,
        x_max,
        y_max: round_up(peak.max(1.0), y_step),
    };
    draw_axes(
        &mut svg,
        &context,
        x_step,
        y_step,
        Unit::Tokens,
        "context tokens per request",
    );
    if window_tokens > 0 {
        let y = context.y(window_tokens as f64);
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#888" stroke-dasharray="6 4"/><text x="{:.1}" y="{:.1}" text-anchor="end" fill="#555">window</text>"##,
            LEFT + Panel::width(),
            LEFT + Panel::width() - 4.0,
            y - 4.0
        );
    }
    for (index, line) in series.iter().enumerate() {
        let values: Vec<f64> = line
            .context_tokens
            .iter()
            .map(|&tokens| tokens as f64)
            .collect();
        draw_line(&mut svg, &context, &values, index);
    }

    let top_cost = series
        .iter()
        .flat_map(|line| line.cumulative_cost_usd.iter().copied())
        .fold(0.0_f64, f64::max);
    let cost_step = nice_step(if top_cost > 0.0 { top_cost } else { 1.0 });
    let cost = Panel {
        top: TOP + PANEL_HEIGHT + PANEL_GAP,
        x_max,
        y_max: round_up(if top_cost > 0.0 { top_cost } else { 1.0 }, cost_step),
    };
    draw_axes(
        &mut svg,
        &cost,
        x_step,
        cost_step,
        Unit::Usd,
        "cumulative cost (USD)",
    );
    for (index, line) in series.iter().enumerate() {
        draw_line(&mut svg, &cost, &line.cumulative_cost_usd, index);
    }
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">request (recordings one after another)</text>"#,
        LEFT + Panel::width() / 2.0,
        cost.top + PANEL_HEIGHT + 40.0
    );

    draw_legend(&mut svg, series);
    svg.push_str("</svg>\n");
    svg
}

fn colour(index: usize) -> &'static str {
    COLOURS[index % COLOURS.len()]
}

/// Later lines are dashed so that a line drawn over an identical earlier one (two strategies
/// that never acted differently) leaves the earlier one visible.
fn dashes(index: usize) -> &'static str {
    match index {
        0 => "",
        _ => r#" stroke-dasharray="7 3""#,
    }
}

fn draw_axes(svg: &mut String, panel: &Panel, x_step: f64, y_step: f64, unit: Unit, label: &str) {
    let bottom = panel.top + PANEL_HEIGHT;
    let right = LEFT + Panel::width();
    let mut tick = 0.0;
    while tick <= panel.y_max + y_step / 2.0 {
        let y = panel.y(tick);
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{right:.1}" y2="{y:.1}" stroke="#e5e5e5"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT - 8.0,
            y + 4.0,
            format_value(tick, y_step, unit)
        );
        tick += y_step;
    }
    let mut tick = 0.0;
    while tick <= panel.x_max + x_step / 2.0 {
        let x = panel.x(tick);
        let _ = writeln!(
            svg,
            r##"<line x1="{x:.1}" y1="{bottom:.1}" x2="{x:.1}" y2="{:.1}" stroke="#333"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            bottom + 5.0,
            bottom + 19.0,
            tick.round()
        );
        tick += x_step;
    }
    let _ = writeln!(
        svg,
        r##"<polyline points="{LEFT},{:.1} {LEFT},{bottom:.1} {right:.1},{bottom:.1}" fill="none" stroke="#333"/>"##,
        panel.top
    );
    let middle = panel.top + PANEL_HEIGHT / 2.0;
    let _ = writeln!(
        svg,
        r#"<text x="20" y="{middle:.1}" text-anchor="middle" transform="rotate(-90 20 {middle:.1})">{}</text>"#,
        escape(label)
    );
}

fn draw_line(svg: &mut String, panel: &Panel, values: &[f64], index: usize) {
    let mut points = String::new();
    for (step, value) in values.iter().enumerate() {
        if !points.is_empty() {
            points.push(' ');
        }
        let _ = write!(points, "{:.1},{:.1}", panel.x(step as f64), panel.y(*value));
    }
    let _ = writeln!(
        svg,
        r#"<polyline points="{points}" fill="none" stroke="{}" stroke-width="1.5"{}/>"#,
        colour(index),
        dashes(index)
    );
}

fn draw_legend(svg: &mut String, series: &[PlotSeries]) {
    let x = LEFT + Panel::width() + 20.0;
    for (index, line) in series.iter().enumerate() {
        let y = TOP + 10.0 + 22.0 * index as f64;
        let _ = writeln!(
            svg,
            r#"<line x1="{x:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{}" stroke-width="3"{}/><text x="{:.1}" y="{:.1}">{}</text>"#,
            x + 24.0,
            colour(index),
            dashes(index),
            x + 30.0,
            y + 4.0,
            escape(&line.name)
        );
    }
}

/// A step of 1, 2 or 5 times a power of ten giving about [`TICKS`] ticks up to `max`.
fn nice_step(max: f64) -> f64 {
    let raw = max / TICKS;
    let mut magnitude = 1.0;
    while magnitude * 10.0 <= raw {
        magnitude *= 10.0;
    }
    while magnitude > raw && magnitude > 1e-6 {
        magnitude /= 10.0;
    }
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|factor| factor * magnitude)
        .find(|step| *step >= raw)
        .unwrap_or(10.0 * magnitude)
}

fn round_up(value: f64, step: f64) -> f64 {
    (value / step).ceil().max(1.0) * step
}

fn format_value(value: f64, step: f64, unit: Unit) -> String {
    match unit {
        Unit::Tokens if step >= 1_000_000.0 || value >= 1_000_000.0 => {
            format!("{}M", trim(value / 1_000_000.0))
        }
        Unit::Tokens if step >= 1_000.0 || value >= 1_000.0 => {
            format!("{}K", trim(value / 1_000.0))
        }
        Unit::Tokens => trim(value),
        Unit::Usd if step >= 1.0 => format!("${value:.0}"),
        Unit::Usd if step >= 0.1 => format!("${value:.1}"),
        Unit::Usd if step >= 0.01 => format!("${value:.2}"),
        Unit::Usd => format!("${value:.4}"),
    }
}

/// A number with at most two decimals and no trailing zeros.
fn trim(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps_are_one_two_five() {
        let steps: Vec<f64> = [7.0, 40.0, 96_172.0, 200_000.0, 0.37, 12.5]
            .into_iter()
            .map(nice_step)
            .collect();
        assert_eq!(steps, [2.0, 10.0, 20_000.0, 50_000.0, 0.1, 5.0]);
    }

    #[test]
    fn labels_read_naturally() {
        assert_eq!(format_value(50_000.0, 10_000.0, Unit::Tokens), "50K");
        assert_eq!(format_value(1_500_000.0, 500_000.0, Unit::Tokens), "1.5M");
        assert_eq!(format_value(0.25, 0.05, Unit::Usd), "$0.25");
        assert_eq!(format_value(20.0, 5.0, Unit::Usd), "$20");
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }
}
