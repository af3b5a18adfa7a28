//! Example tests for every cause and boundary, and the DESIGN §5 invariants as proptests.

use proptest::prelude::*;

use super::economics::{BustEconomics, EXPECTED_REMAINING_TURNS};
use super::*;
use crate::config::{CacheTtl, ExecuteThreshold, HistoryConfig, PassConfig, Percent, Tokens};

const MODEL: &str = "claude-sonnet-4-5";
const FIVE_MIN_MS: u64 = 300_000;

/// A live, rendered session at 25% of a 200K usable window with nothing pending.
fn live() -> PassInputs {
    PassInputs {
        now_ms: 10_000_000,
        last_call_ms: Some(10_000_000 - 60_000),
        last_usage_tokens: Tokens(50_000),
        usable_window: Some(Tokens(200_000)),
        proven_window: None,
        ttl: CacheTtl::FiveMinutes,
        model_changed: false,
        system_changed: false,
        operator_flush: false,
        head_rendered: true,
        head_dirty: false,
        m0_tokens: Tokens(2_000),
        m1_tokens: Tokens(50),
        m1_memory_updates: 0,
        pending: PendingWork::default(),
        prompt_tokens_estimate: Tokens(50_000),
        fixed_tokens: Tokens(15_000),
        minimal_prompt_tokens: Tokens(0),
        prefix_tokens_estimate: Tokens(40_000),
        cycle: BustCycle::default(),
    }
}

fn at_usage(tokens: u64) -> PassInputs {
    PassInputs {
        last_usage_tokens: Tokens(tokens),
        prompt_tokens_estimate: Tokens(tokens),
        ..live()
    }
}

fn plan(inputs: &PassInputs) -> PassPlan {
    plan_pass(
        inputs,
        &PassConfig::default(),
        &HistoryConfig::default(),
        MODEL,
    )
}

fn kind_cause(inputs: &PassInputs) -> (PassKind, Option<BustCause>) {
    let plan = plan(inputs);
    (plan.kind, plan.cause)
}

fn with_drops(mut inputs: PassInputs, tokens: u64) -> PassInputs {
    inputs.pending.queued_drop_tokens = Tokens(tokens);
    inputs
}

#[test]
fn steady_state_is_a_cache_hit() {
    let plan = plan(&with_drops(live(), 10_000));
    assert_eq!(
        plan,
        PassPlan {
            kind: PassKind::CacheHit,
            cause: None,
            may_mutate: false,
            force: false,
            refuse: None,
            reasons: vec![
                "usage 50000 tokens = 25% of the 200000 usable window (execute threshold 65%, force band 85%)".to_owned(),
                "no bust permission: cache hit, nothing changes".to_owned(),
            ],
        }
    );
}

#[test]
fn execute_threshold_busts_when_the_removal_pays() {
    // 130_000 = 65% exactly; R = 30K against P = 40K: 30K·2250 ≥ 40K·1150.
    let plan = plan(&with_drops(at_usage(130_000), 30_000));
    assert_eq!(
        (plan.kind, plan.cause),
        (PassKind::SoftBust, Some(BustCause::ExecuteThreshold))
    );
    assert!(plan.may_mutate && !plan.force);
    assert!(
        plan.reasons.iter().any(|r| r.ends_with("; pays")),
        "{:?}",
        plan.reasons
    );
    // One token below the threshold the same removal still pays over the working-set
    // horizon, once the cycle since the last bust is long enough; with that horizon off, it
    // defers.
    let mut below = with_drops(at_usage(129_999), 30_000);
    below.cycle.passes = 9;
    assert_eq!(
        kind_cause(&below),
        (PassKind::SoftBust, Some(BustCause::WorkingSet))
    );
    let no_working_set = PassConfig {
        working_set_horizon_turns: 0,
        ..PassConfig::default()
    };
    assert_eq!(
        kind_cause_with(
            &with_drops(at_usage(129_999), 30_000),
            &no_working_set,
            MODEL
        ),
        (PassKind::CacheHit, None)
    );
}

