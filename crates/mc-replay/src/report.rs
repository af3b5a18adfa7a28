//! The replay's report: one JSON object for `--json`, an aligned table otherwise (labelled
//! calls and strategy counters, which have no fixed columns, on lines under it).

use std::fmt::Write as _;

use mc_core::thousands;
use serde_json::{Map, Value, json};

use crate::harness::Replay;
use crate::plot::PlotSeries;
use crate::totals::StrategyTotals;

impl Replay {
    /// `{"model", "window", "token_scale", "files", "prices_as_of", "degenerate_baseline",
    /// "stand_in_tokens", "stand_in_note", "strategies": {name: {fields}}}`, the strategies in
    /// the order they ran; the two `stand_in_` keys only when a recording used a stand-in.
    pub fn to_json(&self) -> Value {
        let strategies: Map<String, Value> = self
            .runs
            .iter()
            .map(|run| {
                let fields = serde_json::to_value(&run.totals).unwrap_or(Value::Null);
                (run.kind.to_string(), fields)
            })
            .collect();
        let mut report = Map::new();
        report.insert("model".into(), json!(self.model));
        report.insert("window".into(), json!(self.window_tokens));
        report.insert("token_scale".into(), json!(self.token_scale));
        report.insert("files".into(), json!(self.files));
        report.insert("prices_as_of".into(), json!(self.prices_as_of));
        report.insert(
            "degenerate_baseline".into(),
            json!(self.degenerate_baseline),
        );
        if let Some(stand_in) = &self.stand_in {
            report.insert("stand_in_tokens".into(), json!(stand_in.tokens));
            report.insert("stand_in_note".into(), json!(stand_in.note(self.files)));
        }
        report.insert("strategies".into(), Value::Object(strategies));
        report.insert("per_recording".into(), self.per_recording_json());
        Value::Object(report)
    }

    /// `[{"file", "strategy", "cost_usd", "controlled_cost_usd", "references_kept",
    /// "user_words_kept", "lost_user_words": [{"ordinal", "text"}]}]`, each recording's
    /// strategies together, in the order they ran.
    fn per_recording_json(&self) -> Value {
        let recordings = self.runs.first().map_or(0, |run| run.per_recording.len());
        let mut rows = Vec::new();
        for index in 0..recordings {
            for run in &self.runs {
                let Some(recording) = run.per_recording.get(index) else {
                    continue;
                };
                let totals = &recording.totals;
                rows.push(json!({
                    "file": recording.name,
                    "strategy": run.kind.to_string(),
                    "cost_usd": totals.cost_usd,
                    "controlled_cost_usd": totals.controlled_cost_usd,
                    "references_kept": totals.references_kept,
                    "user_words_kept": totals.user_words_kept,
                    "failed_sessions": totals.failed_sessions,
                    "lost_user_words": recording.lost_user_words,
                }));
            }
        }
        Value::Array(rows)
    }

