use serde_json::{Value, json};

use super::*;

const SONNET: &str = "claude-sonnet-4-5-20250929";
const MINUTE_MS: u64 = 60_000;

/// Counts `~` characters, so sizes are exactly what the test wrote (before calibration).
struct Tildes;

impl CountTokens for Tildes {
    fn count_tokens(&self, text: &str) -> u64 {
        text.matches('~').count() as u64
    }
}

fn provider() -> SimProvider {
    SimProvider::new(Arc::new(Tildes))
}

/// A Messages request whose one user turn holds `tokens` raw tokens, cached with a breakpoint.
fn messages(model: &str, tokens: usize) -> MessagesRequest {
    let body = json!({
        "model": model,
        "max_tokens": 16,
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "~".repeat(tokens), "cache_control": {"type": "ephemeral"}},
        ]}],
    });
    MessagesRequest::decode(&serde_json::to_vec(&body).unwrap(), 1 << 24).unwrap()
}

fn chat(model: &str, contents: &[usize]) -> ChatRequest {
    let messages: Vec<Value> = contents
        .iter()
        .map(|&tokens| json!({"role": "user", "content": "~".repeat(tokens)}))
        .collect();
    let body = json!({"model": model, "messages": messages});
    ChatRequest::decode(&serde_json::to_vec(&body).unwrap(), 1 << 24).unwrap()
}

/// Cost in millionths of a dollar.
fn micro_usd(cost: f64) -> i64 {
    (cost * 1_000_000.0).round() as i64
}

#[test]
fn provider_is_send() {
    fn is_send<T: Send>() {}
    is_send::<SimProvider>();
}

#[test]
fn anthropic_overflow_body_is_the_providers() {
    let error = ProviderError::Overflow {
        wire: Wire::Anthropic,
        prompt_tokens: 208_310,
        window_tokens: 200_000,
    };
    assert_eq!(error.status(), 400);
    assert_eq!(
        error.to_body(),
        json!({"type": "error", "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 208310 tokens > 200000 maximum",
        }})
    );
    let text = serde_json::to_string(&error.to_body()).unwrap();
    assert_eq!(
        text,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}"#
    );
}

#[test]
fn openai_overflow_body_is_the_providers() {
    let error = ProviderError::Overflow {
        wire: Wire::OpenAi,
        prompt_tokens: 130_000,
        window_tokens: 128_000,
    };
    assert_eq!(error.status(), 400);
    let text = serde_json::to_string(&error.to_body()).unwrap();
    assert_eq!(
        text,
        r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#
    );
}

#[test]
fn anthropic_calls_are_priced_and_numbered() {
    let mut sim = provider();
    let request = messages(SONNET, 2_000);
    // 2,000 raw tokens × 1.064 = 2,128 Claude tokens.
    let first = sim.anthropic(&request, 100, 0, Some("a".into())).unwrap();
    let second = sim.anthropic(&request, 50, MINUTE_MS, None).unwrap();
    let sonnet = model_spec(SONNET).price;
    let expected = [
        CallRecord {
            seq: 0,
            at_ms: 0,
            model: SONNET.into(),
            wire: Wire::Anthropic,
            status: 200,
            prompt_tokens: 2_128,
            input_tokens: 0,
            cache_write_5m: 2_128,
            cache_write_1h: 0,
            cache_read: 0,
            output_tokens: 100,
            cost_usd: sonnet.cost_usd(0, 2_128, 0, 0, 100),
            label: Some("a".into()),
        },
        CallRecord {
            seq: 1,
            at_ms: MINUTE_MS,
            model: SONNET.into(),
            wire: Wire::Anthropic,
            status: 200,
            prompt_tokens: 2_128,
            input_tokens: 0,
            cache_write_5m: 0,
            cache_write_1h: 0,
            cache_read: 2_128,
            output_tokens: 50,
            cost_usd: sonnet.cost_usd(0, 0, 0, 2_128, 50),
            label: None,
        },
    ];
    assert_eq!((first, second), (expected[0].clone(), expected[1].clone()));
    assert_eq!(sim.ledger().rows(), &expected);
    // $3.75/M × 2,128 + $15/M × 100 = $0.00948; $0.30/M × 2,128 + $15/M × 50 = $0.0013884.
    assert_eq!(micro_usd(expected[0].cost_usd), 9_480);
    assert_eq!(micro_usd(expected[1].cost_usd), 1_388);
    assert_eq!(micro_usd(sim.ledger().total_cost_usd()), 10_868);
}