#[test]
fn a_working_set_bust_waits_for_its_cycle_to_pay() {
    // R = 10K against P = 40K below the threshold. Over a cycle of k passes with nothing
    // removable before: R·(k·100 + 1250) ≥ P·1150 from k = 34 on.
    let at = |passes: u64, removable_sum: u64| {
        let mut inputs = with_drops(at_usage(100_000), 10_000);
        inputs.cycle = BustCycle {
            passes,
            removable_sum: Tokens(removable_sum),
        };
        kind_cause(&inputs)
    };
    assert_eq!(at(0, 0), (PassKind::CacheHit, None));
    assert_eq!(at(32, 0), (PassKind::CacheHit, None));
    assert_eq!(at(33, 0), (PassKind::SoftBust, Some(BustCause::WorkingSet)));
    // What the cycle already read of removable tokens is spent either way: the bust must
    // beat the cycle's average cost, so the same pass defers when R was there all along.
    assert_eq!(at(33, 33 * 10_000), (PassKind::CacheHit, None));
    // The horizon never counts more turns than the configured cap.
    let capped = PassConfig {
        working_set_horizon_turns: 20,
        ..PassConfig::default()
    };
    let mut inputs = with_drops(at_usage(100_000), 10_000);
    inputs.cycle.passes = 500;
    assert_eq!(
        kind_cause_with(&inputs, &capped, MODEL),
        (PassKind::CacheHit, None)
    );
}

#[test]
fn execute_threshold_defers_a_bust_that_does_not_pay() {
    let mut inputs = with_drops(at_usage(140_000), 1_000);
    inputs.prefix_tokens_estimate = Tokens(100_000);
    let plan = plan(&inputs);
    assert_eq!((plan.kind, plan.may_mutate), (PassKind::CacheHit, false));
    assert!(
        plan.reasons
            .iter()
            .any(|r| r.ends_with("does not pay: defer")),
        "{:?}",
        plan.reasons
    );
}

#[test]
fn execute_threshold_with_nothing_to_land_never_busts() {
    let mut inputs = at_usage(150_000);
    inputs.prompt_tokens_estimate = Tokens(160_000); // growth heads for the force band
    inputs.prefix_tokens_estimate = Tokens(0);
    let plan = plan(&inputs);
    assert_eq!(plan.kind, PassKind::CacheHit);
    assert!(
        plan.reasons
            .iter()
            .any(|r| r.starts_with("nothing to land"))
    );
}

#[test]
fn execute_threshold_defers_when_only_the_force_band_is_ahead() {
    // R small, P large: does not pay. Growth 3K/turn heads for the force band, but busting
    // now for 1K tokens would rewrite 100K: the work waits until it pays or the ceiling.
    let mut inputs = with_drops(at_usage(140_000), 1_000);
    inputs.prompt_tokens_estimate = Tokens(143_000);
    inputs.prefix_tokens_estimate = Tokens(100_000);
    assert_eq!(kind_cause(&inputs), (PassKind::CacheHit, None));
    // The same work, large enough to pay, busts.
    let paying = with_drops(inputs, 60_000);
    assert_eq!(
        kind_cause(&paying),
        (PassKind::SoftBust, Some(BustCause::ExecuteThreshold))
    );
}

#[test]
fn economics_formula_boundaries() {
    let usage = measure_usage(&live(), &PassConfig::default(), MODEL);
    let weigh = |removed: u64, ttl: CacheTtl| {
        let inputs = PassInputs {
            ttl,
            ..with_drops(live(), removed)
        };
        BustEconomics::weigh(&inputs, &usage, Tokens(1_000))
    };
    assert_eq!(EXPECTED_REMAINING_TURNS, 10);
    // 5m: R·(10·100 + 1250) ≥ 1000·(1250 − 100) ⇔ R ≥ 511.1.
    assert_eq!(
        (
            weigh(511, CacheTtl::FiveMinutes).pays(),
            weigh(512, CacheTtl::FiveMinutes).pays()
        ),
        (false, true)
    );
    assert_eq!(weigh(512, CacheTtl::FiveMinutes).cost, 1_150_000);
    // 1h: R·(1000 + 2000) ≥ 1000·1900 ⇔ R ≥ 633.3.
    assert_eq!(
        (
            weigh(633, CacheTtl::OneHour).pays(),
            weigh(634, CacheTtl::OneHour).pays()
        ),
        (false, true)
    );
    assert!(!weigh(0, CacheTtl::FiveMinutes).worth_busting());
}

