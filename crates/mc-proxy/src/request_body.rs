//! Reading a managed request's body: bounded, and decompressed when the client compressed it.

use std::io::Read;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, header};
use bytes::Bytes;

use crate::provider::{ErrorKind, Provider, ProxyError};

/// Reads the whole body (a model call is parsed whole), refusing more than `limit` bytes
/// before or after decompression, and a body that has not arrived whole within `timeout`
/// (a client that sends less than its `Content-Length` would hold the call forever).
pub async fn read_body(
    provider: Provider,
    headers: &HeaderMap,
    body: Body,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, ProxyError> {
    let too_large = || {
        ProxyError::new(
            provider,
            ErrorKind::TooLarge,
            format!(
                "the request body is over the proxy's {limit}-byte limit (raise `proxy.max_request_bytes`)"
            ),
        )
    };
    let raw = tokio::time::timeout(timeout, axum::body::to_bytes(body, limit))
        .await
        .map_err(|_| {
            ProxyError::new(
                provider,
                ErrorKind::ClientTimeout,
                format!(
                    "the request body did not arrive within {} s; send the whole body at once",
                    timeout.as_secs()
                ),
            )
        })?;
    let raw = raw.map_err(|error| {
        if std::error::Error::source(&error)
            .is_some_and(|source| source.to_string().contains("length limit"))
        {
            too_large()
        } else {
            ProxyError::new(
                provider,
                ErrorKind::InvalidRequest,
                format!("could not read the request body ({error})"),
            )
        }
    })?;
    let encoding = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|value| value.to_str().ok())
        .map(|value| value.trim().to_ascii_lowercase());
    let decoder: Box<dyn Read> = match encoding.as_deref() {
        None | Some("" | "identity") => return Ok(raw),
        Some("gzip" | "x-gzip") => Box::new(flate2::read::GzDecoder::new(&raw[..])),
        Some("deflate") => Box::new(flate2::read::ZlibDecoder::new(&raw[..])),
        Some(other) => {
            return Err(ProxyError::new(
                provider,
                ErrorKind::UnsupportedEncoding,
                format!(
                    "request content-encoding `{other}` is not supported; send gzip, deflate or an uncompressed body"
                ),
            ));
        }
    };
    let mut decoded = Vec::new();
    let read = decoder
        .take(u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1))
        .read_to_end(&mut decoded);
    match read {
        Ok(_) if decoded.len() > limit => Err(too_large()),
        Ok(_) => Ok(Bytes::from(decoded)),
        Err(error) => Err(ProxyError::new(
            provider,
            ErrorKind::InvalidRequest,
            format!(
                "the request body is not valid {} data ({error})",
                encoding.as_deref().unwrap_or("")
            ),
        )),
    }
}
