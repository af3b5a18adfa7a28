//! What a task did and spent, gathered as it runs and written once as the run's record.

use mc_llm::{LlmError, StructuredAnswer};

use crate::model::{failure_class, provider_message};

/// Why a task stopped short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The class identical failures are counted by.
    pub class: String,
    /// The provider's own message, when a provider answered with one.
    pub provider_error: Option<String>,
    /// What went wrong, in a line.
    pub detail: String,
}

impl Failure {
    /// A failure of the model call.
    pub fn of_model(error: &LlmError) -> Self {
        Self {
            class: failure_class(error).to_owned(),
            provider_error: provider_message(error),
            detail: error.to_string(),
        }
    }

    /// A failure of our own making (`invalid_answer`, `lease_lost`, `store`, ...).
    pub fn new(class: &str, detail: impl Into<String>) -> Self {
        Self {
            class: class.to_owned(),
            provider_error: None,
            detail: detail.into(),
        }
    }
}

/// A task's calls, tokens, changes and end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskReport {
    /// The model that answered last (or was asked, when none answered).
    pub model: Option<String>,
    /// Model calls made.
    pub calls: u32,
    /// Prompt tokens reported, cache reads and writes included.
    pub input_tokens: u64,
    /// Output tokens reported.
    pub output_tokens: u64,
    /// Memory changes made.
    pub changes: u32,
    /// Why it stopped short, when it did.
    pub failure: Option<Failure>,
    /// A line on what it did.
    pub detail: String,
}

impl TaskReport {
    /// The report of a task that reads the folder, run without it.
    pub fn no_folder() -> Self {
        Self {
            failure: Some(Failure::new(
                "project_folder",
                "the project's folder was not opened",
            )),
            ..Self::default()
        }
    }

    /// Counts a call that was answered.
    pub fn count_answer(&mut self, answer: &StructuredAnswer) {
        self.calls += 1;
        self.model = Some(answer.answered_by.model.clone());
        let usage = answer.usage;
        self.input_tokens += usage.input_tokens + usage.cache_read + usage.cache_write;
        self.output_tokens += usage.output_tokens;
    }

    /// Counts a call that failed.
    pub fn count_failure(&mut self, first_model: Option<String>, failure: Failure) {
        self.calls += 1;
        if self.model.is_none() {
            self.model = first_model;
        }
        self.failure = Some(failure);
    }

    /// What the calls cost at the model's list price (input at the uncached rate: each
    /// prompt is asked once).
    pub fn cost_usd(&self) -> f64 {
        let Some(model) = &self.model else {
            return 0.0;
        };
        mc_core::models::model_spec(model).price.cost_usd(
            self.input_tokens,
            0,
            0,
            0,
            self.output_tokens,
        )
    }
}