#[test]
fn cache_expired_at_exactly_the_ttl() {
    let mut inputs = live();
    inputs.last_call_ms = Some(inputs.now_ms - FIVE_MIN_MS);
    let plan = plan(&inputs);
    assert_eq!(
        (plan.kind, plan.cause),
        (PassKind::HardFold, Some(BustCause::CacheExpired))
    );
    assert!(plan.may_mutate);
    inputs.last_call_ms = Some(inputs.now_ms - FIVE_MIN_MS + 1);
    assert_eq!(kind_cause(&inputs), (PassKind::CacheHit, None));
    // A 1-hour cache is still alive after 5 minutes; it dies at one hour.
    inputs.ttl = CacheTtl::OneHour;
    inputs.last_call_ms = Some(inputs.now_ms - FIVE_MIN_MS);
    assert_eq!(kind_cause(&inputs), (PassKind::CacheHit, None));
    inputs.last_call_ms = Some(inputs.now_ms - 3_600_000);
    assert_eq!(
        kind_cause(&inputs),
        (PassKind::HardFold, Some(BustCause::CacheExpired))
    );
    // "never" never expires; a clock that went backwards keeps the cache alive.
    inputs.ttl = CacheTtl::Never;
    inputs.last_call_ms = Some(0);
    assert_eq!(kind_cause(&inputs), (PassKind::CacheHit, None));
    inputs.ttl = CacheTtl::FiveMinutes;
    inputs.last_call_ms = Some(inputs.now_ms + 10);
    assert_eq!(kind_cause(&inputs), (PassKind::CacheHit, None));
}

#[test]
fn dead_cache_and_first_render_fold() {
    let cases = [
        (
            PassInputs {
                model_changed: true,
                ..live()
            },
            BustCause::ModelChanged,
        ),
        (
            PassInputs {
                system_changed: true,
                ..live()
            },
            BustCause::SystemChanged,
        ),
        (
            PassInputs {
                head_rendered: false,
                ..live()
            },
            BustCause::FirstRender,
        ),
        (
            PassInputs {
                last_call_ms: None,
                ..live()
            },
            BustCause::CacheExpired,
        ),
        (PassInputs::default(), BustCause::FirstRender),
        (
            PassInputs {
                model_changed: true,
                system_changed: true,
                ..live()
            },
            BustCause::ModelChanged,
        ),
    ];
    for (inputs, cause) in cases {
        assert_eq!(
            kind_cause(&inputs),
            (PassKind::HardFold, Some(cause)),
            "{inputs:?}"
        );
    }
}

#[test]
fn operator_flush_soft_busts_even_with_nothing_pending() {
    let plan = plan(&PassInputs {
        operator_flush: true,
        ..live()
    });
    assert_eq!(
        (plan.kind, plan.cause, plan.force),
        (PassKind::SoftBust, Some(BustCause::OperatorFlush), false)
    );
}

