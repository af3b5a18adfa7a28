//! Historian runs over a real store with scripted models: what is published, repaired,
//! refused, and what a failing model leaves behind (nothing but its record).

use std::sync::Mutex;

use mc_core::tags::{TagNo, assign_tags};
use mc_core::{Host, Message, Part, Role, SessionId};
use mc_historian::{
    HistorianModel, HistorianSettings, Published, accept, next_job, publish, run_job,
};
use mc_llm::{EndpointLabel, LlmError, StructuredAnswer, StructuredRequest, Usage};
use mc_store::{NewSession, Store, history_scope};
use serde_json::{Value, json};

pub const NOW: i64 = 1_800_000_000_000;

pub fn count(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// A task, then `turns` Bash calls with results of `bytes` bytes, and a user correction.
pub fn conversation(turns: usize, bytes: usize) -> Vec<Message> {
    let mut messages = vec![Message::new(Role::User, vec![Part::text("Fix the build.")])];
    for turn in 0..turns {
        let id = format!("toolu_{turn}");
        messages.push(Message::new(
            Role::Assistant,
            vec![Part::ToolCall {
                id: id.clone(),
                name: "Bash".into(),
                input: json!({"command": format!("make {turn}")}),
            }],
        ));
        let mut parts = vec![Part::ToolResult {
            call_id: id,
            content: vec![Part::text("x".repeat(bytes))],
            is_error: false,
        }];
        if turn == 2 {
            parts.push(Part::text("Stop: never edit the lockfile."));
        }
        messages.push(Message::new(Role::User, parts));
    }
    messages
}

pub fn seeded(messages: &[Message]) -> (tempfile::TempDir, Store, SessionId) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("context.db")).unwrap();
    let session = SessionId::new("s").unwrap();
    store
        .write(|tx| {
            tx.upsert_session(
                &NewSession {
                    id: session.clone(),
                    host: Host::ClaudeCode,
                    project: None,
                },
                NOW,
            )
        })
        .unwrap();
    grow(&store, &session, messages, 0);
    (dir, store, session)
}

/// Stores `messages` from ordinal `from` on, with their tags, as a pass would.
pub fn grow(store: &Store, session: &SessionId, messages: &[Message], from: usize) {
    store
        .write(|tx| {
            tx.append_messages(session, from as u64, &messages[from..], NOW)?;
            let mut next = tx
                .newest_tag(session)?
                .map_or(TagNo(1), |tag| TagNo(tag.0 + 1));
            for (ordinal, message) in messages.iter().enumerate().skip(from) {
                let tags = assign_tags(next, ordinal as u64, message);
                next = tags.last().map_or(next, |last| TagNo(last.tag.0 + 1));
                tx.insert_tags(session, &tags)?;
            }
            Ok(())
        })
        .unwrap();
}

pub fn settings() -> HistorianSettings {
    HistorianSettings {
        trigger_tokens: 2_000,
        max_chunk_tokens: 6_000,
        lookahead: 2,
        live_tail_tags: 6,
        live_tail_max_tokens: u64::MAX,
        execute_percent: 65,
        start_usage_percent: 0,
        closes_range: false,
        knowledge: mc_store::KnowledgeSource::Local,
    }
}

pub fn compartment(start: u64, end: u64) -> Value {
    json!({"start_ordinal": start, "end_ordinal": end, "title": format!("steps {start}-{end}"),
        "importance": 55, "episode": "debugging", "condensed": "Ran make; it failed on the lockfile.",
        "line": "make failed."})
}

/// Answers from a script, one entry per call: `Ok(input)` or an error.
pub struct Scripted {
    endpoints: usize,
    script: Mutex<Vec<Result<Value, LlmError>>>,
    requests: Mutex<Vec<(usize, String)>>,
}

impl Scripted {
    pub fn new(endpoints: usize, script: Vec<Result<Value, LlmError>>) -> Self {
        Self {
            endpoints,
            script: Mutex::new(script.into_iter().rev().collect()),
            requests: Mutex::new(Vec::new()),
        }
    }
}

impl HistorianModel for Scripted {
    fn endpoints(&self) -> usize {
        self.endpoints
    }

    fn label(&self, index: usize) -> String {
        format!("model-{index}")
    }

