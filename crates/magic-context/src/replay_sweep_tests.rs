use super::*;

fn axis(text: &str) -> SweepAxis {
    text.parse().unwrap()
}

#[test]
fn an_axis_reads_its_key_and_json_values() {
    assert_eq!(
        axis("history.budget_percent=5, 8,15"),
        SweepAxis {
            key: "history.budget_percent".into(),
            values: vec![json!(5), json!(8), json!(15)],
        }
    );
    assert_eq!(axis("historian.enabled=false").values, [json!(false)]);
    assert_eq!(axis("historian.model=small").values, [json!("small")]);
    for bad in ["history.budget_percent", "=5", "a..b=1", "pass.x="] {
        assert!(bad.parse::<SweepAxis>().is_err(), "{bad}");
    }
}

#[test]
fn the_grid_is_every_combination_first_axis_slowest() {
    let labels: Vec<String> = grid(&[axis("a.x=1,2"), axis("b.y=3,4,5")])
        .iter()
        .map(Setting::label)
        .collect();
    assert_eq!(
        labels,
        [
            "a.x=1 b.y=3",
            "a.x=1 b.y=4",
            "a.x=1 b.y=5",
            "a.x=2 b.y=3",
            "a.x=2 b.y=4",
            "a.x=2 b.y=5"
        ]
    );
}

#[test]
fn a_setting_changes_its_keys_and_keeps_the_rest() {
    let base = load_layers(&[]);
    let setting = &grid(&[
        axis("history.budget_percent=8"),
        axis("historian.live_tail_tags=4"),
    ])[0];
    let config = setting.config(&base).unwrap();
    assert_eq!(config.history.budget_percent.get(), 8);
    assert_eq!(config.historian.live_tail_tags, 4);
    let mut expected = base.config.clone();
    expected.history.budget_percent = config.history.budget_percent;
    expected.historian.live_tail_tags = 4;
    assert_eq!(config, expected);
}

#[test]
fn a_value_the_key_refuses_is_an_error_naming_it() {
    let base = load_layers(&[]);
    for (text, key) in [
        ("history.budget_percent=90", "history.budget_percent"),
        ("history.no_such_key=1", "history.no_such_key"),
    ] {
        let error = grid(&[axis(text)])[0]
            .config(&base)
            .unwrap_err()
            .to_string();
        assert!(error.contains(key), "{error}");
    }
}

fn point(label: &str, cost: f64, refs: f64) -> Point {
    Point {
        label: label.into(),
        controlled_cost_usd: cost,
        references_kept: Some(refs),
        user_words_kept: Some(1.0),
        busts: 3,
        mean_context: 1_000.0,
    }
}

#[test]
fn the_frontier_is_the_settings_nothing_beats_on_both_figures() {
    let sweep = Sweep {
        window_tokens: 64_000,
        files: 2,
        baseline: (StrategyKind::Autocompact, point("autocompact", 10.0, 0.9)),
        points: vec![
            point("cheap", 8.0, 0.95),
            point("keeps", 11.0, 0.99),
            point("worse", 11.5, 0.95),
            point("tie", 8.0, 0.95),
        ],
    };
    let frontier: Vec<bool> = sweep.points.iter().map(|p| sweep.on_frontier(p)).collect();
    assert_eq!(frontier, [true, true, false, true]);
    let json = sweep.to_json();
    assert_eq!(json["settings"][0]["ratio"], 0.8);
    assert_eq!(json["settings"][2]["frontier"], false);
    insta::assert_snapshot!(sweep.render_table(), @r"
    sweep: magic per setting against autocompact (2 recordings, window 64000 tokens)
    autocompact: controlled $10.00, references kept 90.0%, user words kept 100.0%

    | setting | controlled $ | vs baseline | references kept | user words kept | busts | mean ctx | frontier |
    |---|---|---|---|---|---|---|---|
    | cheap | 8.00 | 0.800x | 95.0% | 100.0% | 3 | 1000 | yes |
    | keeps | 11.00 | 1.100x | 99.0% | 100.0% | 3 | 1000 | yes |
    | worse | 11.50 | 1.150x | 95.0% | 100.0% | 3 | 1000 |  |
    | tie | 8.00 | 0.800x | 95.0% | 100.0% | 3 | 1000 | yes |
    ");
}