#[test]
fn force_band_busts_when_it_pays_or_at_the_ceiling() {
    // 85% exactly with nothing pending: nothing to land, no bust.
    let idle = plan(&at_usage(170_000));
    assert_eq!((idle.kind, idle.force), (PassKind::CacheHit, false));
    // Emergency work that pays (R ≥ 0.51·P) lands in the force band.
    let paying = plan(&with_drops(at_usage(170_000), 30_000));
    assert_eq!(
        (paying.kind, paying.cause),
        (PassKind::SoftBust, Some(BustCause::ForceBand))
    );
    assert!(paying.may_mutate && paying.force && paying.refuse.is_none());
    // A little work in the force band waits...
    let small = plan(&with_drops(at_usage(170_000), 1_000));
    assert_eq!((small.kind, small.force), (PassKind::CacheHit, false));
    assert!(
        small
            .reasons
            .iter()
            .any(|r| r.starts_with("force band reached, but a bust would not pay yet"))
    );
    // ...until the ceiling (95% of the usable window), where anything that frees tokens lands.
    let ceiling = plan(&with_drops(at_usage(190_000), 1_000));
    assert_eq!(
        (ceiling.kind, ceiling.cause),
        (PassKind::SoftBust, Some(BustCause::ForceBand))
    );
    assert!(ceiling.force);
    assert_eq!(kind_cause(&at_usage(190_000)), (PassKind::CacheHit, None));
    // Below the band nothing is forced.
    let below = plan(&with_drops(at_usage(169_999), 1_000));
    assert_eq!((below.kind, below.force), (PassKind::CacheHit, false));
    // The estimate of this request counts: one big tool result reaches the ceiling now.
    let mut jump = with_drops(at_usage(100_000), 1_000);
    jump.prompt_tokens_estimate = Tokens(190_000);
    assert_eq!(
        kind_cause(&jump),
        (PassKind::SoftBust, Some(BustCause::ForceBand))
    );
}

#[test]
fn structural_edit_folds_only_with_permission() {
    let dirty = PassInputs {
        head_dirty: true,
        ..live()
    };
    assert_eq!(kind_cause(&dirty), (PassKind::CacheHit, None));
    let flushed = PassInputs {
        operator_flush: true,
        ..dirty
    };
    assert_eq!(
        kind_cause(&flushed),
        (PassKind::HardFold, Some(BustCause::StructuralEdit))
    );
}

#[test]
fn new_compartments_alone_soft_bust() {
    let mut inputs = with_drops(at_usage(150_000), 0);
    inputs.pending = PendingWork {
        reclaimable_tokens: Tokens(40_000),
        m1_changed: true,
        ..PendingWork::default()
    };
    inputs.m1_tokens = Tokens(300); // 15% of m[0] (2,000 tokens) is the backstop
    assert_eq!(
        kind_cause(&inputs),
        (PassKind::SoftBust, Some(BustCause::ExecuteThreshold))
    );
}

#[test]
fn m1_backstop_boundaries() {
    let history = HistoryConfig::default();
    // History budget of a 200K window is 10K; 20% of it is 2,000 tokens.
    let over_budget = |m1: u64| PassInputs {
        m1_tokens: Tokens(m1),
        m0_tokens: Tokens(0),
        ..live()
    };
    assert!(m1_backstop(&over_budget(2_000), &history).is_none());
    assert!(m1_backstop(&over_budget(2_001), &history).is_some());
    // 15% of m[0] once m[0] ≥ 500 tokens: 75 of 500.
    let of_m0 = |m0: u64, m1: u64| PassInputs {
        m0_tokens: Tokens(m0),
        m1_tokens: Tokens(m1),
        ..live()
    };
    assert!(m1_backstop(&of_m0(500, 75), &history).is_none());
    assert!(m1_backstop(&of_m0(500, 76), &history).is_some());
    assert!(m1_backstop(&of_m0(499, 1_000), &history).is_none());
    // More than 40 memory updates.
    let updates = |n: u32| PassInputs {
        m1_memory_updates: n,
        ..live()
    };
    assert!(m1_backstop(&updates(40), &history).is_none());
    assert_eq!(
        m1_backstop(&updates(41), &history),
        Some("m[1] backstop: 41 memory updates > 40".to_owned())
    );
    // Unknown window: the 20K fallback budget, so 4,000 tokens.
    let unknown = |m1: u64| PassInputs {
        usable_window: None,
        ..over_budget(m1)
    };
    assert!(m1_backstop(&unknown(4_000), &history).is_none());
    assert!(m1_backstop(&unknown(4_001), &history).is_some());
}

