//! `replay --sweep KEY=V1,V2,…`: the frontier of cost against what the requests keep.
//!
//! A setting that saves money by forgetting is no improvement, so a setting is judged by
//! two figures at once: `magic`'s controlled cost as a share of a baseline's (the input side
//! and the historian's own output) and the share of references the model's next answer used
//! that the requests still held. The sweep replays `magic` once per combination of the
//! axes' values (the baseline once), and marks the settings no other setting beats on both
//! figures: the frontier, where a default should be chosen.

use anyhow::{Context, bail};
use mc_config::{LoadedConfig, Source, load_layers};
use mc_core::config::Config;
use mc_replay::{ReplayOptions, StrategyTotals, replay};
use mc_sim::Recording;
use mc_sim::strategy::StrategyKind;
use serde_json::{Map, Value, json};

/// Most settings one sweep replays: each is a full replay of every recording.
const MAX_SETTINGS: usize = 64;

/// One swept key and the values it takes.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepAxis {
    key: String,
    values: Vec<Value>,
}

impl std::str::FromStr for SweepAxis {
    type Err = String;

    /// `history.budget_percent=5,8,15`: a config key as `config show` spells it, then its
    /// values, each read as JSON (a number, `true`) or else as a string.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let Some((key, values)) = text.split_once('=') else {
            return Err(format!(
                "`{text}` is not KEY=V1,V2,…; for example history.budget_percent=5,8,15"
            ));
        };
        let key = key.trim();
        if key.is_empty() || key.split('.').any(str::is_empty) {
            return Err(format!(
                "`{key}` is not a config key such as pass.execute_threshold_percent"
            ));
        }
        let values: Vec<Value> = values
            .split(',')
            .map(str::trim)
            .filter(|value| !value.is_empty())
            .map(|value| serde_json::from_str(value).unwrap_or_else(|_| json!(value)))
            .collect();
        if values.is_empty() {
            return Err(format!("`{key}` has no values to sweep"));
        }
        Ok(Self {
            key: key.to_owned(),
            values,
        })
    }
}

/// One setting of the grid: a value per axis.
#[derive(Debug, Clone, PartialEq)]
struct Setting(Vec<(String, Value)>);

impl Setting {
    fn label(&self) -> String {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect();
        parts.join(" ")
    }

    /// `base` (the effective configuration) with this setting's values; a value the key
    /// does not accept is an error naming the key and why.
    fn config(&self, base: &LoadedConfig) -> anyhow::Result<Config> {
        let Value::Object(mut document) = base.config_json() else {
            bail!("the effective configuration is not a JSON object");
        };
        for (key, value) in &self.0 {
            set_dotted(&mut document, key, value.clone());
        }
        let loaded = load_layers(&[(Source::Default, document)]);
        if let Some(problem) = loaded.diagnostics.first() {
            bail!(
                "--sweep {}: {}",
                problem.key.as_deref().unwrap_or("the configuration"),
                problem.reason
            );
        }
        Ok(loaded.config)
    }
}

/// Sets `key` (dotted) in `document`, making the sections on the way.
fn set_dotted(document: &mut Map<String, Value>, key: &str, value: Value) {
    let mut parts = key.split('.').peekable();
    let mut at = document;
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            at.insert(part.to_owned(), value);
            return;
        }
        let section = at
            .entry(part.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if !section.is_object() {
            *section = Value::Object(Map::new());
        }
        let Value::Object(next) = section else {
            return;
        };
        at = next;
    }
}

/// Every combination of the axes' values, the first axis slowest.
fn grid(axes: &[SweepAxis]) -> Vec<Setting> {
    axes.iter()
        .fold(vec![Setting(Vec::new())], |settings, axis| {
            settings
                .iter()
                .flat_map(|setting| {
                    axis.values.iter().map(move |value| {
                        let mut next = setting.0.clone();
                        next.push((axis.key.clone(), value.clone()));
                        Setting(next)
                    })
                })
                .collect()
        })
}

/// One replayed setting's figures.
#[derive(Debug, Clone, PartialEq)]
struct Point {
    label: String,
    controlled_cost_usd: f64,
    references_kept: Option<f64>,
    user_words_kept: Option<f64>,
    busts: u64,
    mean_context: f64,
}

impl Point {
    fn of(label: String, totals: &StrategyTotals) -> Self {
        Self {
            label,
            controlled_cost_usd: totals.controlled_cost_usd,
            references_kept: totals.references_kept,
            user_words_kept: totals.user_words_kept,
            busts: totals.bust_count(),
            mean_context: totals.mean_context,
        }
    }

