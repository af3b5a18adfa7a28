//! The harness driving a strategy written for the test: its extra calls at their own model,
//! its labelled totals, its counters and the user's words, down to the report.

use std::collections::BTreeMap;

use mc_core::{Message, Part, Role};
use mc_sim::{RecordingFormat, Step};
use serde_json::json;

use super::*;

/// One token per byte, so prompts are as long as their text.
struct Bytes;

impl CountTokens for Bytes {
    fn count_tokens(&self, text: &str) -> u64 {
        text.len() as u64
    }
}

/// Sends every step twice: first to `background_model` (or the replay's model) as a
/// labelled background call of 500 output tokens, then as the client sent it. Counts the
/// background calls it made.
struct Background {
    background_model: Option<&'static str>,
    sent: u64,
}

impl Strategy for Background {
    fn name(&self) -> &'static str {
        "background"
    }

    fn prepare<'a>(&mut self, step: &StepView<'a>, _ctx: &StrategyContext<'_>) -> Prepared<'a> {
        self.sent += 1;
        let client = PreparedCall::client(step, Cow::Borrowed(step.messages));
        let background = PreparedCall {
            model: self.background_model,
            label: Some("historian"),
            output_tokens: Some(500),
            ..client.clone()
        };
        Prepared {
            calls: vec![background, client],
            bust_cause: None,
            refused: false,
        }
    }

    fn counters(&self) -> BTreeMap<&'static str, u64> {
        BTreeMap::from([("background_calls", self.sent)])
    }
}

/// Three steps of a conversation that grows by 6,000-byte user messages: long enough for
/// every model's minimum cacheable prefix, so both models cache the same prefixes.
fn recording() -> Recording {
    let mut history = Vec::new();
    let mut steps = Vec::new();
    for turn in 0..3u64 {
        let words = format!("request {turn}: {}", "keep the tests green ".repeat(300));
        history.push(Message::new(Role::User, vec![Part::text(words)]));
        let answer = Message::new(Role::Assistant, vec![Part::text(format!("done {turn}"))]);
        steps.push((history.len(), answer.clone(), turn));
        history.push(answer);
    }
    let history = Arc::new(history);
    Recording {
        name: "background".into(),
        format: RecordingFormat::ClaudeCode,
        model: "claude-sonnet-4-5".into(),
        system: vec!["You are a careful coding agent.".into()],
        tools: Vec::new(),
        stand_ins: Vec::new(),
        steps: steps
            .into_iter()
            .map(|(len, response, turn)| Step {
                at_ms: turn * 30_000,
                messages: Arc::clone(&history),
                len,
                response,
                output_tokens: Some(40),
                recorded: None,
                context: None,
            })
            .collect(),
    }
}

/// Replays two copies of the recording with [`Background`] sending its extra calls to
/// `background_model`.
fn run_background(background_model: Option<&'static str>) -> StrategyRun {
    let recording = recording();
    let user_messages = UserMessages::of(&recording);
    let references = StepReferences::of(&recording);
    let counter = Arc::new(MemoCounter::new(Arc::new(Bytes)));
    let mut run = StrategyRun {
        kind: StrategyKind::Passthrough,
        totals: StrategyTotals::default(),
        steps: Vec::new(),
        per_recording: Vec::new(),
        recall_dropped: None,
    };
    for index in 0..2 {
        let spec = model_spec(&recording.model);
        let session = Session {
            index,
            recording: &recording,
            user_messages: &user_messages,
            references: &references,
            window_tokens: spec.window_tokens,
            spec,
            counter: Arc::clone(&counter),
            token_scale: TokenScale::ONE,
        };
        let strategy = Background {
            background_model,
            sent: 0,
        };
        let mut driven = Driven::Baseline(Box::new(strategy));
        run.replay_recording(&session, &mut driven, None).unwrap();
    }
    run
}

#[test]
fn extra_calls_are_priced_at_their_own_model_and_totalled_by_label() {
    let on_haiku = run_background(Some("claude-haiku-4-5")).totals;
    let on_sonnet = run_background(None).totals;
    let historian = on_haiku.labelled["historian"];
    let same_model = on_sonnet.labelled["historian"];
    assert_eq!(
        (historian.calls, historian.output_tokens),
        (same_model.calls, same_model.output_tokens)
    );
    assert_eq!((historian.calls, historian.output_tokens), (6, 3_000));
    // The same cache classes at a third of every Sonnet price ($1/$5 against $3/$15).
    assert!((same_model.cost_usd / historian.cost_usd - 3.0).abs() < 1e-9);
    // Output is left out of the prompt side: 6 main calls of 40 at $15/M, 6 background
    // calls of 500 at $5/M.
    let output_usd = (6.0 * 40.0 * 15.0 + 3_000.0 * 5.0) / 1_000_000.0;
    assert!((on_haiku.cost_usd - on_haiku.input_cost_usd - output_usd).abs() < 1e-12);
    // Haiku's cache is its own: its fresh writes are no bust of the main model's prefix.
    assert_eq!(on_haiku.busts, BTreeMap::new());
    assert_eq!(on_haiku.requests, 12);
    // The labelled calls count in the overall totals too.
    assert!(on_haiku.cost_usd > historian.cost_usd);
}

#[test]
fn a_strategys_counters_and_kept_words_reach_the_report() {
    let run = run_background(None);
    assert_eq!(
        run.totals.counters,
        BTreeMap::from([("background_calls".to_owned(), 6)])
    );
    assert_eq!(run.totals.user_words_kept, Some(1.0));
    let report = Replay {
        model: "claude-sonnet-4-5".into(),
        window_tokens: 200_000,
        token_scale: TokenScale::ONE,
        files: 2,
        prices_as_of: PRICES_AS_OF,
        degenerate_baseline: false,
        stand_in: None,
        runs: vec![run],
    };
    let json = &report.to_json()["strategies"]["passthrough"];
    assert_eq!(json["counters"], json!({"background_calls": 6}));
    assert_eq!(json["user_words_kept"], json!(1.0));
    assert_eq!(json["labelled"]["historian"]["calls"], json!(6));
    let table = report.render_table();
    assert!(
        table.contains("\ncounters: passthrough: background_calls 6\n"),
        "{table}"
    );
    assert!(
        table.contains("\ncalls: passthrough historian: 6 calls, "),
        "{table}"
    );
}