#[test]
fn m1_backstop_folds_only_a_pass_that_may_bust() {
    let big = PassInputs {
        m1_memory_updates: 41,
        ..live()
    };
    assert_eq!(kind_cause(&big), (PassKind::CacheHit, None));
    let flushed = PassInputs {
        operator_flush: true,
        ..big.clone()
    };
    assert_eq!(
        kind_cause(&flushed),
        (PassKind::HardFold, Some(BustCause::M1Backstop))
    );
    let expired = PassInputs {
        last_call_ms: Some(0),
        ..big
    };
    assert_eq!(
        kind_cause(&expired),
        (PassKind::HardFold, Some(BustCause::CacheExpired))
    );
}

#[test]
fn emergency_at_a_proven_limit_and_refusal_only_when_the_minimal_rendering_is_over() {
    // Proven 150K (smaller than advertised); 95% of it is 142,500 tokens (71% of usable).
    let near = |usage: u64| PassInputs {
        proven_window: Some(Tokens(150_000)),
        ..at_usage(usage)
    };
    let with_work = with_drops(near(142_500), 5_000);
    let emergency = plan(&with_work);
    assert_eq!(
        (emergency.kind, emergency.cause, emergency.force),
        (PassKind::SoftBust, Some(BustCause::Emergency), true)
    );
    assert!(emergency.refuse.is_none());
    // Nothing to fold, but the request fits: it is sent, not refused.
    assert!(plan(&near(142_500)).refuse.is_none());

    // Over the proven limit with work to land: an emergency, whatever the economics.
    let over = PassInputs {
        minimal_prompt_tokens: Tokens(60_000),
        ..with_drops(near(151_000), 100)
    };
    let over_plan = plan(&over);
    assert_eq!(over_plan.cause, Some(BustCause::Emergency));
    assert!(over_plan.refuse.is_none(), "the minimal rendering fits");

    let stuck = PassInputs {
        minimal_prompt_tokens: Tokens(150_001),
        ..near(160_000)
    };
    assert_eq!(
        plan(&stuck).refuse,
        Some(Refusal {
            usage_tokens: Tokens(150_001),
            limit_tokens: Tokens(150_000),
            message: "prompt is too long: even with every older part dropped and every recent one \
                      cut to an excerpt, this request needs about 150001 tokens, more than the \
                      150000 tokens left for the prompt under the 150000-token limit the provider \
                      proved (the system prompt and tools alone take about 15000 tokens, the \
                      summarised history 2050). magic-context did not send it. Use a model with a \
                      larger context window, turn off tools or MCP servers you do not need, or \
                      start a new session."
                .to_owned(),
        })
    );
    // The usable window is a limit too; without any limit nothing is refused.
    let over_usable = PassInputs {
        minimal_prompt_tokens: Tokens(200_001),
        ..at_usage(400_000)
    };
    assert!(plan(&over_usable).refuse.is_some());
    let unknown = PassInputs {
        usable_window: None,
        ..over_usable
    };
    assert!(plan(&unknown).refuse.is_none());
}

#[test]
fn per_model_token_threshold() {
    let mut pass = PassConfig {
        working_set_horizon_turns: 0,
        ..PassConfig::default()
    };
    pass.execute_threshold_by_model.insert(
        "gpt-5".to_owned(),
        ExecuteThreshold::Tokens(Tokens(100_000)),
    );
    let history = HistoryConfig::default();
    let inputs = with_drops(at_usage(100_000), 90_000);
    assert_eq!(
        plan_pass(&inputs, &pass, &history, "gpt-5-codex").kind,
        PassKind::SoftBust
    );
    assert_eq!(
        plan_pass(&inputs, &pass, &history, MODEL).kind,
        PassKind::CacheHit
    );
    // A token threshold still fires when the window is unknown; percent thresholds never do.
    let unknown = PassInputs {
        usable_window: None,
        ..inputs
    };
    assert_eq!(
        plan_pass(&unknown, &pass, &history, "gpt-5").kind,
        PassKind::SoftBust
    );
    assert_eq!(
        plan_pass(&unknown, &pass, &history, MODEL).kind,
        PassKind::CacheHit
    );
    // A token threshold above the window: the force band (100%) still busts.
    pass.execute_threshold_by_model.insert(
        "gpt-5".to_owned(),
        ExecuteThreshold::Tokens(Tokens(500_000)),
    );
    let full = with_drops(at_usage(200_000), 1_000);
    assert_eq!(
        kind_cause_with(&full, &pass, "gpt-5"),
        (PassKind::SoftBust, Some(BustCause::ForceBand))
    );
}