    /// Whether `other` is at least as good on cost and references and better on one.
    fn beaten_by(&self, other: &Self) -> bool {
        let refs = |point: &Self| point.references_kept.unwrap_or(0.0);
        other.controlled_cost_usd <= self.controlled_cost_usd
            && refs(other) >= refs(self)
            && (other.controlled_cost_usd < self.controlled_cost_usd || refs(other) > refs(self))
    }
}

/// A sweep's figures: the baseline's, then one point per setting.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    window_tokens: u64,
    files: usize,
    baseline: (StrategyKind, Point),
    points: Vec<Point>,
}

/// Replays the baseline once and `magic` once per setting of `axes`, each on `base` with the
/// setting's values.
pub fn sweep(
    recordings: &[Recording],
    options: &ReplayOptions,
    base: &LoadedConfig,
    axes: &[SweepAxis],
    baseline: StrategyKind,
) -> anyhow::Result<Sweep> {
    if baseline == StrategyKind::Magic {
        bail!("--sweep compares magic with a baseline: name one other strategy with --strategy");
    }
    let settings = grid(axes);
    if settings.len() > MAX_SETTINGS {
        bail!(
            "--sweep makes {} settings (at most {MAX_SETTINGS}): sweep fewer values",
            settings.len()
        );
    }
    let configs = settings
        .iter()
        .map(|setting| setting.config(base))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let run = |strategy: StrategyKind, config: Config| {
        let options = ReplayOptions {
            strategies: vec![strategy],
            engine_config: config,
            ..options.clone()
        };
        replay(recordings, &options).context("replay failed")
    };
    let reference = run(baseline, base.config.clone())?;
    let (window_tokens, files) = (reference.window_tokens, reference.files);
    let baseline_point = reference
        .runs
        .first()
        .map(|run| Point::of(baseline.as_str().to_owned(), &run.totals))
        .context("the baseline did not run")?;
    let mut points = Vec::with_capacity(settings.len());
    for (setting, config) in settings.iter().zip(configs) {
        let replayed = run(StrategyKind::Magic, config)?;
        let totals = &replayed.runs.first().context("magic did not run")?.totals;
        points.push(Point::of(setting.label(), totals));
    }
    Ok(Sweep {
        window_tokens,
        files,
        baseline: (baseline, baseline_point),
        points,
    })
}

impl Sweep {
    fn ratio(&self, point: &Point) -> f64 {
        point.controlled_cost_usd / self.baseline.1.controlled_cost_usd.max(f64::MIN_POSITIVE)
    }

    fn on_frontier(&self, point: &Point) -> bool {
        !self.points.iter().any(|other| point.beaten_by(other))
    }

    /// The table: one row per setting, frontier marked.
    pub fn render_table(&self) -> String {
        let share =
            |value: Option<f64>| value.map_or("-".to_owned(), |v| format!("{:.1}%", v * 100.0));
        let (kind, base) = &self.baseline;
        let mut out = format!(
            "sweep: magic per setting against {} ({} recordings, window {} tokens)\n{}: controlled ${:.2}, references kept {}, user words kept {}\n\n",
            kind.as_str(),
            self.files,
            self.window_tokens,
            kind.as_str(),
            base.controlled_cost_usd,
            share(base.references_kept),
            share(base.user_words_kept),
        );
        out.push_str("| setting | controlled $ | vs baseline | references kept | user words kept | busts | mean ctx | frontier |\n|---|---|---|---|---|---|---|---|\n");
        for point in &self.points {
            out.push_str(&format!(
                "| {} | {:.2} | {:.3}x | {} | {} | {} | {:.0} | {} |\n",
                point.label,
                point.controlled_cost_usd,
                self.ratio(point),
                share(point.references_kept),
                share(point.user_words_kept),
                point.busts,
                point.mean_context,
                if self.on_frontier(point) { "yes" } else { "" },
            ));
        }
        out
    }

    /// The same as one JSON object.
    pub fn to_json(&self) -> Value {
        let (kind, base) = &self.baseline;
        let settings: Vec<Value> = self
            .points
            .iter()
            .map(|point| {
                json!({
                    "setting": point.label,
                    "controlled_cost_usd": point.controlled_cost_usd,
                    "ratio": self.ratio(point),
                    "references_kept": point.references_kept,
                    "user_words_kept": point.user_words_kept,
                    "busts": point.busts,
                    "mean_context": point.mean_context,
                    "frontier": self.on_frontier(point),
                })
            })
            .collect();
        json!({
            "window": self.window_tokens,
            "files": self.files,
            "baseline": {
                "strategy": kind.as_str(),
                "controlled_cost_usd": base.controlled_cost_usd,
                "references_kept": base.references_kept,
                "user_words_kept": base.user_words_kept,
            },
            "settings": settings,
        })
    }
}

#[cfg(test)]
#[path = "replay_sweep_tests.rs"]
mod tests;
