//! `magic-context replay` run as a user runs it, on one shared swe trajectory.

use std::path::PathBuf;

use crate::support::Machine;

fn trajectory() -> PathBuf {
    mc_testdata::dir().join("swe-trajectories/sympy__sympy-20801.traj.json")
}

#[test]
fn json_report_has_every_strategy_and_field() {
    let path = trajectory();
    let run = Machine::fresh()
        .run(
            &[
                "replay",
                path.to_str().unwrap(),
                "--window",
                "50000",
                "--json",
            ],
            &[],
        )
        .success();
    let report = run.json();
    let keys: Vec<&str> = report
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "model",
            "window",
            "token_scale",
            "files",
            "prices_as_of",
            "degenerate_baseline",
            "strategies",
            "per_recording"
        ]
    );
    let per_recording = report["per_recording"].as_array().unwrap();
    assert_eq!(
        per_recording.len(),
        report["strategies"].as_object().unwrap().len()
    );
    for row in per_recording {
        for key in [
            "file",
            "strategy",
            "cost_usd",
            "references_kept",
            "user_words_kept",
        ] {
            assert!(row.get(key).is_some(), "{key} missing: {row}");
        }
        assert!(row["lost_user_words"].is_array(), "{row}");
    }
    assert_eq!(report["token_scale"], 1.0);
    // Claude Code's trigger at 50K is 17K, a third of the window.
    assert_eq!(report["degenerate_baseline"], true);
    assert_eq!(report["model"], "claude-sonnet-4-5");
    assert_eq!(report["window"], 50_000);
    assert_eq!(report["files"], 1);
    let strategies = report["strategies"].as_object().unwrap();
    let names: Vec<&str> = strategies.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "passthrough",
            "autocompact",
            "window",
            "clear-tools",
            "clear-tools-batched",
            "magic"
        ]
    );
    for (name, totals) in strategies {
        let fields: Vec<&str> = totals
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        // Only the engine can fail to manage a pass; baselines have no such field. Autocompact
        // (its summaries) and magic (its historian) make labelled calls; magic counts its
        // historian runs and compartments.
        let engine_failures = (name == "magic").then_some("engine_failures");
        let labelled = matches!(name.as_str(), "autocompact" | "magic").then_some("labelled");
        let counters = (name == "magic").then_some("counters");
        let expected: Vec<&str> = [
            "requests",
            "input_uncached",
            "cache_write",
            "cache_read",
            "output",
            "cost_usd",
            "input_cost_usd",
            "controlled_cost_usd",
            "cache_read_share",
            "busts",
            "peak_context",
            "mean_context",
            "over_window",
            "failed_sessions",
        ]
        .into_iter()
        .chain(engine_failures)
        .chain([
            "user_words_kept",
            "references_kept",
            "strategy_ms",
            "prompt_tokens",
        ])
        .chain(labelled)
        .chain(counters)
        .collect();
        assert_eq!(fields, expected, "{name}");
        assert_eq!(
            totals["requests"].as_u64().map(|n| n >= 49),
            Some(true),
            "{name}"
        );
    }
    // Piped, so no progress bar.
    assert_eq!(run.stderr, "");
}

#[test]
fn text_table_and_plot() {
    let machine = Machine::fresh();
    let path = trajectory();
    let svg = machine.path("work/run.svg");
    let run = machine
        .run(
            &[
                "replay",
                path.to_str().unwrap(),
                "--strategy",
                "window,passthrough",
                "--window",
                "50000",
                "--plot",
                svg.to_str().unwrap(),
            ],
            &[],
        )
        .success();
    // The rows, without the warning and note lines under the table.
    let rows: Vec<&str> = run
        .stdout
        .lines()
        .skip(2)
        .take_while(|line| {
            !["calls:", "counters:", "warning:", "note:"]
                .iter()
                .any(|prefix| line.starts_with(prefix))
        })
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert_eq!(rows, ["window", "passthrough"]);
    let header = run.stdout.lines().nth(1).unwrap();
    assert!(header.contains("  cost $  input $  "), "{header}");
    assert!(header.contains("  user kept  "), "{header}");
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>\n"));
}

