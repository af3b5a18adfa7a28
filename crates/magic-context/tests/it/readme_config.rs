//! The example configuration in the README is one the binary reads without a complaint, and
//! `MAGIC_CONTEXT_CONFIG` names the file it is read from, as the README says.

use std::path::Path;

use crate::support::Machine;

/// The README's first `jsonc` block.
fn readme_example() -> String {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let text = std::fs::read_to_string(readme).unwrap();
    let (_, after) = text
        .split_once("```jsonc\n")
        .expect("the README shows an example configuration");
    let (example, _) = after.split_once("```").unwrap();
    example.to_owned()
}

#[test]
fn the_readmes_example_configuration_loads_without_a_warning() {
    let machine = Machine::fresh();
    let file = machine.path("home/example.jsonc");
    std::fs::write(&file, readme_example()).unwrap();
    let run = machine
        .run(
            &["config", "show", "--json"],
            &[("MAGIC_CONTEXT_CONFIG", file.as_os_str())],
        )
        .success();
    assert_eq!(run.stderr, "", "the example has no problem");
    let shown = run.json();
    assert_eq!(shown["diagnostics"], serde_json::json!([]), "{shown}");
    assert_eq!(shown["files"]["user"], "[TMP]/home/example.jsonc");
    // Each value the example sets comes from the file it names.
    for key in [
        "proxy.listen",
        "proxy.upstream_anthropic",
        "historian.enabled",
        "historian.fallback_models",
        "tools.mode",
        "embeddings.enabled",
    ] {
        assert_eq!(shown["sources"][key], "[TMP]/home/example.jsonc", "{key}");
    }
    assert_eq!(
        shown["config"]["historian"]["fallback_models"],
        serde_json::json!(["claude-sonnet-4-5"])
    );
}

/// The README's workspaces example loads without a warning and says what it shows.
#[test]
fn the_readmes_workspaces_example_loads_without_a_warning() {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let text = std::fs::read_to_string(readme).unwrap();
    let example = text
        .split("```jsonc\n")
        .skip(1)
        .filter_map(|block| block.split_once("```").map(|(example, _)| example))
        .find(|example| example.contains("\"workspaces\""))
        .expect("the README shows a workspaces example");
    let machine = Machine::fresh();
    let file = machine.path("home/workspaces.jsonc");
    std::fs::write(&file, example).unwrap();
    let shown = machine
        .run(
            &["config", "show", "--json"],
            &[("MAGIC_CONTEXT_CONFIG", file.as_os_str())],
        )
        .success()
        .json();
    assert_eq!(shown["diagnostics"], serde_json::json!([]), "{shown}");
    assert_eq!(
        shown["config"]["workspaces"]["shop"]["projects"],
        serde_json::json!(["~/src/shop-api", "~/src/shop-web"])
    );
    assert_eq!(
        shown["sources"]["workspaces.shop.categories"],
        "[TMP]/home/workspaces.jsonc"
    );
}
