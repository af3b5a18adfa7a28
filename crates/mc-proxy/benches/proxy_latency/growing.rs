//! One long session growing step by step, sent through three proxies at once: one with the
//! agent tools off, one at the default configuration, which serves the tools to a client
//! without Claude Code's headers (as OpenCode and Pi get them), and one with the engine's
//! compaction off (the host manages the window; the tools at their default). The added time is printed
//! per quarter of the run, so a cost that grows with the conversation shows as a rising
//! p50 rather than hiding in one median.
//!
//! The session opens at ~1 MB (the size where a growing per-call cost was first seen) and
//! takes one agent step per request. Each body goes direct and through each proxy, in an
//! order that rotates per request, and each proxy's
//! added time is its time minus the direct time of the same body. The body carries no
//! `metadata.user_id` and the session is named by OpenCode's `x-session-id`, so `auto`
//! serves the tools. The run is made on the Anthropic wire, on Chat Completions and on
//! Responses.
//!
//! Each body also goes to `count_tokens`, direct and through the tools-off proxy, which
//! forwards it verbatim: what moving the body through one more HTTP hop costs any proxy.
//! It grows with the body too, so it is printed beside the proxies' figures, with their
//! growth net of it.

use std::time::Duration;

use super::corpus::{Conversation, Corpus};
use super::proxies::Managed;
use super::{Result, VERBATIM_PATH, call, call_verbatim, ms, percentile_of, start_proxy};

/// o200k tokens of the session's first measured body: about 1 MB of JSON.
const START_TOKENS: usize = 260_000;

/// Requests before measuring: the cold pass and the first follow-up of each proxy.
const WARMUP: usize = 2;

/// The wire a run speaks: Anthropic Messages (OpenCode with an Anthropic model), Chat
/// Completions (Pi, OpenCode with an OpenAI-compatible model) or Responses (OpenCode and Pi
/// with an OpenAI model), each prepared for the tools its own way.
#[derive(Debug, Clone, Copy)]
pub enum Wire {
    Anthropic,
    Chat,
    Responses,
}

impl Wire {
    /// The name `PROXY_LATENCY_WIRES` selects it by.
    pub fn name(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::Chat => "chat",
            Self::Responses => "responses",
        }
    }

    fn path(self) -> &'static str {
        match self {
            Self::Anthropic => "/v1/messages",
            Self::Chat => "/v1/chat/completions",
            Self::Responses => "/v1/responses",
        }
    }

    fn body(self, conversation: &Conversation, corpus: &Corpus) -> Result<bytes::Bytes> {
        match self {
            Self::Anthropic => conversation.body_without_metadata(corpus),
            Self::Chat => conversation.chat_body(corpus),
            Self::Responses => conversation.responses_body(corpus),
        }
    }
}

/// How long the run is: measured steps.
pub struct Growing {
    pub steps: usize,
}

/// The added times of one proxy, in seconds, in request order.
#[derive(Default)]
struct Added {
    off: Vec<f64>,
    on: Vec<f64>,
    /// Compaction off (tools at their default).
    host: Vec<f64>,
    /// The verbatim hop's.
    hop: Vec<f64>,
}

/// Runs the session against `upstream` (the flat one) and prints its table and verdicts.
pub async fn growing_table(
    client: &reqwest::Client,
    corpus: &Corpus,
    upstream: &str,
    run: &Growing,
    wire: Wire,
) -> Result<()> {
    let (off, _off_store) = start_proxy(upstream, Managed::TOOLS_OFF).await?;
    let (on, _on_store) = start_proxy(upstream, Managed::defaults()).await?;
    let (host, _host_store) = start_proxy(upstream, Managed::compaction_off()).await?;
    let path = wire.path();
    let urls = [
        format!("{upstream}{path}"),
        format!("http://{}{path}", off.local_addr()),
        format!("http://{}{path}", on.local_addr()),
        format!("http://{}{path}", host.local_addr()),
    ];
    let hops = [
        format!("{upstream}{VERBATIM_PATH}"),
        format!("http://{}{VERBATIM_PATH}", off.local_addr()),
    ];
    let headers = [("x-session-id", "bench-growing")];
    let mut conversation = Conversation::sized(corpus, START_TOKENS, 11, WARMUP + 1);
    let mut added = Added::default();
    let mut body_bytes = Vec::with_capacity(run.steps);
    for index in 0..WARMUP + run.steps {
        conversation.grow(corpus);
        let body = wire.body(&conversation, corpus)?;
        let mut times = [Duration::ZERO; 4];
        for turn in 0..4 {
            let which = (index + turn) % 4;
            times[which] = call(client, &urls[which], &body, &headers).await?;
        }
        if index < WARMUP {
            continue;
        }
        let direct = times[0].as_secs_f64();
        added.off.push(times[1].as_secs_f64() - direct);
        added.on.push(times[2].as_secs_f64() - direct);
        added.host.push(times[3].as_secs_f64() - direct);
        let hop_direct = call_verbatim(client, &hops[0], &body).await?;
        let hop_proxied = call_verbatim(client, &hops[1], &body).await?;
        added
            .hop
            .push(hop_proxied.as_secs_f64() - hop_direct.as_secs_f64());
        body_bytes.push(body.len());
    }
    off.shutdown().await;
    on.shutdown().await;
    host.shutdown().await;
    println!("{wire:?} wire ({path}):");
    print_table(&added, &body_bytes);
    Ok(())
}

