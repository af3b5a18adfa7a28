//! The dreamer's small agent loop: the model looks at the project with read-only tools,
//! step by step, then gives its decisions (memory verdicts, a doc proposal) and finishes.
//!
//! Three caps bound a run, all from `dreamer.*`: the steps (model calls), the tokens the
//! provider reports, and the wall-clock time, counted across every loop of one run (see
//! [`LoopBudget`]), plus the run's own deadline. A cap ends the loop with the decisions
//! made so far, each of which was complete when it was given; a model that fails or
//! answers garbage ends it with none, so such a model never changes anything. Each step
//! waits while the project's session calls on the same credential
//! ([`crate::model_turn`]), within the time cap; a session busy until then ends the loop
//! like a cap. The decisions are returned, not applied: the task applies them under its
//! lease.

use mc_core::dreamer::{
    CallShown, FINISH, LOOK_TOOLS, Remaining, STEP_SYSTEM, StepCall, Verdict, parse_step,
    step_tool, step_user_message,
};
use mc_llm::StructuredRequest;

use crate::agent_tools::AgentTools;
use crate::batches::TaskContext;
use crate::model_turn::Unanswered;
use crate::report::{Failure, TaskReport};

/// The answer's room per step: a few calls, or one doc's full text.
const STEP_MAX_TOKENS: u32 = 4_096;

/// What one loop is for.
pub(crate) struct Duty<'a> {
    /// The task's own instructions, after the loop's.
    pub instructions: &'a str,
    /// The task and its material, opening every step's message.
    pub task: String,
    /// The decision tools this duty offers, besides the looking tools and `finish`.
    pub decides_with: &'a [&'a str],
    /// Checks a decision; the text the model is shown for it, or why it is refused.
    pub accept: &'a dyn Fn(Decision<'_>) -> Result<String, String>,
}

/// A decision the model gave, as its duty checks it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Decision<'c> {
    /// A verdict on a memory.
    Verdict(&'c Verdict),
    /// A doc's proposed text.
    Doc {
        /// The doc.
        path: &'c str,
    },
}

/// A doc's proposed text, as the model gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProposedDoc {
    pub path: String,
    pub content: String,
    pub reason: String,
}

/// What is spent of one run's caps, across all of its loops.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoopBudget {
    steps: u32,
    tokens: u64,
    started_ms: i64,
}

impl LoopBudget {
    /// Nothing spent yet; the time cap counts from `started_ms`.
    pub(crate) fn new(started_ms: i64) -> Self {
        Self {
            steps: 0,
            tokens: 0,
            started_ms,
        }
    }
}

/// Why a loop ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum LoopStop {
    /// The model called `finish`.
    #[default]
    Finished,
    /// The step cap was reached.
    StepCap(u32),
    /// The token budget was spent.
    TokenBudget(u64),
    /// The time cap passed.
    TimeCap(u32),
    /// The run's deadline passed.
    Deadline,
    /// The model failed or answered garbage (noted in the report); nothing it decided holds.
    ModelFailed,
    /// The project's session kept calling on the run's credential until a cap (noted in
    /// the report); the decisions made before hold, as at a cap.
    SessionBusy,
}

impl LoopStop {
    /// Whether the loop ended on one of the run's caps, so later loops must not start.
    pub(crate) fn is_cap(&self) -> bool {
        !matches!(self, Self::Finished | Self::ModelFailed)
    }

    /// The end in words, for the run's detail.
    pub(crate) fn describe(&self) -> String {
        match self {
            Self::Finished => "finished".to_owned(),
            Self::StepCap(steps) => format!("stopped at the step cap ({steps} steps)"),
            Self::TokenBudget(tokens) => {
                format!("stopped at the token budget ({tokens} tokens)")
            }
            Self::TimeCap(seconds) => format!("stopped at the time cap ({seconds} s)"),
            Self::Deadline => "stopped at the run's deadline".to_owned(),
            Self::ModelFailed => "stopped: the model failed".to_owned(),
            Self::SessionBusy => {
                "stopped: the project's session kept calling on the same credential".to_owned()
            }
        }
    }
}

/// A loop's end and the decisions it holds (the latest per memory or doc).
#[derive(Debug, Default)]
pub(crate) struct LoopEnd {
    pub stop: LoopStop,
    pub verdicts: Vec<Verdict>,
    pub docs: Vec<ProposedDoc>,
}

