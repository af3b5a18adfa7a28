//! The history part of `status --session`: what the historian has summarised, what the head
//! holds against its budget, and what the historian's runs did and cost.

use mc_core::SessionId;
use mc_core::config::{Config, Tokens};
use mc_core::head::HeadBudgets;
use mc_replay::thousands;
use mc_store::{HistorianRun, ReadTx};
use serde_json::{Value, json};

/// Runs listed in full.
const RUNS_SHOWN: usize = 5;
/// Runs read for the totals: a session runs the historian every few thousand tokens, so
/// this covers very long sessions.
const RUNS_TOTALLED: usize = 100_000;

/// A session's history, as stored.
pub struct HistoryStatus {
    compartments: usize,
    summarised_until: u64,
    /// Where the last compartment starts when it is provisional (read again by the next run).
    provisional_from: Option<u64>,
    /// Estimated tokens of `m[0]` and `m[1]` as last rendered.
    head_tokens: Option<u64>,
    /// The history budget for the session's usable window.
    budget_tokens: Option<u64>,
    runs: Vec<HistorianRun>,
    run_count: usize,
    input_tokens: u64,
    output_tokens: u64,
    cost_usd: f64,
}

impl HistoryStatus {
    /// Reads it for `session`, whose usable window is `usable_window` when known.
    pub fn read(
        tx: &ReadTx<'_>,
        session: &SessionId,
        usable_window: Option<u64>,
    ) -> mc_store::Result<Self> {
        let compartments = tx.compartments(session)?.len();
        let summarised_until = tx.summarised_until(session)?;
        let provisional_from = tx.provisional_start(session)?;
        let head_tokens = tx
            .engine_state(session)?
            .and_then(|state| serde_json::from_str::<Value>(&state).ok())
            .map(|state| {
                let tokens = |key: &str| state.get(key).and_then(Value::as_u64).unwrap_or(0);
                tokens("m0_tokens") + tokens("m1_tokens")
            });
        let budget_tokens = usable_window.map(|usable| {
            HeadBudgets::from_config(&Config::default(), Some(Tokens(usable)))
                .history_tokens
                .get()
        });
        let all = tx.historian_runs(session, RUNS_TOTALLED)?;
        let cost_usd = all.iter().map(run_cost).fold(0.0, |sum, cost| sum + cost);
        Ok(Self {
            compartments,
            summarised_until,
            provisional_from,
            head_tokens,
            budget_tokens,
            run_count: all.len(),
            input_tokens: all.iter().map(|run| run.input_tokens).sum(),
            output_tokens: all.iter().map(|run| run.output_tokens).sum(),
            cost_usd,
            runs: all.into_iter().take(RUNS_SHOWN).collect(),
        })
    }

    /// The JSON shape: `{"compartments", "summarised_until", "provisional_from", "head_tokens",
    /// "budget_tokens",
    /// "historian": {"runs", "input_tokens", "output_tokens", "cost_usd", "recent": [RUN]}}`.
    pub fn json(&self) -> Value {
        json!({
            "compartments": self.compartments,
            "summarised_until": self.summarised_until,
            "provisional_from": self.provisional_from,
            "head_tokens": self.head_tokens,
            "budget_tokens": self.budget_tokens,
            "historian": {
                "runs": self.run_count,
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "cost_usd": self.cost_usd,
                "recent": self.runs.iter().map(|run| json!({
                    "started_ms": run.started_ms,
                    "finished_ms": run.finished_ms,
                    "chunk": [run.chunk_start, run.chunk_end],
                    "outcome": run.outcome,
                    "model": run.model,
                    "calls": run.calls,
                    "input_tokens": run.input_tokens,
                    "output_tokens": run.output_tokens,
                    "compartments": run.compartments,
                    "detail": run.detail,
                })).collect::<Vec<_>>(),
            },
        })
    }

    /// The text block: a `history` line and a `historian` line (and the last run's).
    pub fn text(&self, age: &dyn Fn(i64) -> String) -> String {
        let mut out = String::from("  history    ");
        if self.compartments == 0 {
            out.push_str("nothing summarised yet");
        } else {
            out.push_str(&format!(
                "{} compartments cover messages 0-{}",
                self.compartments,
                self.summarised_until.saturating_sub(1)
            ));
            if let Some(from) = self.provisional_from {
                out.push_str(&format!(" (from {from} provisional: read again next run)"));
            }
        }
        if let Some(head) = self.head_tokens {
            out.push_str(&format!("; head {} tokens", thousands(head)));
            if let Some(budget) = self.budget_tokens {
                out.push_str(&format!(" (history budget {})", thousands(budget)));
            }
        }
        out.push('\n');
        let Some(last) = self.runs.first() else {
            out.push_str("  historian  no runs yet\n");
            return out;
        };
        out.push_str(&format!(
            "  historian  {} runs, {} in / {} out tokens, about ${:.4}\n",
            self.run_count,
            thousands(self.input_tokens),
            thousands(self.output_tokens),
            self.cost_usd
        ));
        out.push_str(&format!(
            "             last {} {}: messages {}-{} on {}, {} calls, {} compartments{}\n",
            last.outcome,
            age(last.finished_ms),
            last.chunk_start,
            last.chunk_end,
            last.model.as_deref().unwrap_or("no model"),
            last.calls,
            last.compartments,
            last.detail
                .as_deref()
                .map(|detail| format!(" ({detail})"))
                .unwrap_or_default()
        ));
        out
    }
}

/// A run at its model's list price (input at the uncached rate: historian prompts are
/// one-off transcripts).
fn run_cost(run: &HistorianRun) -> f64 {
    let price = mc_core::models::model_spec(run.model.as_deref().unwrap_or("")).price;
    price.cost_usd(run.input_tokens, 0, 0, 0, run.output_tokens)
}
