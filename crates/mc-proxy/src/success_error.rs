//! A provider error sent with a success status.
//!
//! Some gateways and overloaded backends answer `200 OK` with an error body
//! (`{"type":"error","error":{"type":"overloaded_error",…}}`). Read as an answer it failed to
//! decode, and the client got a 502 "answer broke off" with the provider's error type lost:
//! an `overloaded_error` a client would retry became a failure it would not. A whole JSON
//! answer that is an error object is given the status its type means, so it takes the proxy's
//! error path (ledger, overflow retry) and reaches the client with its body as sent.

use axum::http::{StatusCode, header};
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::Value;

/// `response`, or, when it is a success whose JSON body is a provider error, the same body
/// and headers under the status the error's type means. Streams pass untouched.
pub async fn reclassify(response: reqwest::Response) -> reqwest::Response {
    if !response.status().is_success() || !is_json(response.headers()) {
        return response;
    }
    let status = response.status();
    let headers = response.headers().clone();
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    let mut failed = None;
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(chunk) => body.extend_from_slice(&chunk),
            Err(error) => {
                failed = Some(error);
                break;
            }
        }
    }
    let body = Bytes::from(body);
    let status = match (&failed, error_status(&body)) {
        (None, Some(error_status)) => {
            tracing::warn!(%error_status, "the upstream sent an error with a success status; relayed as an error");
            error_status
        }
        _ => status,
    };
    // A body that broke off mid-read goes on as far as it came, then fails as it did.
    let rest = failed.map(Err::<Bytes, _>);
    let stream =
        futures_util::stream::iter(std::iter::once(Ok::<Bytes, reqwest::Error>(body)).chain(rest));
    let mut rebuilt = axum::http::Response::new(reqwest::Body::wrap_stream(stream));
    *rebuilt.status_mut() = status;
    *rebuilt.headers_mut() = headers;
    reqwest::Response::from(rebuilt)
}

fn is_json(headers: &reqwest::header::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|kind| kind.trim_start().starts_with("application/json"))
}

/// The status a provider error body means, or `None` when the body is not an error: an
/// Anthropic `{"type":"error","error":{…}}`, or an OpenAI `{"error":{…}}` with no answer
/// beside it.
fn error_status(body: &[u8]) -> Option<StatusCode> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let object = value.as_object()?;
    let error = object.get("error")?.as_object()?;
    let anthropic = object.get("type").and_then(Value::as_str) == Some("error");
    let openai = !object.contains_key("choices")
        && !object.contains_key("output")
        && !object.contains_key("content");
    if !anthropic && !openai {
        return None;
    }
    let kind = error
        .get("type")
        .and_then(Value::as_str)
        .or_else(|| error.get("code").and_then(Value::as_str))
        .unwrap_or_default();
    Some(match kind {
        "invalid_request_error" | "invalid_request" | "context_length_exceeded" => {
            StatusCode::BAD_REQUEST
        }
        "authentication_error" | "invalid_api_key" => StatusCode::UNAUTHORIZED,
        "permission_error" => StatusCode::FORBIDDEN,
        "not_found_error" | "model_not_found" => StatusCode::NOT_FOUND,
        "request_too_large" => StatusCode::PAYLOAD_TOO_LARGE,
        "rate_limit_error" | "rate_limit_exceeded" | "insufficient_quota" => {
            StatusCode::TOO_MANY_REQUESTS
        }
        // Anthropic's own status for it; clients retry it.
        "overloaded_error" => StatusCode::from_u16(529).unwrap_or(StatusCode::SERVICE_UNAVAILABLE),
        "api_error" | "server_error" => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::BAD_GATEWAY,
    })
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderMap;

    use super::*;

    fn json_headers() -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
        headers
    }

    #[test]
    fn error_bodies_get_the_status_their_type_means() {
        let cases = [
            (
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                Some(529),
            ),
            (
                r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
                Some(429),
            ),
            (
                r#"{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}}"#,
                Some(400),
            ),
            (r#"{"error":{"message":"?","code":"weird"}}"#, Some(502)),
            // Answers, not errors.
            (
                r#"{"id":"msg_1","type":"message","content":[{"type":"text","text":"error"}]}"#,
                None,
            ),
            (
                r#"{"id":"c","choices":[],"error":{"message":"partial"}}"#,
                None,
            ),
            (r#"{"type":"error"}"#, None),
            ("not json", None),
        ];
        for (body, expected) in cases {
            assert_eq!(
                error_status(body.as_bytes()).map(|status| status.as_u16()),
                expected,
                "{body}"
            );
        }
    }

    #[tokio::test]
    async fn a_success_answer_passes_byte_for_byte() {
        let body = r#"{"id":"msg_1","type":"message","content":[]}"#;
        let mut response = axum::http::Response::new(reqwest::Body::from(body));
        *response.headers_mut() = json_headers();
        let out = reclassify(reqwest::Response::from(response)).await;
        assert_eq!(out.status(), StatusCode::OK);
        assert_eq!(out.bytes().await.unwrap(), body.as_bytes());
    }
}
