//! What one strategy cost, summed over every call of every replayed recording.

use std::collections::BTreeMap;

use serde::Serialize;

/// The report fields of one strategy (the `--json` object under `strategies.<name>`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StrategyTotals {
    /// Upstream calls made, refused ones and extra calls (summaries) included.
    pub requests: u64,
    /// Prompt tokens neither read from nor written to the cache.
    pub input_uncached: u64,
    /// Prompt tokens written to the cache (5m and 1h).
    pub cache_write: u64,
    /// Prompt tokens read from the cache.
    pub cache_read: u64,
    /// Output tokens.
    pub output: u64,
    /// List-price cost in USD.
    pub cost_usd: f64,
    /// The prompt side of `cost_usd`: uncached input, cache writes and cache reads at their
    /// prices, output left out. Every strategy gets the same recorded output, so this is the
    /// part of the cost a strategy controls (DESIGN §8).
    pub input_cost_usd: f64,
    /// What the strategy controls in all: `input_cost_usd` plus the output of its own
    /// background calls (labelled: summaries, the historian), which, unlike the agent's
    /// recorded answers, exist only because of the strategy. Compare strategies on this.
    pub controlled_cost_usd: f64,
    /// `cache_read ÷ (input_uncached + cache_write + cache_read)`; 0 with no input.
    pub cache_read_share: f64,
    /// Busts by cause (see [`crate::BustTracker`]).
    pub busts: BTreeMap<String, u64>,
    /// The largest prompt of the conversation's own calls, refused ones included (labelled
    /// background calls are not the session's context).
    pub peak_context: u64,
    /// The mean prompt over the conversation's own calls, refused ones included.
    pub mean_context: f64,
    /// Calls the provider refused because the prompt exceeded the window.
    pub over_window: u64,
    /// Recordings this strategy did not finish: a refused call ends the session, as it would
    /// a real client's. A strategy with any is not comparable with the others, having priced
    /// less work.
    pub failed_sessions: u64,
    /// Passes the engine could not manage and sent as the client's request (the `magic`
    /// strategy only; absent for baselines, which have no engine to fail).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine_failures: Option<u64>,
    /// The share of the user's own messages (see [`crate::UserMessages`]) still verbatim in
    /// the last request the strategy sent per recording, over all recordings; absent when
    /// the recordings hold no user words, where a share means nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_words_kept: Option<f64>,
    /// The share of the identifiers each step's recorded answer used, shown earlier in the
    /// conversation, that the strategy's request for that step still held (see
    /// [`crate::StepReferences`]); absent when no step used earlier context.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub references_kept: Option<f64>,
    /// Wall time spent inside the strategy's own code, in milliseconds.
    pub strategy_ms: f64,
    /// Prompt tokens of the calls the provider accepted; equals
    /// `input_uncached + cache_write + cache_read`.
    pub prompt_tokens: u64,
    /// Accepted calls with a label (`"summary"`, `"historian"`), totalled per label, so the
    /// cost of a strategy's background work can be read apart; they are in the totals above
    /// as well.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labelled: BTreeMap<String, LabelTotals>,
    /// What the strategy itself counted (`Strategy::counters`), summed over recordings.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<String, u64>,
    /// Sum of the conversation's calls' prompts, refused ones included (for the mean).
    #[serde(skip)]
    context_sum: u128,
    /// How many calls `context_sum` adds up.
    #[serde(skip)]
    context_calls: u64,
    /// User messages over all recordings, the denominator of `user_words_kept`.
    #[serde(skip)]
    user_messages: u64,
    /// Of those, the ones the last request kept.
    #[serde(skip)]
    user_messages_kept: u64,
    /// References used by the steps of every recording, the denominator of
    /// `references_kept`.
    #[serde(skip)]
    references: u64,
    /// Of those, the ones the step's request held.
    #[serde(skip)]
    references_found: u64,
}

/// The accepted calls of one label.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LabelTotals {
    /// How many the provider accepted (a refused one ends the session and is counted in
    /// `over_window`).
    pub calls: u64,
    /// Their prompt tokens.
    pub prompt_tokens: u64,
    /// Their output tokens.
    pub output_tokens: u64,
    /// Their list-price cost in USD, at the model each call went to.
    pub cost_usd: f64,
}

impl LabelTotals {
    fn add(&mut self, other: &Self) {
        self.calls += other.calls;
        self.prompt_tokens += other.prompt_tokens;
        self.output_tokens += other.output_tokens;
        self.cost_usd += other.cost_usd;
    }
}

/// One accepted call's usage, as the ledger reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CallUsage {
    /// The whole prompt.
    pub prompt_tokens: u64,
    /// Uncached input.
    pub input_uncached: u64,
    /// Written to the cache.
    pub cache_write: u64,
    /// Read from the cache.
    pub cache_read: u64,
    /// Output tokens.
    pub output: u64,
    /// Its cost.
    pub cost_usd: f64,
    /// Its cost without the output tokens.
    pub input_cost_usd: f64,
}

