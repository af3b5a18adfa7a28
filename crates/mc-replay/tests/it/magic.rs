//! The `magic` strategy never hides an engine failure behind a figure: over real recordings
//! every pass goes through the engine (none falls back to the client's request unmanaged).

use mc_replay::Magic;
use mc_sim::strategy::{StepView, Strategy, StrategyContext};
use mc_sim::{O200kCounter, Wire, model_spec};

use crate::shared_data;

#[test]
fn every_pass_of_real_recordings_goes_through_the_engine() {
    let mut recordings = shared_data::load("anthropic-capture/claude-code-traffic.jsonl");
    recordings.push(shared_data::trajectory("sympy__sympy-20801"));
    let counter = O200kCounter::load().unwrap();
    let spec = model_spec("claude-sonnet-4-5");
    assert_eq!(spec.wire, Wire::Anthropic);
    let ctx = StrategyContext {
        model: &spec.name,
        wire: spec.wire,
        window_tokens: 32_000,
        max_output_tokens: spec.max_output_tokens,
        counter: &counter,
    };
    for recording in &recordings {
        let mut magic = Magic::default();
        let mut last_prompt_tokens = None;
        for step in &recording.steps {
            let (system, tools) = recording.context_of(step);
            let view = StepView {
                at_ms: step.at_ms,
                system,
                tools,
                messages: step.request_messages(),
                last_prompt_tokens,
            };
            let prepared = magic.prepare(&view, &ctx);
            let main = prepared.main().unwrap();
            assert!(
                main.cache_marks.is_some(),
                "{}: the engine placed the breakpoints",
                recording.name
            );
            last_prompt_tokens = step.recorded.map(|usage| usage.prompt_tokens);
        }
        assert_eq!(
            magic.failures(),
            0,
            "{}: passes that fell back unmanaged",
            recording.name
        );
    }
}
