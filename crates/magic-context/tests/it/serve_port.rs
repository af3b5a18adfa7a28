//! `serve` on an address it cannot have says so once, with what to do: `--listen`, or the
//! proxy of ours that already listens there.

use std::net::TcpListener;
use std::path::Path;

use crate::support::Machine;
use crate::support::servers::Server;

fn serve_on(machine: &Machine, port: u16, data: &Path) -> crate::support::Run {
    let listen = format!("127.0.0.1:{port}");
    machine.run(
        &["serve", "--listen", &listen],
        &[("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())],
    )
}

#[test]
fn a_port_another_program_holds_is_said_once_with_the_way_out() {
    let machine = Machine::fresh();
    let squatter = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = squatter.local_addr().unwrap().port();
    let run = serve_on(&machine, port, &machine.path("data"));
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "one line: {}", run.stderr);
    assert!(
        run.stderr.starts_with(&format!(
            "error: cannot listen on 127.0.0.1:{port}: another program holds the port ("
        )),
        "{}",
        run.stderr
    );
    assert_eq!(
        run.stderr.matches("os error").count(),
        1,
        "the OS error once: {}",
        run.stderr
    );
    assert!(run.stderr.contains("--listen ADDR"), "{}", run.stderr);
}

#[test]
fn a_second_serve_names_the_proxy_already_listening() {
    let machine = Machine::fresh();
    let data = machine.path("data");
    let first = Server::serve(&machine, "http://127.0.0.1:9", &data, 200_000);
    let port: u16 = first.base_url.rsplit(':').next().unwrap().parse().unwrap();
    let run = serve_on(&machine, port, &data);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(
        run.stderr,
        format!(
            "error: a magic-context proxy already listens on 127.0.0.1:{port}; point agents at \
             it, or choose another address with --listen ADDR (or proxy.listen in the config)\n"
        )
    );
}