impl StrategyTotals {
    /// Adds a call the provider accepted: one of the conversation's, or with a `label` one of
    /// the strategy's own background calls (priced in full as the strategy's, and kept out
    /// of the context figures).
    pub fn add_call(&mut self, usage: &CallUsage, label: Option<&str>) {
        self.requests += 1;
        self.input_uncached += usage.input_uncached;
        self.cache_write += usage.cache_write;
        self.cache_read += usage.cache_read;
        self.output += usage.output;
        self.cost_usd += usage.cost_usd;
        self.input_cost_usd += usage.input_cost_usd;
        self.controlled_cost_usd += usage.input_cost_usd;
        self.prompt_tokens += usage.prompt_tokens;
        match label {
            Some(label) => self.add_labelled(label, usage),
            None => self.add_context(usage.prompt_tokens),
        }
    }

    fn add_labelled(&mut self, label: &str, usage: &CallUsage) {
        self.controlled_cost_usd += usage.cost_usd - usage.input_cost_usd;
        let call = LabelTotals {
            calls: 1,
            prompt_tokens: usage.prompt_tokens,
            output_tokens: usage.output,
            cost_usd: usage.cost_usd,
        };
        self.labelled
            .entry(label.to_owned())
            .or_default()
            .add(&call);
    }

    /// Adds one recording's user messages: `total` of them, `kept` still in the last request.
    pub fn add_user_words(&mut self, kept: u64, total: u64) {
        self.user_messages += total;
        self.user_messages_kept += kept;
        self.refresh_ratios();
    }

    /// Adds one step's references: `total` used, `kept` of them held by its request.
    pub fn add_references(&mut self, kept: u64, total: u64) {
        self.references += total;
        self.references_found += kept;
        self.refresh_ratios();
    }

    /// Adds a strategy's own counts.
    pub fn add_counters<'k>(&mut self, counters: impl IntoIterator<Item = (&'k str, u64)>) {
        for (name, count) in counters {
            *self.counters.entry(name.to_owned()).or_default() += count;
        }
    }

    /// Adds a call refused for exceeding the window, `prompt_tokens` long.
    pub fn add_over_window(&mut self, prompt_tokens: u64) {
        self.requests += 1;
        self.over_window += 1;
        self.add_context(prompt_tokens);
    }

    /// Counts a recording ended by a refusal.
    pub fn add_failed_session(&mut self) {
        self.failed_sessions += 1;
    }

    /// Adds engine failures (which makes the field present, even at 0).
    pub fn add_engine_failures(&mut self, failures: u64) {
        self.engine_failures = Some(self.engine_failures.unwrap_or(0) + failures);
    }

    /// Counts one bust.
    pub fn add_bust(&mut self, cause: &str) {
        *self.busts.entry(cause.to_owned()).or_default() += 1;
    }

    /// Adds time spent in the strategy.
    pub fn add_strategy_time(&mut self, elapsed: std::time::Duration) {
        self.strategy_ms += elapsed.as_secs_f64() * 1_000.0;
    }

    /// Adds another run's totals (another recording of the same strategy).
    pub fn merge(&mut self, other: &Self) {
        self.requests += other.requests;
        self.input_uncached += other.input_uncached;
        self.cache_write += other.cache_write;
        self.cache_read += other.cache_read;
        self.output += other.output;
        self.cost_usd += other.cost_usd;
        self.input_cost_usd += other.input_cost_usd;
        self.controlled_cost_usd += other.controlled_cost_usd;
        for (cause, count) in &other.busts {
            *self.busts.entry(cause.clone()).or_default() += count;
        }
        self.peak_context = self.peak_context.max(other.peak_context);
        self.over_window += other.over_window;
        self.failed_sessions += other.failed_sessions;
        if let Some(failures) = other.engine_failures {
            self.add_engine_failures(failures);
        }
        self.strategy_ms += other.strategy_ms;
        self.prompt_tokens += other.prompt_tokens;
        self.context_sum += other.context_sum;
        self.context_calls += other.context_calls;
        for (label, calls) in &other.labelled {
            self.labelled.entry(label.clone()).or_default().add(calls);
        }
        self.add_counters(
            other
                .counters
                .iter()
                .map(|(name, &count)| (name.as_str(), count)),
        );
        self.user_messages += other.user_messages;
        self.user_messages_kept += other.user_messages_kept;
        self.references += other.references;
        self.references_found += other.references_found;
        self.refresh_ratios();
    }

    /// How many busts there were in all.
    pub fn bust_count(&self) -> u64 {
        self.busts.values().sum()
    }

    fn add_context(&mut self, prompt_tokens: u64) {
        self.peak_context = self.peak_context.max(prompt_tokens);
        self.context_sum += u128::from(prompt_tokens);
        self.context_calls += 1;
        self.refresh_ratios();
    }

    fn refresh_ratios(&mut self) {
        let input = self.input_uncached + self.cache_write + self.cache_read;
        self.cache_read_share = ratio(u128::from(self.cache_read), u128::from(input));
        self.mean_context = ratio(self.context_sum, u128::from(self.context_calls));
        self.user_words_kept = (self.user_messages > 0).then(|| {
            ratio(
                u128::from(self.user_messages_kept),
                u128::from(self.user_messages),
            )
        });
        self.references_kept = (self.references > 0).then(|| {
            ratio(
                u128::from(self.references_found),
                u128::from(self.references),
            )
        });
    }
}

