//! The hidden rounds over a toy wire: an answer is a list of texts and calls.

use proptest::prelude::*;

use super::*;
use crate::MAX_ROUNDS;

/// One part of a toy answer.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    /// A call to one of our tools (`ours`) or the client's.
    Call {
        id: String,
        ours: bool,
    },
}

/// A stored toy exchange.
#[derive(Debug, PartialEq)]
struct ToySplice {
    before: Vec<String>,
    full_answer: Option<Vec<String>>,
    client_answer: String,
    results: Vec<String>,
}

struct Toy;

fn turn(part: &Part) -> String {
    match part {
        Part::Text(text) => text.clone(),
        Part::Call { id, .. } => format!("call {id}"),
    }
}

impl RoundWire for Toy {
    type Answer = [Part];
    type Turn = String;
    type Shown = Vec<String>;
    type Splice = ToySplice;

    fn calls(answer: &[Part]) -> (Vec<usize>, usize) {
        let ours = (0..answer.len())
            .filter(|&index| matches!(answer[index], Part::Call { ours: true, .. }))
            .collect();
        let theirs = answer
            .iter()
            .filter(|part| matches!(part, Part::Call { ours: false, .. }))
            .count();
        (ours, theirs)
    }

    fn our_calls(answer: &[Part], ours: &[usize]) -> Vec<OurCall> {
        ours.iter()
            .filter_map(|&index| match &answer[index] {
                Part::Call { id, .. } => Some(OurCall {
                    id: id.clone(),
                    name: "ctx_search".to_owned(),
                    arguments: Value::Null,
                }),
                Part::Text(_) => None,
            })
            .collect()
    }

    fn results(calls: Vec<OurCall>, answers: Vec<ToolAnswer>) -> Vec<String> {
        calls
            .into_iter()
            .zip(answers)
            .map(|(call, answer)| format!("result {} {}", call.id, answer.text))
            .collect()
    }

    fn answer_turns(answer: &[Part]) -> Vec<String> {
        vec![answer.iter().map(turn).collect::<Vec<_>>().join("|")]
    }

    fn show(shown: &mut Vec<String>, answer: &[Part], ours: &[usize]) {
        shown.extend(
            answer
                .iter()
                .enumerate()
                .filter(|(index, _)| !ours.contains(index))
                .map(|(_, part)| turn(part)),
        );
    }

    fn shown_nothing(shown: &Vec<String>) -> bool {
        shown.is_empty()
    }

    fn splice(
        before: Vec<String>,
        full_answer: Option<Vec<String>>,
        client: ClientAnswer<'_, Self>,
        results: Vec<String>,
    ) -> Option<ToySplice> {
        let mut seen = client.shown.clone();
        Self::show(&mut seen, client.answer, client.ours);
        if client.capped {
            seen.push("limit".to_owned());
        }
        Some(ToySplice {
            before,
            full_answer,
            client_answer: seen.join("|"),
            results,
        })
    }
}

fn ours(id: &str) -> Part {
    Part::Call {
        id: id.to_owned(),
        ours: true,
    }
}

fn theirs(id: &str) -> Part {
    Part::Call {
        id: id.to_owned(),
        ours: false,
    }
}

fn text(text: &str) -> Part {
    Part::Text(text.to_owned())
}

/// Runs the calls of a `Run` with answers naming them.
fn answered(run: &Run) -> Vec<ToolAnswer> {
    run.calls
        .iter()
        .map(|call| ToolAnswer {
            text: format!("for {}", call.id),
            is_error: false,
        })
        .collect()
}

fn run_of(settle: Settle<ToySplice>) -> Run {
    match settle {
        Settle::Run(run) => run,
        Settle::Final { .. } => panic!("the round has calls of ours"),
    }
}

