//! `magic-context config schema`.

use crate::support::Machine;

#[test]
fn schema_snapshot() {
    let run = Machine::fresh().run(&["config", "schema"], &[]).success();
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    let schema = run.json();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    insta::assert_snapshot!("config_schema", run.stdout);
}

/// Every key `config show` lists is described by the schema, with its default.
#[test]
fn schema_describes_every_shown_key() {
    let machine = Machine::fresh();
    let schema = machine.run(&["config", "schema"], &[]).success().json();
    let shown = machine
        .run(&["config", "show", "--json"], &[])
        .success()
        .json();
    let sources = shown["sources"].as_object().unwrap();
    assert!(sources.len() > 30);
    for key in sources.keys() {
        let mut node = &schema;
        for segment in key.split('.') {
            node = &node["properties"][segment];
        }
        assert!(node["description"].is_string(), "{key} has no description");
        let default = key
            .split('.')
            .fold(&shown["config"], |value, segment| &value[segment]);
        assert_eq!(&node["default"], default, "{key}");
    }
}
