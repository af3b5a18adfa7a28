//! `magic-context bench locomo --cross-validate`: fusion settings chosen on some
//! conversations and scored on the others.
//!
//! The fusion weights were fitted on the shared file's conversations, so a figure measured on
//! those same conversations says how well the weights fit them, not how well they carry to
//! conversations nobody tuned on. Here every setting of a small grid is scored on every
//! conversation (recall@10 of the evidence turns, per question); each split then fits on all
//! conversations but two (the setting with the best recall on them) and scores the chosen
//! setting on the two held out. The figure reported is the held-out recall over every split,
//! for full text alone and for hybrid search in the same run, beside the held-out recall of
//! the shipped defaults.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use mc_core::search::FusionWeights;
use mc_engine::search::SemanticSearch;
use mc_store::Store;
use serde::Serialize;

use crate::bench_cmd::semantic_signal;
use crate::bench_locomo::{Asked, ids, ingest_file, percentile, recall_at};
use crate::locomo::Conversation;
use crate::output::{pretty, write_stdout};

/// What `bench locomo --cross-validate` reports.
#[derive(Debug, Serialize)]
pub struct LocomoCrossValidation {
    /// Full text alone.
    pub full_text: CrossValidated,
    /// Full text and embeddings; absent without a model.
    pub hybrid: Option<CrossValidated>,
    /// Per split, hybrid's held-out recall less full text's.
    pub hybrid_gain: Vec<f64>,
}