fn print_table(added: &Added, body_bytes: &[usize]) {
    println!(
        "| quarter | body MB | n | tools off added p50 ms | off p99 ms | tools on added p50 ms | on p99 ms | on - off p50 ms | compaction off p50 ms | compaction off p99 ms | verbatim hop p50 ms |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let quarters = quarters(added.on.len());
    for (number, range) in quarters.iter().enumerate() {
        let (off, on) = (&added.off[range.clone()], &added.on[range.clone()]);
        let (host, hop) = (&added.host[range.clone()], &added.hop[range.clone()]);
        let bytes = &body_bytes[range.clone()];
        println!(
            "| Q{} | {:.2}-{:.2} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
            number + 1,
            mb(bytes.first()),
            mb(bytes.last()),
            on.len(),
            ms(percentile_of(off, 0.50)),
            ms(percentile_of(off, 0.99)),
            ms(percentile_of(on, 0.50)),
            ms(percentile_of(on, 0.99)),
            ms(percentile_of(on, 0.50) - percentile_of(off, 0.50)),
            ms(percentile_of(host, 0.50)),
            ms(percentile_of(host, 0.99)),
            ms(percentile_of(hop, 0.50)),
        );
    }
    let (on_p50, on_p99) = (
        ms(percentile_of(&added.on, 0.50)),
        ms(percentile_of(&added.on, 0.99)),
    );
    let off_p50 = ms(percentile_of(&added.off, 0.50));
    let quarter_p50 = |samples: &[f64], last: bool| {
        let range = if last {
            quarters.last()
        } else {
            quarters.first()
        };
        range.map_or(f64::NAN, |range| {
            percentile_of(&samples[range.clone()], 0.50)
        })
    };
    let growth = quarter_p50(&added.on, true) / quarter_p50(&added.on, false);
    let hop_growth = quarter_p50(&added.hop, true) - quarter_p50(&added.hop, false);
    let growth_net_of_hop =
        (quarter_p50(&added.on, true) - hop_growth) / quarter_p50(&added.on, false);
    println!(
        "| all | {:.2}-{:.2} | {} | {off_p50:.2} | {:.2} | {on_p50:.2} | {on_p99:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
        mb(body_bytes.first()),
        mb(body_bytes.last()),
        added.on.len(),
        ms(percentile_of(&added.off, 0.99)),
        on_p50 - off_p50,
        ms(percentile_of(&added.host, 0.50)),
        ms(percentile_of(&added.host, 0.99)),
        ms(percentile_of(&added.hop, 0.50)),
    );
    let verdict = |met: bool| if met { "met" } else { "MISSED" };
    println!(
        "tools on: added p50 {on_p50:.2} ms (target <= 3: {}), p99 {on_p99:.2} ms (target <= 10: {}), last/first quarter p50 {growth:.2}x (target <= 1.3: {}); tools on/off p50 {:.2}x",
        verdict(on_p50 <= 3.0),
        verdict(on_p99 <= 10.0),
        verdict(growth <= 1.3),
        on_p50 / off_p50,
    );
    println!(
        "added per MB of body (median of the slopes between every two steps, steadier than the quarters on a shared machine): tools off {:.2} ms/MB, tools on {:.2} ms/MB, compaction off {:.2} ms/MB, verbatim hop {:.2} ms/MB",
        ms(slope_per_mb(&added.off, body_bytes)),
        ms(slope_per_mb(&added.on, body_bytes)),
        ms(slope_per_mb(&added.host, body_bytes)),
        ms(slope_per_mb(&added.hop, body_bytes)),
    );
    println!(
        "the verbatim hop's p50 grew {:.2} ms from the first quarter to the last (moving the larger body, which any proxy pays); tools on, that growth taken out: last/first quarter p50 {growth_net_of_hop:.2}x",
        ms(hop_growth),
    );
}

/// The Theil-Sen slope of `seconds` against body size, in seconds per MB: the median of the
/// slopes between every two steps of different sizes, which a burst of noise on a shared
/// machine moves far less than it moves one quarter's median.
fn slope_per_mb(seconds: &[f64], body_bytes: &[usize]) -> f64 {
    let mut slopes = Vec::new();
    for (i, (&time_i, &bytes_i)) in seconds.iter().zip(body_bytes).enumerate() {
        for (&time_j, &bytes_j) in seconds.iter().zip(body_bytes).skip(i + 1) {
            let megabytes = (bytes_j as f64 - bytes_i as f64) / 1e6;
            if megabytes != 0.0 {
                slopes.push((time_j - time_i) / megabytes);
            }
        }
    }
    percentile_of(&slopes, 0.50)
}

/// `len` samples cut into four runs of consecutive requests (the last takes the rest).
fn quarters(len: usize) -> Vec<std::ops::Range<usize>> {
    let quarter = len / 4;
    if quarter == 0 {
        return std::iter::once(0..len).collect();
    }
    (0..4)
        .map(|number| {
            let end = if number == 3 {
                len
            } else {
                (number + 1) * quarter
            };
            number * quarter..end
        })
        .collect()
}

fn mb(bytes: Option<&usize>) -> f64 {
    bytes.map_or(f64::NAN, |&bytes| bytes as f64 / 1e6)
}