fn kind_cause_with(
    inputs: &PassInputs,
    pass: &PassConfig,
    model: &str,
) -> (PassKind, Option<BustCause>) {
    let plan = plan_pass(inputs, pass, &HistoryConfig::default(), model);
    (plan.kind, plan.cause)
}

#[test]
fn plan_serialises_for_the_ledger() {
    let plan = plan(&PassInputs {
        operator_flush: true,
        ..live()
    });
    let json = serde_json::to_value(&plan).unwrap();
    assert_eq!(json["kind"], "soft_bust");
    assert_eq!(json["cause"], "operator_flush");
}

// ---- proptests -------------------------------------------------------------------------

fn arb_tokens(max: u64) -> impl Strategy<Value = Tokens> {
    prop_oneof![Just(Tokens(0)), (0..=max).prop_map(Tokens)]
}

prop_compose! {
    fn arb_pending()(
        queued in arb_tokens(80_000),
        reclaim in arb_tokens(80_000),
        m1_changed in any::<bool>(),
    ) -> PendingWork {
        PendingWork { queued_drop_tokens: queued, reclaimable_tokens: reclaim, m1_changed }
    }
}

prop_compose! {
    fn arb_inputs()(
        now_ms in 0..10_000_000u64,
        since_ms in prop::option::weighted(0.95, prop_oneof![4 => 0..400_000u64, 1 => 0..5_000_000u64]),
        last_usage in arb_tokens(420_000),
        growth in prop_oneof![Just(0u64), 0..40_000u64],
        shrink in any::<bool>(),
        window in prop::option::of(prop_oneof![Just(Tokens(200_000)), (1..=400_000u64).prop_map(Tokens)]),
        proven in prop::option::of(prop_oneof![Just(Tokens(200_000)), (0..=400_000u64).prop_map(Tokens)]),
        ttl in prop_oneof![Just(CacheTtl::FiveMinutes), Just(CacheTtl::OneHour), Just(CacheTtl::Never)],
        model_changed in prop::bool::weighted(0.05),
        system_changed in prop::bool::weighted(0.05),
        operator_flush in prop::bool::weighted(0.1),
        head_rendered in prop::bool::weighted(0.9),
        head_dirty in prop::bool::weighted(0.2),
        m0 in arb_tokens(20_000),
        m1 in arb_tokens(15_000),
        updates in 0..60u32,
        pending in arb_pending(),
        prefix in arb_tokens(300_000),
        fixed in arb_tokens(30_000),
        minimal in prop::option::weighted(0.5, arb_tokens(450_000)),
        cycle_passes in prop_oneof![Just(0u64), 0..200u64],
        cycle_sum in arb_tokens(2_000_000),
    ) -> PassInputs {
        let estimate = if shrink {
            last_usage.get().saturating_sub(growth)
        } else {
            last_usage.get() + growth
        };
        PassInputs {
            now_ms,
            last_call_ms: since_ms.map(|since| now_ms.saturating_sub(since)),
            last_usage_tokens: last_usage,
            usable_window: window,
            proven_window: proven,
            ttl,
            // Rare dead-cache flags keep the live-cache region well covered.
            model_changed,
            system_changed,
            operator_flush,
            head_rendered,
            head_dirty,
            m0_tokens: m0,
            m1_tokens: m1,
            m1_memory_updates: updates,
            pending,
            prompt_tokens_estimate: Tokens(estimate),
            fixed_tokens: fixed,
            // The minimal rendering is never larger than the prompt it shrinks.
            minimal_prompt_tokens: minimal.map_or(Tokens(0), |minimal| Tokens(minimal.get().min(estimate))),
            prefix_tokens_estimate: prefix,
            cycle: BustCycle { passes: cycle_passes, removable_sum: cycle_sum },
        }
    }
}