    async fn answer(
        &self,
        index: usize,
        request: &StructuredRequest,
    ) -> Result<StructuredAnswer, LlmError> {
        self.requests
            .lock()
            .unwrap()
            .push((index, request.user.clone()));
        let next = self
            .script
            .lock()
            .unwrap()
            .pop()
            .unwrap_or(Err(LlmError::NoEndpoints));
        next.map(|input| StructuredAnswer {
            input,
            usage: Usage {
                input_tokens: 1_000,
                output_tokens: 200,
                cache_read: 0,
                cache_write: 0,
            },
            answered_by: EndpointLabel {
                model: format!("model-{index}"),
                host: "127.0.0.1".into(),
            },
        })
    }
}

fn overloaded() -> LlmError {
    LlmError::NoEndpoints
}

#[tokio::test]
async fn a_good_answer_is_published_with_quotes_and_times_and_the_next_chunk_follows_it() {
    let messages = conversation(12, 2_000);
    let (_dir, store, session) = seeded(&messages);
    let job = next_job(&store, &session, &settings(), 0, &count)
        .unwrap()
        .expect("eligible history past the trigger");
    assert_eq!(job.chunk.start, 0);
    assert!(job.request.user.starts_with("Transcript of ordinals 0 to "));
    let end = job.chunk.end;
    let model = Scripted::new(
        1,
        vec![Ok(
            json!({"compartments": [compartment(0, 4), compartment(5, end)],
        "facts": [{"category": "CONSTRAINTS", "content": "Never edit the lockfile."}],
        "observations": ["Stops the agent when it strays."]}),
        )],
    );
    let report = run_job(&job, &model, 2).await;
    assert_eq!(report.calls, 1);
    assert_eq!((report.input_tokens, report.output_tokens), (1_000, 200));
    let published = publish(&store, &job, &report, NOW, NOW + 5).unwrap();
    // The last compartment ends at the chunk end: published provisionally, with the run's
    // facts, and read again by the next run.
    assert_eq!(
        published,
        Published::Compartments {
            count: 2,
            covered_end: end,
            provisional: true,
        }
    );
    let (compartments, runs, facts, provisional) = store
        .read(|tx| {
            Ok((
                tx.compartments(&session)?,
                tx.historian_runs(&session, 5)?,
                tx.historian_facts(&history_scope(&session, None))?,
                tx.provisional_start(&session)?,
            ))
        })
        .unwrap();
    assert_eq!(compartments.len(), 2);
    assert_eq!(compartments[0].start_ms, NOW as u64);
    // The model writes two tiers: its summary is the stored full tier as well, its line the
    // paragraph.
    assert_eq!(
        compartments[0].tiers.each_ref().map(String::as_str),
        [
            "Ran make; it failed on the lockfile.",
            "Ran make; it failed on the lockfile.",
            "make failed.",
            "make failed."
        ]
    );
    // The task (ordinal 0) is pinned elsewhere; the correction at ordinal 6 is quoted.
    assert!(compartments[0].quotes.is_empty());
    assert_eq!(compartments[1].quotes[0].ordinal, 6);
    assert_eq!(facts.len(), 1);
    assert_eq!(provisional, Some(5));
    assert_eq!(runs[0].outcome, "provisional");
    // Nothing new to read past it yet.
    assert!(
        next_job(&store, &session, &settings(), 0, &count)
            .unwrap()
            .is_none()
    );
    let longer = conversation(17, 2_000);
    grow(&store, &session, &longer, messages.len());
    let next = next_job(&store, &session, &settings(), 0, &count)
        .unwrap()
        .unwrap();
    assert_eq!(next.chunk.start, 5);
    assert!(next.rereads_provisional() && next.chunk.end > end);
    let model = Scripted::new(
        1,
        vec![Ok(
            json!({"compartments": [compartment(5, 8), compartment(9, next.chunk.end - 3)],
        "facts": [{"category": "CONSTRAINTS", "content": "Never edit the lockfile."}]}),
        )],
    );
    let report = run_job(&next, &model, 2).await;
    // Two compartments replace the provisional one; the last ends well before the chunk
    // does, so it is final.
    assert_eq!(
        publish(&store, &next, &report, NOW, NOW + 5).unwrap(),
        Published::Compartments {
            count: 1,
            covered_end: next.chunk.end - 3,
            provisional: false,
        }
    );
    let (compartments, facts, provisional) = store
        .read(|tx| {
            Ok((
                tx.compartments(&session)?,
                tx.historian_facts(&history_scope(&session, None))?,
                tx.provisional_start(&session)?,
            ))
        })
        .unwrap();
    let ranges: Vec<(u64, u64)> = compartments
        .iter()
        .map(|c| (c.start_ordinal, c.end_ordinal))
        .collect();
    assert_eq!(ranges, [(0, 4), (5, 8), (9, next.chunk.end - 3)]);
    assert_eq!(
        compartments[1].quotes[0].text,
        "Stop: never edit the lockfile."
    );
    assert_eq!(facts.len(), 1, "the fact found twice is one fact");
    assert_eq!(provisional, None);
}

