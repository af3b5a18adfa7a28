//! Preparing a follow-up Responses request by its new items only ([`crate::list_walks`]),
//! as [`crate::chat_walks`] does for Chat.
//!
//! A stateless Responses client (OpenCode, Pi, Codex with `store: false`) resends every item
//! on every call. Made ready whole, each request was decoded, walked run by run with a
//! store lookup per answer, converted and hashed again, and encoded again for the pass. A
//! step of the walk is one message of the neutral model (a run of model items, or one other
//! item); a follow-up keeps the messages wholly among the items the two bodies share that no
//! new item can extend (a run of model items is closed only by a shared item after it). The
//! prepared body is byte for byte what the whole preparation
//! (`super::responses::splice_whole`) encodes, and the pass decodes it as it decodes any
//! follow-up ([`crate::responses_incremental`]).
//!
//! As on the other wires, an exchange put back is read again on every follow-up and must
//! still be stored unchanged, and an exchange stored later at an anchor a walk looked up in
//! vain forgets that walk ([`ResponsesWalks::forget_anchor`]).

use std::ops::Range;

use mc_core::Message;
use mc_store::{ReadTx, StoreError};
use mc_wire::responses::{self, Input, Item, ResponsesRequest};

use crate::list_walks::{ListHead, ListWalk, ListWalks, ListWire};
use crate::responses_exchange::{
    ResponsesSplice, WIRE, add_responses_tools, by_model, first_run_len, guidance_item,
    is_client_answer, pass,
};
use crate::splice::{Point, Used, stored};
use crate::walk_steps::{Progress, StepMark, encode};
use mc_engine::tools::Offer;
use mc_wire::list_split::{Split, decode_alone};

/// Recent Responses walks.
pub type ResponsesWalks = ListWalks<ResponsesWire>;
/// A Responses request outside its conversation.
pub type ResponsesHead = ListHead<ResponsesRequest>;

/// The Responses wire, as the walk sees it.
#[derive(Debug)]
pub struct ResponsesWire;

/// The walk's state after one message of the conversation (after the instructions).
#[derive(Debug, Clone)]
pub struct ResponsesStep {
    /// The client items after the instructions the walk had passed.
    end: usize,
    /// Whether the message was the model's run of items, which a following model item
    /// would have extended.
    by_model: bool,
    point: Point,
    progress: Progress,
}

impl ResponsesStep {
    /// Whether a follow-up sharing the first `shared` client items after the instructions
    /// keeps this message as it is.
    fn closed_within(&self, shared: usize) -> bool {
        self.end < shared || (!self.by_model && self.end <= shared)
    }
}

impl StepMark for ResponsesStep {
    fn progress(&self) -> Progress {
        self.progress
    }
}

impl ListWire for ResponsesWire {
    const WIRE: &'static str = WIRE;
    type Request = ResponsesRequest;
    type Entry = Item;
    type Splice = ResponsesSplice;
    type Step = ResponsesStep;

    /// `None` also for an input that is a bare string.
    fn scan(body: &[u8]) -> Option<Split> {
        Split::scan_input(body)
    }

    fn decode(body: &[u8]) -> Option<(ResponsesRequest, Vec<Item>)> {
        let mut request = ResponsesRequest::decode(body, usize::MAX).ok()?;
        let Some(Input::Items(items)) = request.input.take() else {
            return None;
        };
        Some((request, items))
    }

    fn decode_entry(bytes: &[u8]) -> Option<Item> {
        decode_alone(bytes, Item::decode)
    }