#[test]
fn anthropic_overflow_is_refused_with_a_free_row_and_no_cache_change() {
    let mut sim = provider().with_window(2_000);
    let big = messages(SONNET, 2_000);
    let error = sim.anthropic(&big, 100, 0, None).unwrap_err();
    assert_eq!(
        error,
        ProviderError::Overflow {
            wire: Wire::Anthropic,
            prompt_tokens: 2_128,
            window_tokens: 2_000,
        }
    );
    let row = &sim.ledger().rows()[0];
    assert_eq!(
        (row.seq, row.status, row.prompt_tokens, row.cost_usd),
        (0, 400, 2_128, 0.0)
    );
    assert_eq!(
        (row.cache_write_5m, row.cache_read, row.output_tokens),
        (0, 0, 0)
    );
    // Nothing was written: the next call that fits finds a cold cache.
    let fits = messages(SONNET, 1_500);
    let served = sim.anthropic(&fits, 10, 1, None).unwrap();
    assert_eq!((served.seq, served.status, served.cache_read), (1, 200, 0));
    assert_eq!(served.cache_write_5m, 1_596, "1,500 × 1.064");
}

#[test]
fn a_prompt_of_exactly_the_window_is_served() {
    let mut sim = provider().with_window(1_596);
    assert!(sim.anthropic(&messages(SONNET, 1_500), 1, 0, None).is_ok());
}

#[test]
fn breakpoint_errors_come_first_and_get_a_row() {
    let mut sim = provider().with_window(10);
    let blocks: Vec<Value> = (0..5)
        .map(|_| json!({"type": "text", "text": "~~~~~", "cache_control": {"type": "ephemeral"}}))
        .collect();
    let body = json!({"model": SONNET, "max_tokens": 1,
        "messages": [{"role": "user", "content": blocks}]});
    let request = MessagesRequest::decode(&serde_json::to_vec(&body).unwrap(), 1 << 20).unwrap();
    let error = sim.anthropic(&request, 1, 0, None).unwrap_err();
    assert_eq!(
        error,
        ProviderError::Cache(CacheError::TooManyBreakpoints { found: 5 })
    );
    assert_eq!(
        error.to_body(),
        CacheError::TooManyBreakpoints { found: 5 }.to_body()
    );
    assert_eq!(sim.ledger().rows()[0].status, 400);
}

#[test]
fn openai_calls_read_the_automatic_cache() {
    let mut sim = provider();
    // gpt-4o: o200k itself, 3 template tokens per message and 3 for the reply.
    let first = chat("gpt-4o", &[1_500, 700]);
    let next = chat("gpt-4o", &[1_500, 700, 300]);
    let a = sim.openai(&first, 20, 0, None).unwrap();
    let b = sim.openai(&next, 20, MINUTE_MS, None).unwrap();
    assert_eq!(sim.count_openai(&next), 1_503 + 703 + 303 + 3);
    let found: Vec<_> = [&a, &b]
        .iter()
        .map(|row| {
            (
                row.seq,
                row.wire,
                row.prompt_tokens,
                row.input_tokens,
                row.cache_read,
            )
        })
        .collect();
    // The second call reuses the first's 2,206 message tokens, rounded down to 2,176.
    assert_eq!(
        found,
        vec![
            (0, Wire::OpenAi, 2_209, 2_209, 0),
            (1, Wire::OpenAi, 2_512, 2_512 - 2_176, 2_176),
        ]
    );
    let price = model_spec("gpt-4o").price;
    assert_eq!(b.cost_usd, price.cost_usd(336, 0, 0, 2_176, 20));
    // $2.50/M × 336 + $1.25/M × 2,176 + $10/M × 20 = $0.00376.
    assert_eq!(micro_usd(b.cost_usd), 3_760);
}