#[tokio::test]
async fn a_bad_answer_gets_one_repair_round_then_the_next_model() {
    let messages = conversation(12, 2_000);
    let (_dir, store, session) = seeded(&messages);
    let job = next_job(&store, &session, &settings(), 0, &count)
        .unwrap()
        .unwrap();
    let gap = json!({"compartments": [compartment(0, 2), compartment(4, 6)]});
    let model = Scripted::new(
        2,
        vec![
            Ok(gap.clone()),
            Ok(json!({"nonsense": true})),
            Err(overloaded()),
        ],
    );
    let report = run_job(&job, &model, 2).await;
    assert!(report.accepted.is_none());
    assert_eq!(report.calls, 3);
    let requests = model.requests.lock().unwrap().clone();
    assert_eq!(
        requests.iter().map(|(index, _)| *index).collect::<Vec<_>>(),
        [0, 0, 1]
    );
    assert!(
        requests[1]
            .1
            .contains("was refused: compartment 1 starts at 4; it must start at 3")
    );
    let failure = report.failure.clone().unwrap();
    assert!(
        failure.contains("model-0: answer refused twice"),
        "{failure}"
    );
    assert!(failure.contains("model-1: "), "{failure}");
    // Nothing but the run's record reaches the store.
    assert_eq!(
        publish(&store, &job, &report, NOW, NOW + 1).unwrap(),
        Published::Failed
    );
    let (compartments, runs) = store
        .read(|tx| Ok((tx.compartments(&session)?, tx.historian_runs(&session, 5)?)))
        .unwrap();
    assert!(compartments.is_empty());
    assert_eq!((runs[0].outcome.as_str(), runs[0].calls), ("failed", 3));
    // A repaired answer passes.
    let model = Scripted::new(
        1,
        vec![
            Ok(gap),
            Ok(json!({"compartments": [compartment(0, 4), compartment(5, 8)]})),
        ],
    );
    let report = run_job(&job, &model, 2).await;
    assert_eq!(report.calls, 2);
    assert!(report.accepted.is_some());
}

#[test]
fn nothing_runs_below_the_trigger_and_a_stale_run_appends_nothing() {
    let messages = conversation(3, 200);
    let (_dir, store, session) = seeded(&messages);
    assert!(
        next_job(&store, &session, &settings(), 0, &count)
            .unwrap()
            .is_none()
    );
    let messages = conversation(12, 2_000);
    let (_dir, store, session) = seeded(&messages);
    let job = next_job(&store, &session, &settings(), 0, &count)
        .unwrap()
        .unwrap();
    let input = json!({"compartments": [compartment(0, 4), compartment(5, 8)]});
    let accepted = accept(&job, &input, 2).unwrap();
    let report = mc_historian::RunReport {
        accepted: Some(accepted),
        model: None,
        calls: 1,
        input_tokens: 0,
        output_tokens: 0,
        failure: None,
    };
    assert!(matches!(
        publish(&store, &job, &report, NOW, NOW).unwrap(),
        Published::Compartments { .. }
    ));
    // The same job again: another run already published its chunk.
    assert_eq!(
        publish(&store, &job, &report, NOW, NOW).unwrap(),
        Published::Stale
    );
    assert_eq!(store.read(|tx| tx.compartments(&session)).unwrap().len(), 2);
}

#[test]
fn a_chunk_never_ends_on_a_call_whose_result_opens_the_live_tail() {
    let messages = conversation(12, 2_000);
    let (_dir, store, session) = seeded(&messages);
    // The newest 2 tags are the results at 22 and 24: the live tail opens with the result
    // of the call at 21, which must stay with it.
    let settings = HistorianSettings {
        live_tail_tags: 2,
        max_chunk_tokens: 100_000,
        ..settings()
    };
    let job = next_job(&store, &session, &settings, 0, &count)
        .unwrap()
        .unwrap();
    assert_eq!(job.chunk, mc_core::historian::Chunk { start: 0, end: 20 });
}

