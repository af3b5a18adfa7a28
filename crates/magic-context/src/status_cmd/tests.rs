use super::*;

#[test]
fn ages_use_the_largest_whole_unit() {
    let now = 1_000_000_000_000;
    let ago = |ms: i64| age(now, now - ms);
    assert_eq!(
        [
            ago(-5_000),
            ago(59_999),
            ago(60_000),
            ago(3_599_000),
            ago(7_200_000),
            ago(172_800_000),
        ],
        ["0s ago", "59s ago", "1m ago", "59m ago", "2h ago", "2d ago"].map(String::from)
    );
}

#[test]
fn stateful_responses_calls_are_counted() {
    let call = |route: &str, started_ms: i64| CallRow {
        session: None,
        pass_seq: None,
        started_ms,
        route: route.to_owned(),
        model: "gpt-5".to_owned(),
        pass_kind: None,
        bust_cause: None,
        status: 200,
        uncached_tokens: None,
        cache_write_tokens: None,
        cache_read_tokens: None,
        output_tokens: None,
        first_byte_ms: None,
        total_ms: 0,
        stop_reason: None,
        usable_window: None,
        overflow_retry: false,
        error: None,
        client_prompt_tokens: None,
        client_fixed_tokens: None,
        window_tokens: None,
    };
    let newest_first = [
        call("anthropic", 9_000),
        call(mc_proxy::STATEFUL_RESPONSES_ROUTE, 8_000),
        call("openai_responses", 7_000),
        call(mc_proxy::STATEFUL_RESPONSES_ROUTE, 6_000),
    ];
    let stateful = StatefulCalls::among(&newest_first).unwrap();
    assert_eq!(
        stateful,
        StatefulCalls {
            count: 2,
            last_ms: 8_000
        }
    );
    assert!(
        stateful
            .text(68_000)
            .starts_with("2 Responses call(s) forwarded unmanaged, the last 1m ago")
    );
    assert_eq!(StatefulCalls::among(&newest_first[..1]), None);
}

#[test]
fn shares_keep_one_decimal() {
    assert_eq!(
        [percent(0.996), percent(1.0), percent(0.0)],
        ["99.6%", "100.0%", "0.0%"].map(String::from)
    );
}
