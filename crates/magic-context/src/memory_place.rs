//! Where `magic-context memory` finds a project's memories: the local tables, or, with
//! `team_store.url` set, the team's memories in the team store.
//!
//! In team mode the command does what `serve` does for the agent's memory tool: it first
//! sends what waits in the local queue and brings the project's cache up to date, reads the
//! cache, and writes through to the team store (each change queued durably first, so a
//! server that does not answer loses nothing: the change waits and is sent by `serve`'s sync
//! or the next `memory` command). Every output says which store it read or changed, so an
//! operator never mistakes the team's memories for this machine's, or the other way round.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use mc_config::{ConfigSources, load};
use mc_core::ProjectId;
use mc_engine::{TeamLink, read_knowledge, write_knowledge};
use mc_store::{ProjectKnowledge, ProjectKnowledgeWrite, Store, StoreError, WriteTx};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

use crate::team_link::team_link;

/// The team store a command works on, with the runtime its calls run on.
struct Team {
    link: Arc<TeamLink>,
    /// Why the server did not answer when the command caught up, if it did not.
    unreachable: Option<String>,
    _runtime: Runtime,
}

/// The store of a project's memories for one command.
pub struct MemoryPlace<'a> {
    store: &'a Store,
    team: Option<Team>,
}

impl<'a> MemoryPlace<'a> {
    /// This machine's own memory table, whatever the configuration says.
    pub fn local(store: &'a Store) -> Self {
        Self { store, team: None }
    }

    /// The memories of `project` (whose folder is `directory`) as the configuration there
    /// places them; in team mode, caught up with the team store first.
    pub fn open(
        store: &'a Store,
        directory: &Path,
        project: &ProjectId,
        now_ms: i64,
    ) -> anyhow::Result<Self> {
        let config = load(&ConfigSources::discover(Some(directory))).config;
        if config.team_store.url.is_none() {
            return Ok(Self::local(store));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .context("cannot start the async runtime for the team store")?;
        let link = team_link(&config, runtime.handle()).with_context(|| {
            "team_store.url is set but the team store cannot be used (see the log above); \
             fix or remove team_store.url"
        })?;
        let _migrated = runtime.block_on(link.sync().team().migrate());
        let unreachable = link
            .catch_up(project, now_ms)
            .err()
            .map(|error| error.to_string());
        Ok(Self {
            store,
            team: Some(Team {
                link,
                unreachable,
                _runtime: runtime,
            }),
        })
    }

    /// Whether the memories are the team's.
    pub fn is_team(&self) -> bool {
        self.team.is_some()
    }

    /// Runs `read` over the project's memories where they live.
    pub fn read<T>(
        &self,
        read: impl FnOnce(&dyn ProjectKnowledge) -> mc_store::Result<T>,
    ) -> mc_store::Result<T> {
        read_knowledge(self.store, self.link(), read)
    }

    /// Runs `write` over the project's memories where they live.
    pub fn write<T>(
        &self,
        write: impl FnOnce(&dyn ProjectKnowledgeWrite) -> mc_store::Result<T>,
    ) -> mc_store::Result<T> {
        write_knowledge(self.store, self.link(), write)
    }

    /// Runs `write` in one transaction of the local tables: for what only they can do (an
    /// import keeping each line's status and times). Refused in team mode.
    pub fn local_write<T>(
        &self,
        write: impl FnOnce(&WriteTx<'_>) -> mc_store::Result<T>,
    ) -> anyhow::Result<T> {
        anyhow::ensure!(
            self.team.is_none(),
            "the team's memories are changed through the team store, not the local tables"
        );
        Ok(self.store.write(write)?)
    }

    fn link(&self) -> Option<&TeamLink> {
        self.team.as_ref().map(|team| team.link.as_ref())
    }

    /// A line naming the team store the command worked on (with whether it answered), or
    /// nothing for the local tables.
    pub fn note(&self) -> String {
        let Some(team) = &self.team else {
            return String::new();
        };
        let url = team.link.shown_url();
        match &team.unreachable {
            None => format!("these are the team's memories, in the team store at {url}\n"),
            Some(reason) => format!(
                "these are the team's memories as this machine last synced them: the team \
                 store at {url} does not answer ({reason}); changes wait in the local queue\n"
            ),
        }
    }

    /// `object` with `team_store` (the redacted URL) and `team_store_answered` added in team
    /// mode.
    pub fn json(&self, mut object: Value) -> Value {
        if let (Some(team), Some(map)) = (&self.team, object.as_object_mut()) {
            map.insert("team_store".into(), json!(team.link.shown_url()));
            map.insert(
                "team_store_answered".into(),
                json!(team.unreachable.is_none()),
            );
        }
        object
    }

    /// The words for a change the team store could not take now, or `None` when `error` is
    /// something else.
    pub fn queued(&self, error: &StoreError) -> Option<String> {
        let StoreError::QueuedForTeam { write_id } = error else {
            return None;
        };
        Some(format!(
            "queued for the team store, which does not answer (write {write_id}): it is sent \
             when it does, by `serve` or the next `magic-context memory` command\n"
        ))
    }
}
