use mc_llm::{EndpointLabel, LlmClient, StructuredAnswer, Usage, Wire};
use serde_json::json;

use crate::fake::{Fake, anthropic_answer, fast_policy, openai_answer, request, responses_answer};

#[tokio::test]
async fn anthropic_forces_the_tool_and_sends_the_key_in_x_api_key() {
    let fake = Fake::start(vec![anthropic_answer(json!({"title": "hello"}))]).await;
    let client = LlmClient::new(fast_policy()).unwrap();
    let endpoint = fake.endpoint(Wire::Anthropic, "claude-haiku", Some("sk-ant-test"));

    let answer = client.call_structured(&endpoint, &request()).await.unwrap();

    assert_eq!(
        answer,
        StructuredAnswer {
            input: json!({"title": "hello"}),
            usage: Usage {
                input_tokens: 100,
                output_tokens: 20,
                cache_read: 0,
                cache_write: 0
            },
            answered_by: EndpointLabel {
                model: "claude-haiku".into(),
                host: fake.base_url.trim_start_matches("http://").into(),
            },
        }
    );
    let seen = fake.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/messages");
    assert_eq!(seen[0].headers["x-api-key"], "sk-ant-test");
    assert_eq!(seen[0].headers["anthropic-version"], "2023-06-01");
    assert!(seen[0].headers.get("authorization").is_none());
    assert_eq!(
        seen[0].body["tool_choice"],
        json!({"type": "tool", "name": "record_history"})
    );
    assert_eq!(seen[0].body["tools"], json!([request().tool]));
    assert_eq!(seen[0].body["system"], "You summarise.");
    assert_eq!(seen[0].body["model"], "claude-haiku");
}

#[tokio::test]
async fn openai_forces_the_function_and_sends_a_bearer_token() {
    let fake = Fake::start(vec![openai_answer(&json!({"title": "hi"}))]).await;
    let client = LlmClient::new(fast_policy()).unwrap();
    let endpoint = fake.endpoint(Wire::OpenAiChat, "gpt-small", Some("sk-openai-test"));

    let answer = client.call_structured(&endpoint, &request()).await.unwrap();

    assert_eq!(answer.input, json!({"title": "hi"}));
    assert_eq!(answer.usage.input_tokens, 100);
    let seen = fake.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(seen[0].headers["authorization"], "Bearer sk-openai-test");
    assert!(seen[0].headers.get("x-api-key").is_none());
    assert_eq!(
        seen[0].body["tool_choice"],
        json!({"type": "function", "function": {"name": "record_history"}})
    );
    assert_eq!(
        seen[0].body["tools"][0]["function"]["parameters"],
        request().tool["input_schema"]
    );
}

#[tokio::test]
async fn local_openai_server_gets_no_auth_and_a_v1_base_is_not_doubled() {
    let fake = Fake::start(vec![openai_answer(&json!({"title": "local"}))]).await;
    let client = LlmClient::new(fast_policy()).unwrap();
    let mut endpoint = fake.endpoint(Wire::OpenAiChat, "qwen3:8b", None);
    endpoint.base_url = format!("{}/v1", fake.base_url);
    endpoint
        .extra_headers
        .push(("x-trace".into(), mc_core::Secret::new("abc")));

    let answer = client.call_structured(&endpoint, &request()).await.unwrap();

    assert_eq!(answer.input, json!({"title": "local"}));
    let seen = fake.seen();
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert!(seen[0].headers.get("authorization").is_none());
    assert_eq!(seen[0].headers["x-trace"], "abc");
}

#[tokio::test]
async fn responses_enforces_a_strict_schema_format_and_sends_a_bearer_token() {
    let fake = Fake::start(vec![responses_answer(&json!({"title": "hey"}))]).await;
    let client = LlmClient::new(fast_policy()).unwrap();
    let endpoint = fake.endpoint(Wire::OpenAiResponses, "gpt-5-mini", Some("sk-resp-test"));

    let answer = client.call_structured(&endpoint, &request()).await.unwrap();

    assert_eq!(answer.input, json!({"title": "hey"}));
    assert_eq!(
        answer.usage,
        Usage {
            input_tokens: 36,
            output_tokens: 20,
            cache_read: 64,
            cache_write: 0
        }
    );
    let seen = fake.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/responses");
    assert_eq!(seen[0].headers["authorization"], "Bearer sk-resp-test");
    assert_eq!(seen[0].body["instructions"], "You summarise.");
    assert_eq!(seen[0].body["store"], false);
    assert!(seen[0].body.get("tools").is_none());
    assert_eq!(
        seen[0].body["text"]["format"],
        json!({
            "type": "json_schema",
            "name": "record_history",
            "description": "Record it.",
            "schema": {
                "type": "object",
                "properties": {"title": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
                "required": ["title"],
                "additionalProperties": false,
            },
            "strict": true,
        })
    );
}
