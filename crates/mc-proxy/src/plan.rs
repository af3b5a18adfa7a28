//! Planning a call: the pass runs on a pass thread ([`crate::pass_threads`], then
//! [`crate::pass_run`]), and after the provider refused a request as too long, the one
//! retry is planned with what the refusal proved.

use std::sync::Arc;

use axum::http::HeaderMap;

use crate::app::App;
use crate::chunked_body::ChunkedBody;
use crate::overflow::Overflow;
use crate::pass_run::plan_with_retries;
use crate::planned::Planned;
use crate::provider::{Provider, ProxyError};
use crate::reported_usage::ReportedUsage;
use mc_wire::recent_bodies::KnownStart;

/// The smallest context window an overflow error is believed to prove: no model a coding
/// agent runs on has less.
const MIN_PLAUSIBLE_WINDOW: u64 = 4_096;

/// Runs the pass on a pass thread ([`crate::pass_threads`]): SQLite and rendering are
/// synchronous CPU work, and one thread per concurrent pass keeps one tokenizer cache each.
/// `known` is what the body's maker vouches for of its first bytes.
pub async fn plan(
    app: &Arc<App>,
    provider: Provider,
    headers: &Arc<HeaderMap>,
    client_body: &ChunkedBody,
    known: Option<KnownStart>,
    last_usage: Option<ReportedUsage>,
) -> Result<Planned, ProxyError> {
    // Closed only if the semaphore is closed, which nothing does; a pass then runs unbounded.
    // The pass holds its permit to its end, on its thread, and hands it over with its result
    // (after the thread is idle again): a client that disconnects stops waiting for the pass,
    // not the pass, so its permit is not free while the pass still runs. Passes running, and
    // so pass threads, never outnumber the permits.
    let permit = Arc::clone(&app.pass_permits).acquire_owned().await.ok();
    app.note_pass_started();
    let (for_pass, headers, body) = (Arc::clone(app), Arc::clone(headers), client_body.clone());
    app.pass_threads
        .run(move || {
            let planned = plan_with_retries(
                &for_pass,
                provider,
                &headers,
                &body,
                known.as_ref(),
                last_usage,
            );
            (planned, permit)
        })
        .await
        .map_or_else(
            |lost| {
                Err(ProxyError::new(
                    provider,
                    crate::provider::ErrorKind::Unavailable,
                    format!("the pass failed unexpectedly ({})", lost.0),
                ))
            },
            |(planned, _permit)| planned,
        )
}

/// The plan of the one retry after the provider refused `planned` as too long: the limit it
/// stated is recorded as the model's and the session's proven window, and its count of the
/// refused request pairs with the pass that sent it, so the retry plans with both and the
/// model's token correction learns from it.
pub async fn replan_after_overflow(
    app: &Arc<App>,
    provider: Provider,
    headers: &Arc<HeaderMap>,
    client_body: &ChunkedBody,
    planned: &Planned,
    overflow: Overflow,
) -> Result<Planned, ProxyError> {
    tracing::warn!(session = ?planned.session, ?overflow, "context overflow upstream; retrying once with an emergency plan");
    // A provider that states no figure (a local server's "context length exceeded") still
    // proved the request it refused too large: the window is taken as a tenth under what was
    // sent, so the retry plans smaller instead of sending the same bytes again. Windows only
    // ever shrink this way, and one more refusal shrinks them further.
    let sent = planned
        .pass
        .as_ref()
        .map(|pass| pass.estimated_prompt_tokens);
    let unstated = overflow.limit_tokens.is_none() && overflow.prompt_tokens.is_none();
    let limit = if unstated {
        sent.map(|tokens| tokens * 9 / 10)
    } else {
        overflow.limit_tokens
    };
    // A window smaller than the request's own system prompt and tools, or than any model
    // serves, is not a window: kept, it refused every later request of the session. The
    // retry then plans as before, and the provider's answer to it reaches the client.
    let floor = planned.pass.as_ref().map_or(MIN_PLAUSIBLE_WINDOW, |pass| {
        pass.fixed_tokens.max(MIN_PLAUSIBLE_WINDOW)
    });
    if let Some(claimed) = limit.filter(|&limit| limit < floor) {
        tracing::warn!(
            session = ?planned.session,
            claimed,
            floor,
            "ignored an implausible context limit from the provider (smaller than the system prompt and tools, or than {MIN_PLAUSIBLE_WINDOW} tokens); it is not stored"
        );
        return plan(app, provider, headers, client_body, None, None).await;
    }
    if let Some(limit) = limit {
        app.proven_windows.record(&planned.model, limit);
    }
    if let (Some(limit), Ok(engine), Some(session)) = (limit, app.engine(), planned.session.clone())
    {
        let engine = Arc::clone(engine);
        let now_ms = crate::clock::unix_ms();
        let recorded = tokio::task::spawn_blocking(move || {
            engine.record_proven_window(&session, limit, now_ms)
        })
        .await;
        if !matches!(recorded, Ok(Ok(()))) {
            tracing::warn!("could not record the proven window; the retry plans without it");
        }
    }
    let seq = planned.pass.as_ref().map(|pass| pass.seq);
    let usage = match overflow.prompt_tokens {
        Some(tokens) => Some(ReportedUsage { tokens, pass: seq }),
        // Our own count of the refused request, paired with its pass so the retry is judged
        // over the limit; being the pass's own estimate, it teaches the correction nothing.
        None if unstated => sent.map(|tokens| ReportedUsage { tokens, pass: seq }),
        None => limit.map(|tokens| ReportedUsage { tokens, pass: None }),
    };
    plan(app, provider, headers, client_body, None, usage).await
}
