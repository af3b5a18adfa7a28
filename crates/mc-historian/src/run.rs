//! One run against the model: ask, check, repair once, fall back, and account for every
//! call. Never touches the store; what it returns is published (or recorded as failed) by
//! the caller.

use std::future::Future;

use mc_llm::{LlmError, StructuredAnswer, StructuredRequest};

use crate::accept::{Accepted, accept};
use crate::job::Job;

/// The models a run may ask, in fallback order.
pub trait HistorianModel: Send + Sync {
    /// How many endpoints the chain has.
    fn endpoints(&self) -> usize;
    /// A name for endpoint `index` (model and host), for the run's record.
    fn label(&self, index: usize) -> String;
    /// Asks endpoint `index` (its own retries and timeouts included).
    fn answer(
        &self,
        index: usize,
        request: &StructuredRequest,
    ) -> impl Future<Output = Result<StructuredAnswer, LlmError>> + Send;
}

/// What a run produced and cost.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// The accepted answer, or `None` when every endpoint failed.
    pub accepted: Option<Accepted>,
    /// The endpoint that answered (or was tried last).
    pub model: Option<String>,
    /// Calls made.
    pub calls: u32,
    /// Prompt tokens reported, cache reads and writes included.
    pub input_tokens: u64,
    /// Output tokens reported.
    pub output_tokens: u64,
    /// Why the run failed, each endpoint's last reason in order.
    pub failure: Option<String>,
}

/// Runs `job`: each endpoint in order gets the request and, when its answer does not pass,
/// one repair round quoting why; the first accepted answer ends the run.
pub async fn run_job<M: HistorianModel>(job: &Job, model: &M, lookahead: u32) -> RunReport {
    let mut report = RunReport {
        accepted: None,
        model: None,
        calls: 0,
        input_tokens: 0,
        output_tokens: 0,
        failure: None,
    };
    let mut reasons = Vec::new();
    for index in 0..model.endpoints() {
        let label = model.label(index);
        report.model = Some(label.clone());
        let mut request = job.request.clone();
        for round in 0..2 {
            report.calls += 1;
            let answer = match model.answer(index, &request).await {
                Ok(answer) => answer,
                Err(error) => {
                    reasons.push(format!("{label}: {error}"));
                    break;
                }
            };
            let usage = answer.usage;
            report.input_tokens += usage.input_tokens + usage.cache_read + usage.cache_write;
            report.output_tokens += usage.output_tokens;
            match accept(job, &answer.input, lookahead) {
                Ok(accepted) => {
                    report.accepted = Some(accepted);
                    return report;
                }
                Err(reason) if round == 0 => {
                    tracing::info!(endpoint = %label, %reason, "historian answer refused; one repair round");
                    request.user = repair_message(&job.request.user, &reason);
                }
                Err(reason) => reasons.push(format!("{label}: answer refused twice: {reason}")),
            }
        }
    }
    report.failure = Some(if reasons.is_empty() {
        "no historian model is configured".to_owned()
    } else {
        reasons.join("; ")
    });
    report
}

/// The repair round's user message: the same transcript, and why the answer was refused.
fn repair_message(user: &str, reason: &str) -> String {
    format!(
        "{user}\n\nYour previous `record_history` call was refused: {reason}. Call it again with \
         a corrected answer."
    )
}
