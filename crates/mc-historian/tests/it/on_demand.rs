//! On-demand runs over a real store: chunk after chunk up to the kept tail, the last chunk
//! closed, a failed run ending the series with what came before it kept; a rebuild staged
//! beside the history and swapped in once it reaches its end.

use mc_historian::{Ending, HistorianSettings, Job, OnDemand, RunReport, accept};
use serde_json::json;

use crate::runs::{NOW, compartment, conversation, count, seeded, settings};

/// Answers every job with its chunk in two compartments (one when it is a single message),
/// as a model would; fails the calls whose number `fails` says.
fn answering(fails: impl Fn(usize) -> bool) -> impl FnMut(&Job, u32) -> RunReport {
    let mut calls = 0;
    move |job, lookahead| {
        calls += 1;
        let (start, end) = (job.chunk.start, job.chunk.end);
        let compartments = if start == end {
            vec![compartment(start, end)]
        } else {
            let middle = start + (end - start) / 2;
            vec![compartment(start, middle), compartment(middle + 1, end)]
        };
        let failed = fails(calls);
        RunReport {
            accepted: (!failed)
                .then(|| accept(job, &json!({"compartments": compartments}), lookahead).unwrap()),
            model: Some("model-0".into()),
            calls: 1,
            input_tokens: 100,
            output_tokens: 20,
            failure: failed.then(|| "model-0: overloaded".to_owned()),
        }
    }
}

/// Chunks of about three results: a 25-message session takes several runs.
fn small_chunks() -> HistorianSettings {
    HistorianSettings {
        max_chunk_tokens: 1_500,
        ..settings()
    }
}

#[test]
fn wrapup_summarises_up_to_the_kept_tail_and_closes_the_last_chunk() {
    let (_dir, store, session) = seeded(&conversation(12, 2_000));
    let on_demand = OnDemand {
        store: &store,
        session: &session,
        settings: small_chunks(),
        count: &count,
        clock: &|| NOW,
    };
    let mut seen = Vec::new();
    let mut model = answering(|_| false);
    let mut ask = |job: &Job, lookahead: u32| {
        seen.push((job.chunk.start, job.closed));
        model(job, lookahead)
    };
    // The newest 2 tags sit in messages 22 and 24; 21 is the call 22 answers, so the
    // history can end at 20 at most.
    let runs = on_demand.wrapup(2, &mut ask).unwrap();
    assert_eq!(runs.ending, Ending::Done);
    assert_eq!(runs.covered, Some((0, 20)));
    assert!(runs.runs >= 3, "{runs:?}");
    assert_eq!(
        (runs.calls, runs.input_tokens),
        (runs.runs, 100 * u64::from(runs.runs))
    );
    // Every run but the last held its last compartment back; the last was closed.
    let closed: Vec<bool> = seen.iter().map(|&(_, closed)| closed).collect();
    assert_eq!(closed.iter().filter(|&&closed| closed).count(), 1);
    assert_eq!(closed.last(), Some(&true));
    let stored = store.read(|tx| tx.compartments(&session)).unwrap();
    assert_eq!(stored.len() as u32, runs.compartments);
    assert_eq!(store.read(|tx| tx.summarised_until(&session)).unwrap(), 21);
}

#[test]
fn a_failed_run_ends_the_series_and_a_rebuild_resumes_where_it_stopped() {
    let (_dir, store, session) = seeded(&conversation(12, 2_000));
    let on_demand = OnDemand {
        store: &store,
        session: &session,
        settings: small_chunks(),
        count: &count,
        clock: &|| NOW,
    };
    let wrapped = on_demand
        .wrapup(2, &mut answering(|call| call == 2))
        .unwrap();
    assert_eq!(wrapped.ending, Ending::Failed);
    assert_eq!(wrapped.runs, 2);
    assert_eq!(wrapped.failure.as_deref(), Some("model-0: overloaded"));
    let first_end = wrapped.covered.unwrap().1;
    assert_eq!(
        store.read(|tx| tx.summarised_until(&session)).unwrap(),
        first_end + 1
    );
    on_demand.wrapup(2, &mut answering(|_| false)).unwrap();
    let history = store.read(|tx| tx.compartments(&session)).unwrap();

    // A rebuild whose second run fails: staged so far, nothing swapped.
    let stopped = on_demand.recomp(&mut answering(|call| call == 2)).unwrap();
    assert_eq!(stopped.resumed_from, 0);
    assert_eq!(stopped.runs.ending, Ending::Failed);
    assert_eq!(stopped.swapped, None);
    let staged_until = store.read(|tx| tx.staged_until(&session)).unwrap();
    assert!(staged_until > 0);
    assert_eq!(store.read(|tx| tx.compartments(&session)).unwrap(), history);
    // Resumed, it goes on from the staged end and swaps once it reaches 21.
    let resumed = on_demand.recomp(&mut answering(|_| false)).unwrap();
    assert_eq!(resumed.resumed_from, staged_until);
    assert_eq!(
        resumed.runs.covered.map(|(first, _)| first),
        Some(staged_until)
    );
    assert_eq!(resumed.runs.ending, Ending::Done);
    let swapped = resumed.swapped.unwrap();
    assert_eq!(swapped.covered_until, 21);
    assert_eq!(swapped.replaced, history.len() as u64);
    let (rebuilt, staged) = store
        .read(|tx| {
            Ok((
                tx.compartments(&session)?,
                tx.staged_compartments(&session)?,
            ))
        })
        .unwrap();
    assert_eq!(rebuilt.len() as u64, swapped.installed);
    assert_eq!(rebuilt.last().unwrap().end_ordinal, 20);
    assert!(staged.is_empty());
    // Called again, a rebuild starts over from ordinal 0: it resumes only what it staged.
    let again = on_demand.recomp(&mut answering(|_| false)).unwrap();
    assert_eq!(again.resumed_from, 0);
    assert_eq!(again.runs.covered, Some((0, 20)));
    assert!(again.swapped.is_some());
}