#[test]
fn no_run_starts_while_usage_is_below_the_start() {
    let messages = conversation(12, 2_000);
    let (_dir, store, session) = seeded(&messages);
    let waiting = HistorianSettings {
        start_usage_percent: 30,
        ..settings()
    };
    assert!(
        next_job(&store, &session, &waiting, 29, &count)
            .unwrap()
            .is_none()
    );
    assert!(
        next_job(&store, &session, &waiting, 30, &count)
            .unwrap()
            .is_some()
    );
}

#[test]
fn a_single_compartment_for_a_chunk_cut_short_is_published_not_asked_again() {
    let messages = conversation(12, 2_000);
    let (_dir, store, session) = seeded(&messages);
    let small = HistorianSettings {
        max_chunk_tokens: 2_000,
        ..settings()
    };
    let job = next_job(&store, &session, &small, 0, &count)
        .unwrap()
        .unwrap();
    assert!(
        job.cut_short,
        "more eligible history follows {:?}",
        job.chunk
    );
    let whole = json!({"compartments": [compartment(job.chunk.start, job.chunk.end)]});
    let accepted = accept(&job, &whole, 2).unwrap();
    assert_eq!(accepted.compartments.len(), 1);
    assert_eq!(accepted.provisional, None);
    // Two compartments still leave the last one open: provisional, read again next run.
    let two = json!({"compartments": [compartment(job.chunk.start, job.chunk.start),
        compartment(job.chunk.start + 1, job.chunk.end)]});
    let accepted = accept(&job, &two, 2).unwrap();
    assert_eq!(accepted.compartments.len(), 1);
    assert!(accepted.validated.held_back);
    assert_eq!(
        accepted.provisional.map(|last| last.start_ordinal),
        Some(job.chunk.start + 1)
    );
}

#[tokio::test]
async fn a_provisional_episode_is_read_again_only_once_unread_history_reaches_the_trigger() {
    let messages = conversation(12, 2_000);
    let (_dir, store, session) = seeded(&messages);
    let job = next_job(&store, &session, &settings(), 0, &count)
        .unwrap()
        .unwrap();
    let held_end = job.chunk.end;
    // One episode up to the chunk end: nothing confirms it ended, so it is provisional.
    let model = Scripted::new(
        1,
        vec![Ok(json!({"compartments": [compartment(0, held_end)]}))],
    );
    let report = run_job(&job, &model, 2).await;
    assert_eq!(
        publish(&store, &job, &report, NOW, NOW + 5).unwrap(),
        Published::Compartments {
            count: 1,
            covered_end: held_end,
            provisional: true,
        }
    );
    // Two more turns (about 1,000 tokens) are under the 2,000-token trigger: asking now
    // would only leave the same episode open again.
    let longer = conversation(14, 2_000);
    grow(&store, &session, &longer, messages.len());
    assert!(
        next_job(&store, &session, &settings(), 0, &count)
            .unwrap()
            .is_none()
    );
    // Three more (about 2,500 tokens unread in all) reach it: the chunk starts where the
    // provisional compartment does and reads past where it ended.
    let longest = conversation(17, 2_000);
    grow(&store, &session, &longest, longer.len());
    let again = next_job(&store, &session, &settings(), 0, &count)
        .unwrap()
        .unwrap();
    assert_eq!(again.chunk.start, 0);
    assert!(
        again.chunk.end > held_end,
        "{:?} after {held_end}",
        again.chunk
    );
    // Left open a second time in a row (a chunk that reads to the live tail, so its one
    // episode may still go on): again a trigger's worth of unread history must arrive first,
    // no more (its messages are already out of the prompt; only what follows waits).
    let roomy = HistorianSettings {
        max_chunk_tokens: 100_000,
        ..settings()
    };
    let whole = next_job(&store, &session, &roomy, 0, &count)
        .unwrap()
        .unwrap();
    let model = Scripted::new(
        1,
        vec![Ok(
            json!({"compartments": [compartment(0, whole.chunk.end)]}),
        )],
    );
    let report = run_job(&whole, &model, 2).await;
    assert_eq!(
        publish(&store, &whole, &report, NOW + 10, NOW + 15).unwrap(),
        Published::Compartments {
            count: 0,
            covered_end: whole.chunk.end,
            provisional: true,
        }
    );
    // Like the first, after four or five more turns (about 2,000 unread tokens).
    let mut turns = 17;
    let asked_at = loop {
        let grown = conversation(turns + 1, 2_000);
        grow(&store, &session, &grown, conversation(turns, 2_000).len());
        turns += 1;
        if next_job(&store, &session, &roomy, 0, &count)
            .unwrap()
            .is_some()
        {
            break turns;
        }
        assert!(turns < 60, "never asked again");
    };
    assert!(
        (4..=5).contains(&(asked_at - 17)),
        "asked again after {} more turns",
        asked_at - 17
    );
}

