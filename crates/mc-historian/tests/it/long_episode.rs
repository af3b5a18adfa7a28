//! An episode that never ends (an agent working alone, no user message between its turns):
//! its provisional compartment is read again with what followed only while it is shorter
//! than a chunk; from there it is final and the historian reads on from its end.

use mc_core::Message;
use mc_historian::{HistorianSettings, Job, Published, next_job, publish, run_job};
use mc_store::Store;
use serde_json::json;

use crate::runs::{NOW, Scripted, compartment, conversation, count, grow, seeded, settings};

/// Tokens of `messages[start..=end]` as the historian sizes them.
fn tokens(messages: &[Message], start: u64, end: u64) -> u64 {
    (start..=end)
        .map(|ordinal| {
            let parts = &messages[usize::try_from(ordinal).unwrap()].parts;
            count(&serde_json::to_string(parts).unwrap())
        })
        .sum()
}

/// Answers `job` with one compartment over its whole chunk (the episode goes on) and
/// publishes it.
async fn answer_one_episode(store: &Store, job: &Job) -> Published {
    let model = Scripted::new(
        1,
        vec![Ok(
            json!({"compartments": [compartment(job.chunk.start, job.chunk.end)]}),
        )],
    );
    let report = run_job(job, &model, 2).await;
    publish(store, job, &report, NOW, NOW + 5).unwrap()
}

#[tokio::test]
async fn an_episode_a_chunk_long_is_final_and_the_next_run_reads_on_from_its_end() {
    let roomy = HistorianSettings {
        max_chunk_tokens: 100_000,
        ..settings()
    };
    let mut messages = conversation(16, 2_000);
    let (_dir, store, session) = seeded(&messages);
    // One run over all the eligible history, answered as one open episode.
    let first = next_job(&store, &session, &roomy, 0, &count)
        .unwrap()
        .unwrap();
    assert!(matches!(
        answer_one_episode(&store, &first).await,
        Published::Compartments {
            provisional: true,
            ..
        }
    ));
    let (start, end) = (first.chunk.start, first.chunk.end);
    let spans = tokens(&messages, start, end);
    // A trigger's worth of history follows it.
    let mut turns = 16;
    let job = loop {
        turns += 1;
        let grown = conversation(turns, 2_000);
        grow(&store, &session, &grown, messages.len());
        messages = grown;
        if let Some(job) = next_job(&store, &session, &roomy, 0, &count).unwrap() {
            break job;
        }
        assert!(turns < 60, "never asked again");
    };
    // Where a chunk may hold more than the episode, it is read again from its start.
    assert_eq!(job.chunk.start, start);
    assert!(job.rereads_provisional());
    // Where the episode already spans a whole chunk, it is taken as final.
    let tight = HistorianSettings {
        max_chunk_tokens: spans,
        ..settings()
    };
    let job = next_job(&store, &session, &tight, 0, &count)
        .unwrap()
        .unwrap();
    assert_eq!(job.chunk.start, end + 1);
    assert!(!job.rereads_provisional());
    // The run reading on is told where the story stands: the episode before its chunk.
    let before = job
        .request
        .user
        .split("Transcript of ordinals")
        .next()
        .unwrap_or_default();
    assert!(
        before.contains("The session so far") && before.contains(&format!("- {start}-{end} ")),
        "{before}"
    );
    answer_one_episode(&store, &job).await;
    let (compartments, open) = store
        .read(|tx| Ok((tx.compartments(&session)?, tx.provisional_start(&session)?)))
        .unwrap();
    let ranges: Vec<(u64, u64)> = compartments
        .iter()
        .map(|c| (c.start_ordinal, c.end_ordinal))
        .collect();
    assert_eq!(ranges, [(start, end), (end + 1, job.chunk.end)]);
    assert_eq!(open, Some(end + 1), "only the new last compartment is open");
}
