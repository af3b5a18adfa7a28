//! `serve` runs with one malloc arena under glibc, set by re-executing itself as it starts,
//! so a long session's freed request bodies are reused by whichever thread allocates next
//! instead of staying resident in arenas other threads never use.

use crate::support::Machine;
use crate::support::servers::Server;

#[test]
fn serve_runs_with_one_malloc_arena_in_its_own_process() {
    let machine = Machine::fresh();
    let data = machine.path("data");
    // Nothing is called upstream: the test looks at the process only.
    let serve = Server::serve(&machine, "http://127.0.0.1:9", &data, 200_000);
    let proc_file = |name: &str| std::fs::read(format!("/proc/{}/{name}", serve.pid())).unwrap();
    let environ = proc_file("environ");
    assert!(
        environ
            .split(|&byte| byte == 0)
            .any(|variable| variable == b"MALLOC_ARENA_MAX=1"),
        "{}",
        serve.stderr()
    );
    // The process that printed the listening line is the re-executed one, with the
    // arguments it was started with.
    let cmdline = proc_file("cmdline");
    let args: Vec<&[u8]> = cmdline.split(|&byte| byte == 0).collect();
    assert_eq!(args.get(1..3), Some(&[&b"serve"[..], b"--listen"][..]));
}