#[test]
fn openai_overflow_is_refused_with_a_free_row() {
    let mut sim = provider().with_window(1_000);
    let error = sim
        .openai(&chat("gpt-5", &[2_000]), 5, 0, None)
        .unwrap_err();
    assert_eq!(
        error,
        ProviderError::Overflow {
            wire: Wire::OpenAi,
            prompt_tokens: 2_006,
            window_tokens: 1_000,
        }
    );
    let row = &sim.ledger().rows()[0];
    assert_eq!((row.status, row.cost_usd, row.input_tokens), (400, 0.0, 0));
    // The refused prompt was not stored.
    let sim_window = sim.with_window(10_000);
    let mut sim = sim_window;
    let served = sim.openai(&chat("gpt-5", &[2_000]), 5, 1, None).unwrap();
    assert_eq!((served.seq, served.cache_read), (1, 0));
}

#[test]
fn counts_without_changing_anything() {
    let sim = provider();
    assert_eq!(sim.count_anthropic(&messages(SONNET, 2_000)), 2_128);
    assert_eq!(sim.count_text("~~~~~~~~~~"), 10);
    assert_eq!(
        sim.count_text_for(SONNET, Wire::Anthropic, "~~~~~~~~~~"),
        11
    );
    assert!(sim.ledger().rows().is_empty());
}

#[test]
fn token_scale_multiplies_what_the_provider_counts_and_checks() {
    let scale = TokenScale::new(1.25).unwrap();
    let mut scaled = provider().with_token_scale(scale).with_window(1_300);
    let mut plain = provider().with_window(1_300);
    // 1,000 raw tokens: 1,064 as Claude counts them, 1,330 at 1.25x, over the 1,300 window.
    let request = messages(SONNET, 1_000);
    assert_eq!(plain.count_anthropic(&request), 1_064);
    assert_eq!(scaled.count_anthropic(&request), 1_330);
    assert_eq!(
        plain
            .anthropic(&request, 1, 0, None)
            .map(|r| r.prompt_tokens),
        Ok(1_064)
    );
    assert_eq!(
        scaled.anthropic(&request, 1, 0, None),
        Err(ProviderError::Overflow {
            wire: Wire::Anthropic,
            prompt_tokens: 1_330,
            window_tokens: 1_300,
        })
    );
    // A served call's usage is in the scaled count too, cache writes included.
    let small = messages(SONNET, 800);
    let record = scaled.anthropic(&small, 1, 0, None).unwrap();
    assert_eq!(record.prompt_tokens, 1_064);
    assert_eq!(record.cache_write_5m + record.input_tokens, 1_064);
    // OpenAI: 100 raw tokens + 3 template tokens per message + 3 for the reply, all scaled.
    let request = chat("gpt-4o", &[100]);
    assert_eq!(provider().count_openai(&request), 106);
    assert_eq!(scaled.count_openai(&request), 133);
    assert_eq!(scaled.count_text_for("gpt-4o", Wire::OpenAi, "~~~~"), 5);
}

#[test]
fn earlier_turns_thinking_is_billed_only_where_the_model_reads_it() {
    let request = |model: &str| {
        let body = json!({
            "model": model,
            "max_tokens": 16,
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "~".repeat(1_000), "signature": "s"},
                    {"type": "text", "text": "~".repeat(100)}]},
                {"role": "user", "content": "~".repeat(100)},
            ],
        });
        MessagesRequest::decode(&serde_json::to_vec(&body).unwrap(), 1 << 24).unwrap()
    };
    let provider = provider();
    // Sent with a new user turn, the thinking is the last assistant turn's: every model reads
    // it. One more turn later, Sonnet 4.5 drops it and Opus 4.5 keeps it.
    let later = |model: &str| {
        let mut request = request(model);
        let mut next = request.messages.clone();
        next.extend(request.messages[1..].iter().cloned());
        request.messages = next;
        request
    };
    // A thinking block is 1,064 tokens as Claude counts 1,000; a 100-token text is 106.
    let (sonnet, opus) = ("claude-sonnet-4-5", "claude-opus-4-5");
    assert_eq!(provider.count_anthropic(&request(sonnet)), 1_064 + 2 * 106);
    assert_eq!(provider.count_anthropic(&request(opus)), 1_064 + 2 * 106);
    assert_eq!(provider.count_anthropic(&later(sonnet)), 1_064 + 4 * 106);
    assert_eq!(provider.count_anthropic(&later(opus)), 2 * 1_064 + 4 * 106);
}