#[test]
fn an_answer_without_our_calls_is_final_and_stores_nothing_alone() {
    let mut rounds = HiddenRounds::<Toy>::new(false);
    let settle = rounds.settle(&[text("done"), theirs("c1")]);
    assert!(matches!(settle, Settle::Final { keep: None }));
}

#[test]
fn hidden_rounds_go_upstream_and_are_stored_before_the_final_answer() {
    let mut rounds = HiddenRounds::<Toy>::new(false);
    let first = [text("looking"), ours("s1")];
    let run = run_of(rounds.settle(&first));
    let answers = answered(&run);
    assert!(matches!(
        rounds.after_run(&first, run, answers),
        AfterRun::Again { last: false }
    ));
    assert_eq!(
        rounds.hidden(),
        ["looking|call s1", "result s1 for s1"].map(str::to_owned)
    );
    let Settle::Final { keep: Some(keep) } = rounds.settle(&[text("found it")]) else {
        panic!("the hidden round is stored");
    };
    assert_eq!(
        keep,
        ToySplice {
            before: vec!["looking|call s1".to_owned(), "result s1 for s1".to_owned()],
            full_answer: None,
            client_answer: "found it".to_owned(),
            results: Vec::new(),
        }
    );
    assert!(rounds.hidden().is_empty());
}

#[test]
fn a_live_client_keeps_what_it_saw_and_the_model_keeps_the_whole_answer() {
    let mut rounds = HiddenRounds::<Toy>::new(true);
    let first = [text("looking"), ours("s1")];
    let run = run_of(rounds.settle(&first));
    let answers = answered(&run);
    rounds.after_run(&first, run, answers);
    assert_eq!(rounds.shown(), &vec!["looking".to_owned()]);
    let last = [text("now"), theirs("c1"), ours("s2")];
    let run = run_of(rounds.settle(&last));
    let answers = answered(&run);
    let AfterRun::HandBack {
        ours,
        capped,
        keep: Some(keep),
    } = rounds.after_run(&last, run, answers)
    else {
        panic!("the client's call hands the answer back");
    };
    assert_eq!((ours, capped), (vec![2], false));
    assert_eq!(keep.client_answer, "looking|now|call c1");
    assert_eq!(
        keep.full_answer,
        Some(vec!["now|call c1|call s2".to_owned()])
    );
    assert_eq!(keep.results, vec!["result s2 for s2".to_owned()]);
}

proptest! {
    /// However the model calls, the rounds end within the limit, the last round allowed is
    /// announced once, and every round that continued is in the conversation upstream with
    /// one result per call of ours.
    #[test]
    fn the_rounds_end_within_the_limit(
        answers in prop::collection::vec(prop::collection::vec(0u8..3, 0..4), 1..20)
    ) {
        let mut rounds = HiddenRounds::<Toy>::new(false);
        let mut upstream = 0;
        for (round, kinds) in answers.iter().enumerate() {
            let answer: Vec<Part> = kinds
                .iter()
                .enumerate()
                .map(|(index, kind)| match kind {
                    0 => text("t"),
                    1 => ours(&format!("o{round}-{index}")),
                    _ => theirs(&format!("c{round}-{index}")),
                })
                .collect();
            prop_assert!(rounds.count() <= MAX_ROUNDS);
            let run = match rounds.settle(&answer) {
                Settle::Final { keep } => {
                    prop_assert_eq!(keep.is_some(), upstream > 0);
                    break;
                }
                Settle::Run(run) => run,
            };
            let calls = run.calls.len();
            let answers = answered(&run);
            match rounds.after_run(&answer, run, answers) {
                AfterRun::HandBack { keep, .. } => {
                    prop_assert_eq!(keep.map(|keep| keep.results.len()), Some(calls));
                    break;
                }
                AfterRun::Again { last } => {
                    upstream += 1 + calls;
                    prop_assert_eq!(rounds.hidden().len(), upstream);
                    prop_assert_eq!(last, rounds.count() == MAX_ROUNDS);
                }
            }
        }
    }
}