    /// `None` for a request whose history is at the provider (`previous_response_id`,
    /// `conversation`), which the whole preparation refuses.
    fn head(mut request: ResponsesRequest, items: &[Item], offer: Offer) -> Option<ResponsesHead> {
        if request.stateful_reason().is_some() {
            return None;
        }
        let instructions = items
            .iter()
            .take_while(|item| item.is_instruction())
            .count();
        let mut client = request.clone();
        client.input = Some(Input::Items(items.get(..instructions)?.to_vec()));
        add_responses_tools(&mut request, offer);
        request.input = Some(Input::Items(Vec::new()));
        let around = request.encode_around_input();
        let leading = items[..instructions]
            .iter()
            .chain(std::iter::once(&guidance_item(offer)))
            .map(encode)
            .collect::<Option<Vec<_>>>()?;
        Some(ListHead::new(
            client,
            instructions,
            request,
            around,
            leading,
        ))
    }

    fn kept_steps(steps: &[ResponsesStep], shared: usize) -> usize {
        steps
            .iter()
            .take_while(|step| step.closed_within(shared))
            .count()
    }

    fn walked(steps: &[ResponsesStep]) -> usize {
        steps.last().map_or(0, |step| step.end)
    }

    fn point(step: &ResponsesStep) -> &Point {
        &step.point
    }

    /// `Ok(None)` also when an item refers to an item stored at the provider.
    fn walk_entries(
        walk: &mut ListWalk<Self>,
        tx: &ReadTx<'_>,
        point: &mut Point,
        items: Vec<Item>,
        walked: usize,
        used: &mut Used,
    ) -> Result<Option<()>, StoreError> {
        if items
            .iter()
            .any(|item| item.type_name() == "item_reference")
        {
            return Ok(None);
        }
        let mut rest = items.as_slice();
        let mut end = walked;
        while !rest.is_empty() {
            let (run, after) = rest.split_at(first_run_len(rest));
            if pass_run(walk, tx, point, run, used)?.is_none() {
                return Ok(None);
            }
            end += run.len();
            let progress = walk.progress();
            walk.steps.push(ResponsesStep {
                end,
                by_model: by_model(&run[0]),
                point: point.clone(),
                progress,
            });
            rest = after;
        }
        Ok(Some(()))
    }

    /// One item, or the run of model items it opens.
    fn first_entries(body: &[u8], ranges: &[Range<usize>]) -> Option<Vec<Item>> {
        let mut run = Vec::new();
        for range in ranges {
            let item = decode_alone(body.get(range.clone())?, Item::decode)?;
            let by_model = by_model(&item);
            if !run.is_empty() && !by_model {
                break;
            }
            run.push(item);
            if !by_model {
                break;
            }
        }
        Some(run)
    }

    fn first_message(items: &[Item]) -> Option<Message> {
        responses::to_conversation(&items[..first_run_len(items)])
            .into_iter()
            .next()
    }
}

/// Moves the walk past one message's `run` of client items, as the whole preparation does;
/// `None` when an item does not encode (the whole preparation then decides).
fn pass_run(
    walk: &mut ListWalk<ResponsesWire>,
    tx: &ReadTx<'_>,
    point: &mut Point,
    run: &[Item],
    used: &mut Used,
) -> Result<Option<()>, StoreError> {
    if !run.first().is_some_and(by_model) {
        return Ok(push(walk, point, run));
    }
    let anchor = point.anchor();
    let found = stored::<ResponsesSplice>(tx, &anchor)?
        .filter(|found| is_client_answer(&found.splice, run));
    let Some(found) = found else {
        walk.found.missed(anchor);
        return Ok(push(walk, point, run));
    };
    used.note(&found);
    walk.found.put_back(anchor, found.splice.clone());
    let splice = found.splice;
    let answer = splice.full_answer.as_deref().unwrap_or(run);
    for items in [&splice.before[..], answer, &splice.results] {
        if push(walk, point, items).is_none() {
            return Ok(None);
        }
    }
    Ok(Some(()))
}

/// Appends `items` and moves the point past them.
fn push(walk: &mut ListWalk<ResponsesWire>, point: &mut Point, items: &[Item]) -> Option<()> {
    pass(point, items);
    for item in items {
        walk.out.push(encode(item)?);
    }
    Some(())
}

#[cfg(test)]
#[path = "responses_walks_tests.rs"]
mod tests;