    /// The totals as an aligned text table, one row per strategy, with a heading line.
    pub fn render_table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} recordings on {}, window {} tokens, provider token scale {}x, prices as of {}",
            self.files, self.model, self.window_tokens, self.token_scale, self.prices_as_of
        );
        let header = [
            "strategy",
            "requests",
            "uncached",
            "cache write",
            "cache read",
            "output",
            "cost $",
            "input $",
            "controlled $",
            "read share",
            "peak ctx",
            "mean ctx",
            "over",
            "failed",
            "engine fail",
            "user kept",
            "refs kept",
            "strategy ms",
            "busts",
        ];
        let rows: Vec<Vec<String>> = self
            .runs
            .iter()
            .map(|run| row(run.kind.as_str(), &run.totals))
            .collect();
        let widths: Vec<usize> = (0..header.len())
            .map(|column| {
                rows.iter()
                    .map(|row| row[column].len())
                    .chain([header[column].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let header: Vec<String> = header.iter().map(|&cell| cell.to_owned()).collect();
        for cells in std::iter::once(&header).chain(&rows) {
            let mut line = String::new();
            for (column, cell) in cells.iter().enumerate() {
                let last = column + 1 == cells.len();
                match column {
                    0 => {
                        let _ = write!(line, "{cell:<width$}", width = widths[column]);
                    }
                    _ if last => {
                        let _ = write!(line, "  {cell}");
                    }
                    _ => {
                        let _ = write!(line, "  {cell:>width$}", width = widths[column]);
                    }
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        for line in self.detail_lines() {
            out.push_str(&line);
            out.push('\n');
        }
        for warning in self.warnings() {
            let _ = writeln!(out, "warning: {warning}");
        }
        if let Some(stand_in) = &self.stand_in {
            let _ = writeln!(out, "note: {}", stand_in.note(self.files));
        }
        out
    }

    /// What the columns leave out, one line per strategy that has it: the labelled calls
    /// (what background work cost) and the strategy's own counters.
    fn detail_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for run in &self.runs {
            for (label, calls) in &run.totals.labelled {
                lines.push(format!(
                    "calls: {} {label}: {} calls, {} prompt, {} output, ${:.2}",
                    run.kind,
                    thousands(calls.calls),
                    thousands(calls.prompt_tokens),
                    thousands(calls.output_tokens),
                    calls.cost_usd
                ));
            }
            if !run.totals.counters.is_empty() {
                let counts: Vec<String> = run
                    .totals
                    .counters
                    .iter()
                    .map(|(name, count)| format!("{name} {}", thousands(*count)))
                    .collect();
                lines.push(format!("counters: {}: {}", run.kind, counts.join(", ")));
            }
        }
        lines
    }

    /// What makes a figure of the table misleading, one sentence each, for the lines under it.
    fn warnings(&self) -> Vec<String> {
        let failed = self
            .runs
            .iter()
            .filter(|run| run.totals.failed_sessions > 0)
            .map(|run| {
                format!(
                    "{} failed {} of {} sessions (a request over the window ends a session, as it \
                     would a real client's); its totals are not comparable",
                    run.kind, run.totals.failed_sessions, self.files
                )
            });
        let degenerate = self.degenerate_baseline.then(|| {
            format!(
                "autocompact's trigger (Claude Code's: window - min(max output, 20K) - 13K) is \
                 under half the {}-token window, so it compacts far more often than Claude Code \
                 does; ratios against it flatter the others (compare costs at the model's real \
                 window)",
                thousands(self.window_tokens)
            )
        });
        failed.chain(degenerate).collect()
    }

    /// The per-step curves, one series per strategy, for [`crate::render_svg`].
    pub fn plot_series(&self) -> Vec<PlotSeries> {
        self.runs
            .iter()
            .map(|run| PlotSeries {
                name: run.kind.to_string(),
                context_tokens: run.steps.iter().map(|point| point.prompt_tokens).collect(),
                cumulative_cost_usd: run
                    .steps
                    .iter()
                    .map(|point| point.cumulative_cost_usd)
                    .collect(),
            })
            .collect()
    }
}

fn row(name: &str, totals: &StrategyTotals) -> Vec<String> {
    let busts = if totals.busts.is_empty() {
        "0".to_owned()
    } else {
        let causes: Vec<String> = totals
            .busts
            .iter()
            .map(|(cause, count)| format!("{cause} {count}"))
            .collect();
        format!("{} ({})", totals.bust_count(), causes.join(", "))
    };
    vec![
        name.to_owned(),
        thousands(totals.requests),
        thousands(totals.input_uncached),
        thousands(totals.cache_write),
        thousands(totals.cache_read),
        thousands(totals.output),
        format!("{:.2}", totals.cost_usd),
        format!("{:.2}", totals.input_cost_usd),
        format!("{:.2}", totals.controlled_cost_usd),
        format!("{:.1}%", totals.cache_read_share * 100.0),
        thousands(totals.peak_context),
        thousands(totals.mean_context.round() as u64),
        thousands(totals.over_window),
        thousands(totals.failed_sessions),
        totals
            .engine_failures
            .map_or_else(|| "-".to_owned(), thousands),
        totals
            .user_words_kept
            .map_or_else(|| "-".to_owned(), |share| format!("{:.1}%", share * 100.0)),
        totals
            .references_kept
            .map_or_else(|| "-".to_owned(), |share| format!("{:.1}%", share * 100.0)),
        format!("{:.0}", totals.strategy_ms),
        busts,
    ]
}