/// Cross-validates both modes on the conversations of `data` (hybrid with the local model
/// in `model_dir`, or the configured provider when one is set) and prints the report.
pub fn run(data: &Path, model_dir: Option<&Path>, as_json: bool) -> anyhow::Result<ExitCode> {
    let scratch = tempfile::tempdir().context("cannot create a scratch directory")?;
    let store = Arc::new(
        Store::open(scratch.path().join("context.db"))
            .context("cannot open the benchmark store")?,
    );
    let conversations = ingest_file(&store, data)?;
    let full_text = cross_validate(&score(&store, &conversations, &full_text_grid(), None)?);
    let signal = match model_dir {
        Some(_) => Some(semantic_signal(&store, model_dir)?),
        None => semantic_signal(&store, None)
            .inspect_err(|error| tracing::info!(%error, "no embedding model: full text alone"))
            .ok(),
    };
    let hybrid = match &signal {
        Some((_, semantic)) => Some(cross_validate(&score(
            &store,
            &conversations,
            &hybrid_grid(),
            Some(semantic),
        )?)),
        None => None,
    };
    let hybrid_gain = hybrid.as_ref().map_or_else(Vec::new, |hybrid| {
        hybrid
            .folds
            .iter()
            .zip(&full_text.folds)
            .map(|(hybrid, full_text)| hybrid.held_out_recall - full_text.held_out_recall)
            .collect()
    });
    let report = LocomoCrossValidation {
        full_text,
        hybrid,
        hybrid_gain,
    };
    let text = if as_json {
        pretty(&serde_json::to_value(&report).context("cannot format the report")?)?
    } else {
        as_table(&report)
    };
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// The report as a table per mode, one row per split.
fn as_table(report: &LocomoCrossValidation) -> String {
    let mut out = String::new();
    let modes = [
        ("full text", Some(&report.full_text)),
        ("hybrid", report.hybrid.as_ref()),
    ];
    for (mode, cv) in modes {
        let Some(cv) = cv else {
            out.push_str(&format!("{mode}: no embedding model (pass --model-dir)\n"));
            continue;
        };
        out.push_str(&format!(
            "{mode}: recall@{K} held out {:.3} (defaults {:.3}; where chosen {:.3}), {} settings, query p50 {:.2} ms, p95 {:.2} ms\n",
            cv.held_out_recall, cv.default_held_out_recall, cv.fitted_recall, cv.settings, cv.p50_ms, cv.p95_ms
        ));
        out.push_str("| held out | chosen | fitted | held out | defaults held out |\n|---|---|---|---|---|\n");
        for fold in &cv.folds {
            out.push_str(&format!(
                "| {} | {} | {:.3} | {:.3} | {:.3} |\n",
                fold.held_out.join(", "),
                fold.chosen,
                fold.fitted_recall,
                fold.held_out_recall,
                fold.default_held_out_recall
            ));
        }
    }
    if let (Some(worst), Some(best)) = (
        report.hybrid_gain.iter().copied().reduce(f64::min),
        report.hybrid_gain.iter().copied().reduce(f64::max),
    ) {
        out.push_str(&format!(
            "hybrid less full text, held out, per split: {worst:+.3} to {best:+.3}\n"
        ));
    }
    out
}

/// The cut-off recall is scored at.
pub const K: usize = 10;

/// Conversations each split holds out.
const HELD_OUT: usize = 2;

/// One fusion setting of a grid.
#[derive(Debug, Clone)]
pub struct Setting {
    /// What it is, as reports show it.
    pub name: String,
    /// Its weights.
    pub weights: FusionWeights,
}

/// The settings tried for full text alone: how much of its neighbours' score a message
/// takes (the one full-text knob) from none to 0.4, the default first.
pub fn full_text_grid() -> Vec<Setting> {
    let default = FusionWeights::default();
    let mut grid = vec![Setting {
        name: "default".to_owned(),
        weights: default,
    }];
    for share in [0.0, 0.1, 0.2, 0.3, 0.4] {
        if share == default.neighbour_full_text {
            continue;
        }
        grid.push(Setting {
            name: format!("neighbours {share}"),
            weights: FusionWeights {
                neighbour_full_text: share,
                ..default
            },
        });
    }
    grid
}

/// The settings tried for hybrid search, the default first: score fusion over the
/// semantic weight, the single-signal factor and the neighbours' shares (the defaults' or
/// none), and reciprocal-rank fusion at two constants.
pub fn hybrid_grid() -> Vec<Setting> {
    let default = FusionWeights::default();
    let mut grid = vec![Setting {
        name: "default".to_owned(),
        weights: default,
    }];
    for semantic in [0.3, 0.5, 0.7] {
        for single_signal in [0.6, 0.8, 1.0] {
            for neighbours in [true, false] {
                let share = |of: f64| if neighbours { of } else { 0.0 };
                let weights = FusionWeights {
                    semantic,
                    full_text: 1.0 - semantic,
                    single_signal,
                    neighbour_full_text: share(default.neighbour_full_text),
                    neighbour_semantic: share(default.neighbour_semantic),
                    ..default
                };
                if weights != default {
                    let neighbours = if neighbours { "on" } else { "off" };
                    grid.push(Setting {
                        name: format!(
                            "score: semantic {semantic}, single {single_signal}, neighbours {neighbours}"
                        ),
                        weights,
                    });
                }
            }
        }
    }
    for k in [10.0, 60.0] {
        grid.push(Setting {
            name: format!("rank fusion k={k}"),
            weights: FusionWeights {
                rank_constant: Some(k),
                ..default
            },
        });
    }
    grid
}

/// Every setting's recall on every conversation.
#[derive(Debug, Clone, Serialize)]
pub struct Scores {
    /// The conversations, in the file's order.
    pub conversations: Vec<String>,
    /// The settings, in the grid's order.
    pub settings: Vec<String>,
    /// Per conversation, per setting: recall@[`K`] summed over its questions.
    pub recall_sums: Vec<Vec<f64>>,
    /// Per conversation: the questions with evidence.
    pub questions: Vec<usize>,
    /// Query time of every search, milliseconds: median and 95th percentile.
    pub p50_ms: f64,
    /// See `p50_ms`.
    pub p95_ms: f64,
}

/// Asks every question of `conversations` (stored by [`crate::bench_locomo::ingest_file`])
/// with every setting of `grid`.
pub fn score(
    store: &Store,
    conversations: &[Conversation],
    grid: &[Setting],
    semantic: Option<&dyn SemanticSearch>,
) -> anyhow::Result<Scores> {
    let mut recall_sums = Vec::with_capacity(conversations.len());
    let mut questions = Vec::with_capacity(conversations.len());
    let mut times = Vec::new();
    for conversation in conversations {
        let (project, session) = ids(conversation)?;
        let asked = Asked {
            store,
            project: &project,
            session: &session,
            semantic,
        };
        let mut sums = vec![0.0; grid.len()];
        let mut count = 0;
        for question in conversation
            .questions
            .iter()
            .filter(|q| !q.evidence.is_empty())
        {
            count += 1;
            // Settings inside questions: the question's vector is computed once (the
            // semantic signal keeps its recent queries').
            for (sum, setting) in sums.iter_mut().zip(grid) {
                let started = Instant::now();
                let ranked = asked.ranked_turns(question, K, &setting.weights)?;
                times.push(started.elapsed().as_secs_f64() * 1000.0);
                *sum += recall_at(question, &ranked, K);
            }
        }
        recall_sums.push(sums);
        questions.push(count);
    }
    times.sort_by(f64::total_cmp);
    Ok(Scores {
        conversations: conversations.iter().map(|c| c.id.clone()).collect(),
        settings: grid.iter().map(|setting| setting.name.clone()).collect(),
        recall_sums,
        questions,
        p50_ms: percentile(&times, 0.50),
        p95_ms: percentile(&times, 0.95),
    })
}

/// One split: fitted on `fitted_on`, scored on `held_out`.
#[derive(Debug, Clone, Serialize)]
pub struct Fold {
    /// The conversations the setting was chosen on.
    pub fitted_on: Vec<String>,
    /// The conversations it was scored on.
    pub held_out: Vec<String>,
    /// The setting chosen: the best recall on `fitted_on` (the earlier in the grid on a tie).
    pub chosen: String,
    /// Its recall on `fitted_on`.
    pub fitted_recall: f64,
    /// Its recall on `held_out`: the figure that says how it generalises.
    pub held_out_recall: f64,
    /// The default setting's recall on `held_out`.
    pub default_held_out_recall: f64,
}

/// Cross-validated recall of one mode.
#[derive(Debug, Clone, Serialize)]
pub struct CrossValidated {
    /// Settings tried.
    pub settings: usize,
    /// Every split.
    pub folds: Vec<Fold>,
    /// Mean over the splits of the chosen setting's held-out recall.
    pub held_out_recall: f64,
    /// Mean over the splits of the default setting's held-out recall.
    pub default_held_out_recall: f64,
    /// Mean over the splits of the chosen setting's recall where it was chosen.
    pub fitted_recall: f64,
    /// Query time, milliseconds (every setting's searches).
    pub p50_ms: f64,
    /// See `p50_ms`.
    pub p95_ms: f64,
}

/// Every split of `scores`' conversations that holds out [`HELD_OUT`] of them (one, for
/// fewer than three conversations), each fitted on the rest.
pub fn cross_validate(scores: &Scores) -> CrossValidated {
    let count = scores.conversations.len();
    let held_out = if count > HELD_OUT { HELD_OUT } else { 1 };
    let folds: Vec<Fold> = combinations(count, held_out)
        .into_iter()
        .filter(|held| held.len() < count)
        .map(|held| {
            let fitted: Vec<usize> = (0..count).filter(|index| !held.contains(index)).collect();
            let chosen = best_setting(scores, &fitted);
            Fold {
                fitted_on: names(scores, &fitted),
                held_out: names(scores, &held),
                chosen: scores.settings[chosen].clone(),
                fitted_recall: recall(scores, &fitted, chosen),
                held_out_recall: recall(scores, &held, chosen),
                default_held_out_recall: recall(scores, &held, 0),
            }
        })
        .collect();
    let mean = |figure: fn(&Fold) -> f64| {
        folds.iter().map(figure).sum::<f64>() / folds.len().max(1) as f64
    };
    CrossValidated {
        settings: scores.settings.len(),
        held_out_recall: mean(|fold| fold.held_out_recall),
        default_held_out_recall: mean(|fold| fold.default_held_out_recall),
        fitted_recall: mean(|fold| fold.fitted_recall),
        p50_ms: scores.p50_ms,
        p95_ms: scores.p95_ms,
        folds,
    }
}

/// The setting with the best recall over `conversations`; the first on a tie.
fn best_setting(scores: &Scores, conversations: &[usize]) -> usize {
    (0..scores.settings.len()).fold(0, |best, setting| {
        if recall(scores, conversations, setting) > recall(scores, conversations, best) {
            setting
        } else {
            best
        }
    })
}

/// Recall@[`K`] of `setting` over the questions of `conversations`.
fn recall(scores: &Scores, conversations: &[usize], setting: usize) -> f64 {
    let sum: f64 = conversations
        .iter()
        .map(|&conversation| scores.recall_sums[conversation][setting])
        .sum();
    let questions: usize = conversations
        .iter()
        .map(|&conversation| scores.questions[conversation])
        .sum();
    if questions == 0 {
        0.0
    } else {
        sum / questions as f64
    }
}

fn names(scores: &Scores, conversations: &[usize]) -> Vec<String> {
    conversations
        .iter()
        .map(|&index| scores.conversations[index].clone())
        .collect()
}

/// Every `size`-element subset of `0..count`, in lexicographic order.
fn combinations(count: usize, size: usize) -> Vec<Vec<usize>> {
    fn extend(
        start: usize,
        count: usize,
        size: usize,
        chosen: &mut Vec<usize>,
        out: &mut Vec<Vec<usize>>,
    ) {
        if chosen.len() == size {
            out.push(chosen.clone());
            return;
        }
        for next in start..count {
            chosen.push(next);
            extend(next + 1, count, size, chosen, out);
            chosen.pop();
        }
    }
    let mut out = Vec::new();
    extend(0, count, size, &mut Vec::new(), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scores(recall_sums: Vec<Vec<f64>>) -> Scores {
        Scores {
            conversations: (0..recall_sums.len()).map(|i| format!("c{i}")).collect(),
            settings: vec!["default".to_owned(), "a".to_owned(), "b".to_owned()],
            questions: vec![10; recall_sums.len()],
            recall_sums,
            p50_ms: 0.0,
            p95_ms: 0.0,
        }
    }

    #[test]
    fn five_conversations_make_ten_splits_of_three_against_two() {
        let cv = cross_validate(&scores(vec![vec![5.0, 6.0, 4.0]; 5]));
        assert_eq!(cv.folds.len(), 10);
        assert!(
            cv.folds
                .iter()
                .all(|fold| fold.fitted_on.len() == 3 && fold.held_out.len() == 2)
        );
        assert_eq!(cv.folds[0].held_out, ["c0", "c1"]);
        assert!((cv.held_out_recall - 0.6).abs() < 1e-12);
        assert!((cv.default_held_out_recall - 0.5).abs() < 1e-12);
    }

    /// A setting that fits the conversations it is chosen on but not the others shows its
    /// held-out figure, not its fitted one.
    #[test]
    fn a_setting_is_scored_where_it_was_not_chosen() {
        // Setting `b` is best on c0..c2 only; `a` is steady everywhere.
        let cv = cross_validate(&scores(vec![
            vec![5.0, 6.0, 9.0],
            vec![5.0, 6.0, 9.0],
            vec![5.0, 6.0, 9.0],
            vec![5.0, 6.0, 1.0],
            vec![5.0, 6.0, 1.0],
        ]));
        let fold = cv
            .folds
            .iter()
            .find(|fold| fold.held_out == ["c3", "c4"])
            .unwrap();
        assert_eq!(fold.chosen, "b");
        assert!((fold.fitted_recall - 0.9).abs() < 1e-12);
        assert!((fold.held_out_recall - 0.1).abs() < 1e-12);
        assert!(cv.held_out_recall < cv.fitted_recall);
    }

    #[test]
    fn a_tie_keeps_the_earlier_setting_and_two_conversations_hold_out_one() {
        let cv = cross_validate(&scores(vec![vec![5.0, 5.0, 5.0]; 2]));
        assert_eq!(cv.folds.len(), 2);
        assert!(cv.folds.iter().all(|fold| fold.chosen == "default"));
    }

    #[test]
    fn the_grids_start_with_the_default_and_hold_no_duplicate() {
        for grid in [full_text_grid(), hybrid_grid()] {
            assert_eq!(grid[0].weights, FusionWeights::default());
            for (at, setting) in grid.iter().enumerate() {
                assert!(
                    grid[..at]
                        .iter()
                        .all(|earlier| earlier.weights != setting.weights),
                    "{} repeats an earlier setting",
                    setting.name
                );
            }
        }
    }
}
