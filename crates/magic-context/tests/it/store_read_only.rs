//! A store the proxy may read but not write (DESIGN §7): every managed call is refused with
//! an Anthropic-shaped error naming the file and the fix, nothing goes upstream, the file is
//! left byte for byte as it was, and once it is writable again the proxy manages calls
//! without a restart.
//!
//! Root ignores permission bits, and tests here often run as root; `serve` then runs under
//! `setpriv` with the capabilities that bypass them dropped from its bounding set, so the
//! read-only file is as read-only to it as to an ordinary user. That needs neither a mount
//! nor any privilege a container lacks by default.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::support::Machine;
use crate::support::deadline::{Bounded, QUICK};
use crate::support::recording_relay::Relay;
use crate::support::servers::Server;
use crate::support::store_check::assert_doctor_verifies_chains;
use crate::support::stream_client::{exchange, request_body, user_text};

/// Capabilities that let root write a file its mode forbids.
const PERMISSION_OVERRIDES: &str = "-dac_override,-dac_read_search,-fowner";

/// Whether this process may write a file whose mode says read-only (root may).
fn ignores_permissions(dir: &Path) -> bool {
    let probe = dir.join("probe");
    fs::write(&probe, b"probe").unwrap();
    fs::set_permissions(&probe, fs::Permissions::from_mode(0o400)).unwrap();
    let writable = fs::OpenOptions::new().write(true).open(&probe).is_ok();
    fs::remove_file(&probe).unwrap();
    writable
}

/// `setpriv` from `PATH`, checked to drop the overrides here.
fn setpriv() -> PathBuf {
    let found = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("setpriv"))
        .find(|path| path.is_file())
        .expect("tests run as root need `setpriv` (util-linux) to run serve without root's permission overrides");
    let mut command = Command::new(&found);
    command.args(["--bounding-set", PERMISSION_OVERRIDES, "--", "true"]);
    let works = Bounded::output(&mut command, "setpriv", QUICK)
        .status
        .success();
    assert!(
        works,
        "`setpriv` cannot drop capabilities here (CAP_SETPCAP missing?)"
    );
    found
}

#[test]
fn a_read_only_store_refuses_turns_and_serves_again_once_writable() {
    let machine = Machine::fresh();
    let script = machine.path("script.json");
    fs::write(&script, r#"{"turns": [], "final_text": "Looked."}"#).unwrap();
    let sim = Server::sim(&script, 200_000, 1.0);
    let relay = Relay::start(&sim.base_url);
    let data = machine.path("data");
    let db = data.join("context.db");
    drop(mc_store::Store::open(&db).unwrap());
    fs::set_permissions(&db, fs::Permissions::from_mode(0o400)).unwrap();
    let before = fs::read(&db).unwrap();

    let setpriv = ignores_permissions(&data).then(setpriv);
    let wrapper: Vec<&OsStr> = match &setpriv {
        Some(setpriv) => vec![
            setpriv.as_os_str(),
            OsStr::new("--bounding-set"),
            OsStr::new(PERMISSION_OVERRIDES),
            OsStr::new("--"),
        ],
        None => Vec::new(),
    };
    let serve = Server::serve_under(&wrapper, &machine, &relay.base_url, &data, 200_000);
    let sent = AtomicUsize::new(0);
    let body = request_body(&[("user".into(), user_text(0, 0))]);
    for _ in 0..2 {
        let (head, answer) = exchange(&serve.base_url, "ro", "0-0", &body, &sent).unwrap();
        assert!(
            head.starts_with("HTTP/1.1 503"),
            "{head}\n{answer}\n{}",
            serve.stderr()
        );
        let error: serde_json::Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(error["type"], "error", "{error}");
        assert_eq!(error["error"]["type"], "overloaded_error", "{error}");
        let message = error["error"]["message"].as_str().unwrap();
        let named = format!("the store at {} is read-only", db.display());
        assert!(message.contains(&named), "{message}");
        assert!(message.contains("chmod u+w"), "{message}");
        assert!(message.contains("not sent unmanaged"), "{message}");
    }
    assert_eq!(
        relay.log.received.load(Ordering::SeqCst),
        0,
        "nothing went upstream"
    );
    assert!(
        fs::read(&db).unwrap() == before,
        "the read-only store was changed"
    );

    fs::set_permissions(&db, fs::Permissions::from_mode(0o600)).unwrap();
    let (head, answer) = exchange(&serve.base_url, "ro", "0-0", &body, &sent).unwrap();
    assert!(
        head.starts_with("HTTP/1.1 200"),
        "{head}\n{answer}\n{}",
        serve.stderr()
    );
    assert_eq!(relay.log.received.load(Ordering::SeqCst), 1);
    drop(serve);

    assert_doctor_verifies_chains(&machine, &data, 1, 1);
}
