//! The JSONC config loader, as `magic-context` runs it: any file content (bytes, not only
//! UTF-8) loads as the user and the project file without panicking, and the effective config
//! always loads as itself with no diagnostic (it round-trips through its file shape).
#![no_main]

use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;
use mc_config::{ConfigSources, Source, load, load_layers};

fn file() -> PathBuf {
    std::env::temp_dir().join(format!("mc-fuzz-config-{}.jsonc", std::process::id()))
}

fuzz_target!(|data: &[u8]| {
    let path = file();
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let sources = ConfigSources {
        user: Some(path.clone()),
        project: Some(path),
        ..Default::default()
    };
    let loaded = load(&sources);
    let _ = loaded.entries();
    let serde_json::Value::Object(effective) = loaded.config_json() else {
        panic!("the effective config is not an object");
    };
    let again = load_layers(&[(Source::User(PathBuf::from("again.jsonc")), effective)]);
    assert_eq!(
        again.config, loaded.config,
        "the effective config does not load as itself"
    );
    assert!(
        again.diagnostics.is_empty(),
        "the effective config loads with diagnostics: {:?}",
        again.diagnostics
    );
});