prop_compose! {
    fn arb_pass()(execute in 20..=90u8, tokens in 1_000..400_000u64, horizon in prop_oneof![Just(0u32), 1..40u32]) -> PassConfig {
        let mut pass = PassConfig {
            execute_threshold_percent: Percent::saturating(execute),
            working_set_horizon_turns: horizon,
            ..PassConfig::default()
        };
        pass.execute_threshold_by_model
            .insert("tok".to_owned(), ExecuteThreshold::Tokens(Tokens(tokens)));
        pass
    }
}

fn arb_model() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just(MODEL), Just("tok-model")]
}

fn is_dead(inputs: &PassInputs) -> bool {
    let expired = match (inputs.ttl.duration_ms(), inputs.last_call_ms) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(ttl), Some(last)) => inputs.now_ms.saturating_sub(last) >= ttl,
    };
    inputs.model_changed || inputs.system_changed || expired
}

fn percent_reached(usage: Tokens, percent: Percent, window: Option<Tokens>) -> bool {
    window.is_some_and(|w| {
        w.get() > 0
            && u128::from(usage.get()) * 100 >= u128::from(percent.get()) * u128::from(w.get())
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn cache_hit_iff_no_mutation(inputs in arb_inputs(), pass in arb_pass(), model in arb_model()) {
        let plan = plan_pass(&inputs, &pass, &HistoryConfig::default(), model);
        prop_assert_eq!(plan.kind == PassKind::CacheHit, !plan.may_mutate);
        prop_assert_eq!(plan.kind == PassKind::CacheHit, plan.cause.is_none());
        prop_assert_eq!(plan.may_mutate, matches!(plan.kind, PassKind::SoftBust | PassKind::HardFold));
        if let Some(cause) = plan.cause {
            prop_assert_eq!(cause.requires_fold(), plan.kind == PassKind::HardFold);
        }
    }

    #[test]
    fn dead_cache_hard_folds(inputs in arb_inputs(), pass in arb_pass(), model in arb_model()) {
        let plan = plan_pass(&inputs, &pass, &HistoryConfig::default(), model);
        if is_dead(&inputs) || !inputs.head_rendered {
            prop_assert_eq!(plan.kind, PassKind::HardFold);
        }
    }

    #[test]
    fn below_execute_with_a_live_cache_is_a_cache_hit(
        inputs in arb_inputs(), pass in arb_pass(), model in arb_model(),
    ) {
        let usage = measure_usage(&inputs, &pass, model);
        let execute = match pass.execute_threshold_for(model) {
            ExecuteThreshold::Percent(percent) => percent_reached(usage.usage_tokens, percent, inputs.usable_window),
            ExecuteThreshold::Tokens(tokens) => usage.usage_tokens >= tokens,
        };
        let refusal_level = inputs.proven_window.is_some_and(|p| p.get() > 0
            && u128::from(usage.usage_tokens.get()) * 100 >= u128::from(pass.refusal_percent.get()) * u128::from(p.get()));
        let plan = plan_pass(&inputs, &pass, &HistoryConfig::default(), model);
        if !execute && !usage.force_reached && !refusal_level && !is_dead(&inputs)
            && !inputs.operator_flush && inputs.head_rendered
        {
            // Only the working-set weighing may bust here: it pays over its horizon and
            // removes at least the minimum.
            // (A working-set bust may turn into a fold: its reasons say why it busted.)
            if plan.reasons.iter().any(|reason| reason.starts_with("working set: ")) {
                prop_assert!(pass.working_set_horizon_turns > 0);
                prop_assert!(inputs.pending.removable_tokens().get() >= economics::MIN_WORKING_SET_REMOVAL);
            } else {
                prop_assert_eq!(plan.kind, PassKind::CacheHit);
            }
            prop_assert!(!plan.force);
        }
    }

    #[test]
    fn force_band_may_mutate(inputs in arb_inputs(), pass in arb_pass(), model in arb_model()) {
        let usage = measure_usage(&inputs, &pass, model);
        let window = inputs.usable_window.unwrap_or(Tokens(0));
        let execute = pass.execute_threshold_for(model).percent_of(window);
        let band = PassConfig::force_band_percent(execute);
        let plan = plan_pass(&inputs, &pass, &HistoryConfig::default(), model);
        let ceiling = percent_reached(usage.usage_tokens, pass.refusal_percent, inputs.usable_window);
        if percent_reached(usage.usage_tokens, band, inputs.usable_window)
            && ceiling
            && inputs.pending.has_work()
        {
            prop_assert!(plan.may_mutate && plan.force);
        }
        if plan.force {
            prop_assert!(plan.may_mutate);
        }
    }

    #[test]
    fn refusal_only_when_the_minimal_rendering_is_over_the_limit(
        inputs in arb_inputs(), pass in arb_pass(), model in arb_model(),
    ) {
        let plan = plan_pass(&inputs, &pass, &HistoryConfig::default(), model);
        let limit = prompt_limit(&inputs);
        let minimal = inputs.minimal_prompt_tokens;
        prop_assert_eq!(
            plan.refuse.is_some(),
            minimal.get() > 0 && limit.is_some_and(|limit| minimal > limit)
        );
        if let Some(refusal) = &plan.refuse {
            prop_assert_eq!(Some(refusal.limit_tokens), limit);
            prop_assert_eq!(refusal.usage_tokens, minimal);
            prop_assert!(refusal.message.starts_with("prompt is too long"));
        }
    }

    #[test]
    fn over_the_limit_with_work_always_busts(
        inputs in arb_inputs(), pass in arb_pass(), model in arb_model(),
    ) {
        let history = HistoryConfig::default();
        let plan = plan_pass(&inputs, &pass, &history, model);
        let over = prompt_limit(&inputs).is_some_and(|limit| inputs.prompt_tokens_estimate > limit);
        if over && inputs.pending.has_work() {
            prop_assert!(plan.may_mutate, "{:#?}", plan);
        }
    }

    #[test]
    fn planning_is_deterministic(inputs in arb_inputs(), pass in arb_pass(), model in arb_model()) {
        let history = HistoryConfig::default();
        let first = plan_pass(&inputs, &pass, &history, model);
        let again = plan_pass(&inputs.clone(), &pass.clone(), &history, model);
        prop_assert_eq!(&first, &again);
        let json = serde_json::to_string(&inputs).unwrap();
        let back: PassInputs = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(plan_pass(&back, &pass, &history, model), first);
    }
}

#[test]
fn dead_cache_in_the_force_band_folds_with_force() {
    let mut inputs = at_usage(180_000);
    inputs.model_changed = true;
    let plan = plan(&inputs);
    assert_eq!(
        (plan.kind, plan.cause, plan.may_mutate, plan.force),
        (
            PassKind::HardFold,
            Some(BustCause::ModelChanged),
            true,
            true
        )
    );
}

#[test]
fn a_permitted_fold_records_its_permission() {
    let mut inputs = with_drops(at_usage(190_000), 1_000);
    inputs.head_dirty = true;
    let plan = plan(&inputs);
    assert_eq!(
        (plan.kind, plan.cause),
        (PassKind::HardFold, Some(BustCause::StructuralEdit))
    );
    assert_eq!(
        plan.reasons.last().map(String::as_str),
        Some("m[0] content changed (structural history edit): fold")
    );
    assert!(
        plan.reasons
            .iter()
            .any(|r| r.starts_with("ceiling reached"))
    );
}
