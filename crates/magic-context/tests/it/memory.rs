
#[test]
fn import_reads_stdin_without_a_file() {
    use std::io::Write;
    use std::process::{Command, Stdio};

    let machine = Machine::fresh();
    let mut child = Command::new(env!("CARGO_BIN_EXE_magic-context"))
        .args(["memory", "import", "--json"])
        .current_dir(machine.path("work"))
        .env_clear()
        .env("HOME", machine.path("home"))
        .env("XDG_CONFIG_HOME", machine.path("xdg"))
        .env("MAGIC_CONTEXT_DATA_DIR", machine.path("data"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"category\":\"project-rules\",\"content\":\"Run cargo fmt\"}\n")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!((answer["added"].clone(), answer["merged"].clone()), (json!(1), json!(0)));
    let listed = listed(&memory(&machine, "data", &["list", "--json"]).success());
    assert_eq!(
        listed,
        [json!({"id": 1, "category": "PROJECT_RULES", "content": "Run cargo fmt",
            "status": "active", "source": "operator", "seen_count": 1, "superseded_by": null})]
    );
}
