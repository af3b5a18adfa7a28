//! Opening a URL in the user's browser, where this machine has one.
//!
//! The browser is the one `BROWSER` names (the usual convention: a list of commands
//! separated by `:`, the first used; `%s` in it stands for the URL, else the URL is its last
//! argument); else `open` on macOS; else `xdg-open` on a desktop session (`DISPLAY` or
//! `WAYLAND_DISPLAY` set). A server with none of these gets the printed URL alone. The
//! browser is started in a process group of its own and left running: it outlives this
//! command (a terminal closing, or a supervisor stopping the command's group, leaves it
//! open), and its exit says nothing about the page.

use std::process::{Command, Stdio};

/// Starts the browser on `url`; the command used, or `None` when this machine has no
/// browser to start.
pub fn open(url: &str) -> std::io::Result<Option<String>> {
    let Some((program, args)) = browser_command(url, |name| std::env::var(name).ok()) else {
        return Ok(None);
    };
    let mut command = Command::new(&program);
    command
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    command.spawn()?;
    Ok(Some(program))
}

/// The program and arguments that open `url`, from the environment `var` reads.
fn browser_command(
    url: &str,
    var: impl Fn(&str) -> Option<String>,
) -> Option<(String, Vec<String>)> {
    if let Some(first) = var("BROWSER").as_deref().and_then(|list| {
        list.split(':')
            .map(str::trim)
            .find(|entry| !entry.is_empty())
    }) {
        let mut words = first.split_whitespace().map(str::to_owned);
        let program = words.next()?;
        let mut args: Vec<String> = words.collect();
        if args.iter().any(|arg| arg.contains("%s")) {
            args.iter_mut()
                .for_each(|arg| *arg = arg.replace("%s", url));
        } else {
            args.push(url.to_owned());
        }
        return Some((program, args));
    }
    if cfg!(target_os = "macos") {
        return Some(("open".to_owned(), vec![url.to_owned()]));
    }
    let desktop = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|name| var(name).is_some_and(|value| !value.is_empty()));
    (cfg!(unix) && desktop).then(|| ("xdg-open".to_owned(), vec![url.to_owned()]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(env: &[(&str, &str)]) -> Option<(String, Vec<String>)> {
        browser_command("http://127.0.0.1:4141/x", |name| {
            env.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        })
    }

    #[test]
    fn browser_names_the_command_and_where_the_url_goes() {
        let url = "http://127.0.0.1:4141/x".to_owned();
        assert_eq!(
            command(&[("BROWSER", "firefox --new-tab:chromium")]),
            Some((
                "firefox".to_owned(),
                vec!["--new-tab".to_owned(), url.clone()]
            ))
        );
        assert_eq!(
            command(&[("BROWSER", "w3m %s -dump")]),
            Some(("w3m".to_owned(), vec![url.clone(), "-dump".to_owned()]))
        );
        assert_eq!(
            command(&[("BROWSER", " : ")]),
            command(&[]),
            "an empty list names none"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_desktop_session_opens_with_xdg_open_and_a_server_opens_nothing() {
        assert_eq!(
            command(&[("WAYLAND_DISPLAY", "wayland-0")]),
            Some((
                "xdg-open".to_owned(),
                vec!["http://127.0.0.1:4141/x".to_owned()]
            ))
        );
        assert_eq!(command(&[("DISPLAY", "")]), None);
        assert_eq!(command(&[]), None);
    }
}
