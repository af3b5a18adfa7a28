use proptest::prelude::*;

use super::*;

/// Messages providers really send (and our own transport errors): none holds a credential,
/// so each must come back byte for byte.
#[test]
fn ordinary_messages_survive_unchanged() {
    let messages = [
        "Overloaded",
        "prompt is too long: 210000 tokens > 200000 maximum",
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.",
        "Number of request tokens has exceeded your per-minute rate limit (https://docs.anthropic.com/en/api/rate-limits); see the response headers for current usage.",
        "messages.1.content.0.tool_result: unexpected `tool_use_id` found in `tool_result` blocks: toolu_01A09q90qw90lq917835lq9",
        "Invalid 'messages[1].content': string too long. Expected a string with maximum length 10485760, but got a string with length 10485761 instead.",
        "invalid x-api-key",
        "Bearer tokens are not accepted here; send x-api-key",
        "error sending request for url (http://127.0.0.1:9/v1/messages): client error (Connect): tcp connect error: Connection refused (os error 111)",
        "django/db/models/fields/__init__.py: prompt_tokens_details_cached_tokens",
        "request 12345678901234567890123456789012345 failed",
        "model `claude-sonnet-4-5-20250929` at api.anthropic.com",
        "task-force risk-free asks ********************************",
        "日本語のエラー: ��� invalid UTF-8 was replaced",
        "",
    ];
    for message in messages {
        assert_eq!(redact_credentials(message), message);
    }
}

#[test]
fn redacts_each_shape() {
    let cases = [
        (
            "Incorrect API key provided: sk-proj-********************************AbCd. You can find your API key at https://platform.openai.com/account/api-keys.",
            "Incorrect API key provided: <redacted>. You can find your API key at https://platform.openai.com/account/api-keys.",
        ),
        (
            "invalid key sk-ant-api03-Zx9_aB-cD",
            "invalid key <redacted>",
        ),
        (
            "header was 'Authorization: Bearer eyJhbGciOi.eyJzdWIi.SflKxw'",
            "header was 'Authorization: Bearer <redacted>'",
        ),
        (
            "token 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 expired",
            "token <redacted> expired",
        ),
        (
            "signature dGhpcyBpcyBhIHNlY3JldCBrZXkgMTIzNDU2Nzg5MA== rejected",
            "signature <redacted> rejected",
        ),
        (
            "error sending request for url (https://user:hunter2@gw.example:8443/v1/chat/completions?api-key=abc&x=1#frag)",
            "error sending request for url (https://gw.example:8443/v1/chat/completions)",
        ),
        ("see http://h/p?key=s3cret", "see http://h/p"),
        ("odd ://x?y and a://", "odd ://x?y and a://"),
    ];
    for (text, expected) in cases {
        assert_eq!(redact_credentials(text), expected, "{text}");
    }
}

/// A credential in one of the shapes providers issue.
fn arb_key() -> impl Strategy<Value = String> {
    prop_oneof![
        "sk-ant-api03-[A-Za-z0-9_-]{20,95}",
        "sk-ant-oat01-[A-Za-z0-9_-]{20,95}",
        "sk-proj-[A-Za-z0-9_-]{20,150}",
        "sk-[A-Za-z0-9]{20,48}",
        "sk-proj-\\*{8,40}[A-Za-z0-9]{4}",
        "[0-9a-f]{32,64}",
        "[0-9A-F]{32,64}",
        "[A-Za-z0-9+/]{32,88}={0,2}",
        "[A-Za-z0-9_-]{32,88}",
    ]
}

/// Prose around a credential, with the characters that separate words in messages and JSON.
fn arb_context() -> impl Strategy<Value = String> {
    "[ -~\n\t\u{a0}-\u{ff}日本]{0,40}"
}

fn arb_separator() -> impl Strategy<Value = char> {
    prop_oneof![
        Just(' '),
        Just('\n'),
        Just('"'),
        Just('\''),
        Just(':'),
        Just(','),
        Just('('),
        Just(')'),
        Just('.'),
    ]
}

proptest! {
    /// No generated key survives, wherever it sits in a message.
    #[test]
    fn no_key_survives(
        key in arb_key(),
        before in arb_context(),
        after in arb_context(),
        open in arb_separator(),
        close in arb_separator(),
    ) {
        let text = format!("{before}{open}{key}{close}{after}");
        let redacted = redact_credentials(&text);
        prop_assert!(!redacted.contains(&key), "{key} survived in {redacted}");
    }

    /// A bearer token, and a key in a URL's query or userinfo, never survive.
    #[test]
    fn no_token_or_url_credential_survives(
        token in "[A-Za-z0-9._~+/-]{16,120}",
        secret in "[A-Za-z0-9]{8,40}",
        before in arb_context(),
        after in arb_context(),
    ) {
        let text = format!(
            "{before} Authorization: Bearer {token}\n url (https://u:{secret}@h.example/v1?key={secret}) {after}"
        );
        let redacted = redact_credentials(&text);
        prop_assert!(!redacted.contains(&token), "{token} survived in {redacted}");
        prop_assert!(!redacted.contains(&secret), "{secret} survived in {redacted}");
    }

    /// Any text at all is handled (no panic on multi-byte characters) and redacting twice
    /// changes nothing more.
    #[test]
    fn idempotent_on_any_text(text in any::<String>()) {
        let once = redact_credentials(&text);
        prop_assert_eq!(redact_credentials(&once), once);
    }
}
