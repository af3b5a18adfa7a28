//! Which session an operator command (`flush`, `reduce`, `recomp`, `wrapup`) acts on: the
//! one `--session` names, else the most recently seen session of the project the command
//! runs in, which is the one a user in that folder means nearly always. The command says
//! which it took, on stderr, so a script reading stdout is not disturbed.

use std::path::Path;

use anyhow::{Context, bail};
use mc_core::SessionId;
use mc_store::Store;

use crate::clock::now_ms;
use crate::status_cmd::age;

/// The session named, else the most recent of `folder`'s project.
pub fn choose(store: &Store, named: Option<&str>, folder: &Path) -> anyhow::Result<SessionId> {
    if let Some(named) = named {
        return Ok(SessionId::new(named)?);
    }
    let Some(project) = mc_proxy::identify_project(folder) else {
        bail!(
            "{} belongs to no project the proxy has seen; pass --session ID (`magic-context \
             status` lists the sessions)",
            folder.display()
        );
    };
    let latest = store
        .read(|tx| tx.project_sessions_seen_since(&project, 0))
        .context("cannot read the project's sessions")?
        .into_iter()
        .next();
    let Some(latest) = latest else {
        bail!(
            "no session of the project in {} yet; pass --session ID (`magic-context status` \
             lists the sessions)",
            folder.display()
        );
    };
    let seen = now_ms().map_or_else(
        |_| String::new(),
        |now| format!(", seen {}", age(now, latest.last_seen_ms)),
    );
    eprintln!(
        "acting on session {}, the most recent of the project in {}{seen}; pass --session ID \
         for another",
        latest.id,
        folder.display()
    );
    Ok(latest.id)
}