fn ratio(part: u128, whole: u128) -> f64 {
    if whole == 0 {
        0.0
    } else {
        // Token sums stay far below 2^52, where f64 is exact.
        part as f64 / whole as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_calls_and_keeps_ratios_current() {
        let mut totals = StrategyTotals::default();
        totals.add_call(
            &CallUsage {
                prompt_tokens: 1_000,
                input_uncached: 100,
                cache_write: 900,
                cache_read: 0,
                output: 10,
                cost_usd: 0.5,
                input_cost_usd: 0.375,
            },
            None,
        );
        totals.add_call(
            &CallUsage {
                prompt_tokens: 1_100,
                input_uncached: 0,
                cache_write: 100,
                cache_read: 1_000,
                output: 20,
                cost_usd: 0.25,
                input_cost_usd: 0.125,
            },
            None,
        );
        totals.add_over_window(5_000);
        totals.add_failed_session();
        totals.add_bust("window");
        let mut merged = StrategyTotals::default();
        merged.merge(&totals);
        merged.merge(&totals);
        assert_eq!(merged.requests, 6);
        assert_eq!(merged.prompt_tokens, 4_200);
        assert_eq!(
            merged.input_uncached + merged.cache_write + merged.cache_read,
            merged.prompt_tokens
        );
        assert_eq!(merged.cache_read_share, 2_000.0 / 4_200.0);
        assert_eq!(merged.mean_context, 14_200.0 / 6.0);
        assert_eq!(merged.peak_context, 5_000);
        assert_eq!(merged.over_window, 2);
        assert_eq!(merged.failed_sessions, 2);
        assert_eq!(merged.engine_failures, None);
        assert_eq!(merged.busts.get("window"), Some(&2));
        assert_eq!(merged.cost_usd, 1.5);
        assert_eq!(merged.input_cost_usd, 1.0);
        // Unlabelled calls are the agent's: their output is not the strategy's doing.
        assert_eq!(merged.controlled_cost_usd, 1.0);
        assert_eq!(merged.user_words_kept, None);
        assert!(merged.labelled.is_empty() && merged.counters.is_empty());
        // Engine failures are present once any run reported them, even as 0.
        totals.add_engine_failures(0);
        merged.merge(&totals);
        assert_eq!(merged.engine_failures, Some(0));
    }

    #[test]
    fn labels_counters_kept_words_and_references_sum_over_recordings() {
        let summary = CallUsage {
            prompt_tokens: 2_000,
            input_uncached: 2_000,
            output: 300,
            cost_usd: 0.01,
            input_cost_usd: 0.002,
            ..CallUsage::default()
        };
        let mut recording = StrategyTotals::default();
        recording.add_call(&summary, Some("summary"));
        recording.add_counters([("compartments", 3)]);
        recording.add_user_words(1, 4);
        recording.add_references(2, 3);
        recording.add_references(0, 0);
        let mut empty = StrategyTotals::default();
        empty.add_user_words(0, 0);
        empty.add_references(0, 0);
        let mut merged = StrategyTotals::default();
        merged.merge(&recording);
        merged.merge(&recording);
        merged.merge(&empty);
        let summaries = LabelTotals {
            calls: 2,
            prompt_tokens: 4_000,
            output_tokens: 600,
            cost_usd: 0.02,
        };
        assert_eq!(
            merged.labelled,
            BTreeMap::from([("summary".to_owned(), summaries)])
        );
        assert_eq!(
            merged.counters,
            BTreeMap::from([("compartments".to_owned(), 6)])
        );
        assert_eq!(merged.user_words_kept, Some(0.25));
        assert_eq!(merged.references_kept, Some(4.0 / 6.0));
        assert_eq!(merged.requests, 2);
        // Background calls are not the conversation's context.
        assert_eq!((merged.peak_context, merged.mean_context), (0, 0.0));
        // A background call's output is the strategy's own cost.
        assert!((merged.controlled_cost_usd - 0.02).abs() < 1e-12);
        assert_eq!(empty.user_words_kept, None);
        assert_eq!(empty.references_kept, None);
    }
}