/// Runs one loop for `duty`, spending from `budget`; calls and tokens are counted in
/// `report`, and a model failure is noted there.
pub(crate) fn run_loop(
    ctx: &TaskContext<'_>,
    tools: &AgentTools<'_>,
    duty: &Duty<'_>,
    budget: &mut LoopBudget,
    report: &mut TaskReport,
) -> LoopEnd {
    let offered: Vec<&str> = LOOK_TOOLS
        .iter()
        .chain(duty.decides_with)
        .chain(&[FINISH])
        .copied()
        .collect();
    let system = format!("{STEP_SYSTEM}\n\n{}", duty.instructions);
    let tool = step_tool(&offered);
    let caps = ctx.settings;
    let mut shown: Vec<Vec<CallShown>> = Vec::new();
    let mut end = LoopEnd::default();
    loop {
        let now_ms = (ctx.clock)();
        let token_budget = u64::from(caps.agent_token_budget);
        let max_ms = i64::from(caps.agent_max_seconds).saturating_mul(1000);
        if budget.steps >= caps.agent_max_steps {
            return end.stopped(LoopStop::StepCap(caps.agent_max_steps));
        }
        if budget.tokens >= token_budget {
            return end.stopped(LoopStop::TokenBudget(token_budget));
        }
        if now_ms.saturating_sub(budget.started_ms) >= max_ms {
            return end.stopped(LoopStop::TimeCap(caps.agent_max_seconds));
        }
        if now_ms >= ctx.deadline_ms {
            return end.stopped(LoopStop::Deadline);
        }
        let left = Remaining {
            steps: caps.agent_max_steps - budget.steps,
            tokens: token_budget - budget.tokens,
        };
        let request = StructuredRequest {
            system: system.clone(),
            user: step_user_message(&duty.task, &shown, left),
            tool: tool.clone(),
            max_tokens: STEP_MAX_TOKENS,
        };
        // A wait for the session counts toward both the loop's time cap and the run's.
        let until_ms = ctx
            .deadline_ms
            .min(budget.started_ms.saturating_add(max_ms));
        let answer = match ctx.ask(&request, until_ms, report) {
            Ok(answer) => answer,
            Err(Unanswered::SessionBusy) => return end.stopped(LoopStop::SessionBusy),
            Err(Unanswered::Failed) => return LoopEnd::default().stopped(LoopStop::ModelFailed),
        };
        budget.steps += 1;
        let usage = answer.usage;
        budget.tokens += usage.input_tokens + usage.cache_read + usage.cache_write;
        budget.tokens += usage.output_tokens;
        let calls = match parse_step(&answer.input, &offered) {
            Ok(calls) => calls,
            Err(reason) => {
                report.failure = Some(Failure::new("invalid_answer", reason));
                return LoopEnd::default().stopped(LoopStop::ModelFailed);
            }
        };
        let mut finished = false;
        let mut step = Vec::with_capacity(calls.len());
        for (call, read) in calls {
            let result = match read {
                Err(error) => format!("error: {error}"),
                Ok(StepCall::Finish { .. }) => {
                    finished = true;
                    "finished".to_owned()
                }
                Ok(read) => match tools.look(&read) {
                    Some(result) => result,
                    None => end.decide(duty, read),
                },
            };
            step.push(CallShown { call, result });
        }
        shown.push(step);
        if finished {
            return end.stopped(LoopStop::Finished);
        }
    }
}

impl LoopEnd {
    fn stopped(mut self, stop: LoopStop) -> Self {
        self.stop = stop;
        self
    }

    /// Records `call` when the duty accepts it, replacing an earlier decision about the
    /// same memory or doc; what the model is shown for it.
    fn decide(&mut self, duty: &Duty<'_>, call: StepCall) -> String {
        let checked = match &call {
            StepCall::Verdict(verdict) => (duty.accept)(Decision::Verdict(verdict)),
            StepCall::ProposeDoc { path, .. } => (duty.accept)(Decision::Doc { path }),
            StepCall::ListFiles { .. }
            | StepCall::ReadFile { .. }
            | StepCall::Search { .. }
            | StepCall::GitLog { .. }
            | StepCall::GitShow { .. }
            | StepCall::Finish { .. } => Err("not a decision".to_owned()),
        };
        let said = match checked {
            Ok(said) => said,
            Err(error) => return format!("error: {error}"),
        };
        match call {
            StepCall::Verdict(verdict) => {
                let id = verdict.memory_id();
                self.verdicts.retain(|earlier| earlier.memory_id() != id);
                self.verdicts.push(verdict);
            }
            StepCall::ProposeDoc {
                path,
                content,
                reason,
            } => {
                self.docs.retain(|earlier| earlier.path != path);
                self.docs.push(ProposedDoc {
                    path,
                    content,
                    reason,
                });
            }
            StepCall::ListFiles { .. }
            | StepCall::ReadFile { .. }
            | StepCall::Search { .. }
            | StepCall::GitLog { .. }
            | StepCall::GitShow { .. }
            | StepCall::Finish { .. } => {}
        }
        said
    }
}