#[test]
fn unknown_names_list_the_valid_ones() {
    let path = trajectory();
    let path = path.to_str().unwrap();
    let run = Machine::fresh().run(&["replay", path, "--strategy", "wizard"], &[]);
    assert_eq!(run.code, Some(1));
    assert_eq!(
        run.stderr,
        "error: unknown strategy `wizard`; valid strategies: passthrough, autocompact, window, clear-tools, clear-tools-batched, magic\n"
    );
    let run = Machine::fresh().run(&["replay", path, "--token-scale", "0"], &[]);
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr.contains(
            "invalid value '0' for '--token-scale <FACTOR>': the token scale must be a finite number above 0, such as 1.25; got `0`"
        ),
        "{}",
        run.stderr
    );
    let run = Machine::fresh().run(&["replay", path, "--format", "har"], &[]);
    assert_eq!(run.code, Some(1));
    assert_eq!(
        run.stderr,
        "error: unknown format `har`; valid formats: auto, swe-traj, anthropic-capture, claude-code\n"
    );
}

#[test]
fn a_sweep_reports_each_setting_beside_the_baseline() {
    let path = trajectory();
    let run = Machine::fresh()
        .run(
            &[
                "replay",
                path.to_str().unwrap(),
                "--window",
                "50000",
                "--sweep",
                "history.budget_percent=5,15",
                "--sweep",
                "historian.live_tail_tags=4",
                "--json",
            ],
            &[],
        )
        .success();
    let report = run.json();
    assert_eq!(report["baseline"]["strategy"], "autocompact");
    assert_eq!(report["window"], 50_000);
    let settings = report["settings"].as_array().unwrap();
    let labels: Vec<&str> = settings
        .iter()
        .map(|s| s["setting"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "history.budget_percent=5 historian.live_tail_tags=4",
            "history.budget_percent=15 historian.live_tail_tags=4"
        ]
    );
    let baseline_cost = report["baseline"]["controlled_cost_usd"].as_f64().unwrap();
    for setting in settings {
        let cost = setting["controlled_cost_usd"].as_f64().unwrap();
        assert!(cost > 0.0, "{setting}");
        let ratio = setting["ratio"].as_f64().unwrap();
        assert!((ratio - cost / baseline_cost).abs() < 1e-9, "{setting}");
        let refs = setting["references_kept"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&refs), "{setting}");
        assert!(setting["frontier"].is_boolean(), "{setting}");
    }
    // At least one setting is on the frontier: nothing beats the cheapest on cost.
    assert!(settings.iter().any(|s| s["frontier"] == true));
}

#[test]
fn a_sweep_value_the_key_refuses_names_the_key() {
    let path = trajectory();
    let run = Machine::fresh().run(
        &[
            "replay",
            path.to_str().unwrap(),
            "--sweep",
            "history.budget_percent=90",
        ],
        &[],
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("history.budget_percent"),
        "{}",
        run.stderr
    );
}

/// `bench recall-dropped` on a trajectory where `magic` at 64K drops what the answers go on
/// to use: every such reference is searched for, by its name and by its sentence, and full
/// text finds most of them among the first five (0.91 when this was written).
#[test]
fn recall_dropped_searches_for_what_the_requests_missed() {
    let path = mc_testdata::dir().join("swe-trajectories/django__django-15629.traj.json");
    let run = Machine::fresh()
        .run(
            &[
                "bench",
                "recall-dropped",
                path.to_str().unwrap(),
                "--window",
                "64000",
                "--json",
            ],
            &[],
        )
        .success();
    let report = run.json();
    let by_identifier = &report["by_identifier"];
    let asked = by_identifier["asked"].as_u64().unwrap();
    assert!(asked >= 10, "{report}");
    assert_eq!(report["by_sentence"]["asked"], asked, "{report}");
    let at_1 = by_identifier["recall_at_1"].as_f64().unwrap();
    let at_5 = by_identifier["recall_at_5"].as_f64().unwrap();
    assert!(at_1 <= at_5 && at_5 <= 1.0, "{report}");
    assert!(
        at_5 >= 0.6,
        "search stopped finding what was dropped: {report}"
    );
    let recordings = report["per_recording"].as_array().unwrap();
    assert_eq!(recordings.len(), 1, "{report}");
    assert_eq!(recordings[0]["name"], "django__django-15629", "{report}");
}
