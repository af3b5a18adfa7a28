//! `dashboard` prints the login URL with the token from the data directory, and the proxy
//! `serve` starts over the same directory accepts it.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;

use crate::support::Machine;
use crate::support::servers::Server;

fn dashboard(machine: &Machine, data: &Path, port: u16) -> serde_json::Value {
    let port = port.to_string();
    machine
        .run(
            &["dashboard", "--port", &port, "--json"],
            &[("MAGIC_CONTEXT_DATA_DIR", data.as_os_str())],
        )
        .success()
        .json()
}

/// One HTTP/1.1 GET of `path` at `port` with `headers`; the whole answer as text.
fn http_get(port: u16, path: &str, headers: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{headers}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

#[test]
fn the_url_carries_a_private_token_that_stays() {
    let machine = Machine::fresh();
    let data = machine.path("data");
    let first = dashboard(&machine, &data, 1);
    assert_eq!(first["proxy"], "not_listening");
    let url = first["url"].as_str().unwrap();
    let token = url
        .strip_prefix("http://127.0.0.1:1/_magic-context/ui/login?token=")
        .unwrap_or_else(|| panic!("{url}"));
    assert_eq!(token.len(), 64);
    assert!(
        token.bytes().all(|byte| byte.is_ascii_hexdigit()),
        "{token}"
    );
    let file = data.join("dashboard-token");
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), token);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert_eq!(
        dashboard(&machine, &data, 1)["url"],
        url,
        "the same token again"
    );

    let plain = machine.run(
        &["dashboard", "--port", "1"],
        &[("MAGIC_CONTEXT_DATA_DIR", OsStr::new(&data))],
    );
    assert_eq!(plain.stdout, format!("{url}\n"));
    assert!(
        plain.stderr.contains("no proxy listens"),
        "{}",
        plain.stderr
    );
}

#[test]
fn the_proxy_serve_starts_accepts_the_printed_url() {
    let machine = Machine::fresh();
    let data = machine.path("data");
    let server = Server::serve(&machine, "http://127.0.0.1:9", &data, 200_000);
    let port: u16 = server.base_url.rsplit(':').next().unwrap().parse().unwrap();
    let printed = dashboard(&machine, &data, port);
    assert_eq!(printed["proxy"], "listening");
    let url = printed["url"].as_str().unwrap();
    let path = &url[url.find("/_magic-context/").unwrap()..];

    let login = http_get(port, path, "");
    assert!(login.starts_with("HTTP/1.1 303"), "{login}");
    let cookie = login
        .lines()
        .find_map(|line| line.strip_prefix("set-cookie: "))
        .and_then(|cookie| cookie.split(';').next())
        .unwrap_or_else(|| panic!("no cookie: {login}"));
    let page = http_get(
        port,
        "/_magic-context/ui/",
        &format!("Cookie: {cookie}\r\n"),
    );
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("<h1>Sessions</h1>"), "{page}");
    let refused = http_get(port, "/_magic-context/ui/", "");
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
}

/// With a proxy listening, `dashboard` opens the URL in the browser `BROWSER` names (after
/// printing it), which outlives the command; `--no-open` and `--json` only print.
#[cfg(unix)]
#[test]
fn the_printed_url_opens_in_the_users_browser() {
    use std::os::unix::fs::PermissionsExt;

    let machine = Machine::fresh();
    let data = machine.path("data");
    let server = Server::serve(&machine, "http://127.0.0.1:9", &data, 200_000);
    let port = server.base_url.rsplit(':').next().unwrap().to_owned();
    let opened = machine.path("opened.txt");
    let browser = machine.path("browser.sh");
    std::fs::write(
        &browser,
        // A browser takes its time to start: it must outlive the command that started it.
        format!(
            "#!/bin/sh\n/bin/sleep 1\necho \"$@\" > {}\n",
            opened.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755)).unwrap();
    let env = [
        ("MAGIC_CONTEXT_DATA_DIR", data.as_os_str()),
        ("BROWSER", browser.as_os_str()),
    ];

    for quiet in [
        &["dashboard", "--port", &port, "--no-open"][..],
        &["dashboard", "--port", &port, "--json"],
    ] {
        machine.run(quiet, &env).success();
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(!opened.exists(), "--no-open and --json open nothing");

    let run = machine.run(&["dashboard", "--port", &port], &env).success();
    let url = run.stdout.trim().to_owned();
    assert!(url.contains("/_magic-context/ui/login?token="), "{url}");
    assert!(run.stderr.contains("opened in"), "{}", run.stderr);
    let started = std::time::Instant::now();
    while !opened.exists() && started.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let given = std::fs::read_to_string(&opened).unwrap();
    assert_eq!(given.trim(), url, "the browser got the printed URL");
}