#[tokio::test]
async fn a_session_found_idle_is_checked_again_only_after_its_prompt_grew() {
    let messages = conversation(3, 200);
    let (_dir, store, session) = seeded(&messages);
    let historian =
        mc_historian::Historian::new(std::sync::Arc::new(store), std::sync::Arc::new(|| 0));
    let request = |prompt_tokens: u64| mc_historian::RunRequest {
        session: session.clone(),
        model: std::sync::Arc::new(Scripted::new(1, Vec::new())),
        settings: settings(),
        usage_percent: 0,
        prompt_tokens,
        count: std::sync::Arc::new(count),
    };
    // Below the trigger: the check finds nothing to do.
    let first = historian
        .start(request(10_000))
        .expect("a first check runs");
    assert_eq!(first.await.unwrap(), None);
    // Grown by less than a quarter of the 2,000-token trigger: no check at all.
    assert!(historian.start(request(10_400)).is_none());
    // A bust shrank the prompt: that is the new baseline, still no check.
    assert!(historian.start(request(6_000)).is_none());
    assert!(historian.start(request(6_400)).is_none());
    // Grown by a quarter of the trigger since: checked again.
    let again = historian.start(request(6_500)).expect("checked again");
    assert_eq!(again.await.unwrap(), None);
}

#[test]
fn a_live_tail_over_its_token_bound_lets_its_older_messages_be_summarised() {
    let messages = conversation(12, 2_000);
    let (_dir, store, session) = seeded(&messages);
    let roomy = HistorianSettings {
        max_chunk_tokens: 100_000,
        ..settings()
    };
    let by_tags = next_job(&store, &session, &roomy, 0, &count)
        .unwrap()
        .unwrap();
    // About 500 tokens a result: 2,000 tokens keep four results' worth of messages raw,
    // fewer than the six newest tags would.
    let bounded = HistorianSettings {
        live_tail_max_tokens: 2_000,
        ..roomy
    };
    let by_tokens = next_job(&store, &session, &bounded, 0, &count)
        .unwrap()
        .unwrap();
    assert!(
        by_tokens.chunk.end > by_tags.chunk.end,
        "{:?} vs {:?}",
        by_tokens.chunk,
        by_tags.chunk
    );
    // Never the newest two messages.
    assert!(by_tokens.chunk.end + 2 < messages.len() as u64);
}

#[tokio::test]
async fn a_published_runs_facts_become_the_projects_memories() {
    let messages = conversation(12, 2_000);
    let (_dir, store, session) = seeded(&messages);
    let project = mc_core::ProjectId::new("git:root").unwrap();
    store
        .write(|tx| {
            tx.upsert_session(
                &NewSession {
                    id: session.clone(),
                    host: Host::ClaudeCode,
                    project: Some(project.clone()),
                },
                NOW,
            )
        })
        .unwrap();
    let job = next_job(&store, &session, &settings(), 0, &count)
        .unwrap()
        .unwrap();
    let model = Scripted::new(
        1,
        vec![Ok(
            json!({"compartments": [compartment(0, 4), compartment(5, 8)],
            "facts": [{"category": "CONSTRAINTS", "content": "Never edit the lockfile."}]}),
        )],
    );
    let report = run_job(&job, &model, 2).await;
    publish(&store, &job, &report, NOW, NOW + 5).unwrap();
    let memories = store
        .read(|tx| tx.memories(&project, mc_store::MemoryStatus::ALL))
        .unwrap();
    let promoted: Vec<(&str, mc_store::MemorySource)> = memories
        .iter()
        .map(|memory| (memory.record.content.as_str(), memory.record.source))
        .collect();
    assert_eq!(
        promoted,
        [(
            "Never edit the lockfile.",
            mc_store::MemorySource::Historian
        )]
    );
}
