//! A dreamer task's change applied to a team's memories ([`Maintenance`]), in the write's
//! own transaction under the project's lock.
//!
//! The rules are the local ones (`mc-store`'s `dreamer_rows.rs`): only active memories
//! change, a merge retires the others first (one of them may already say the merged text)
//! and then gives the kept one its text, a text another live memory states is refused. One
//! more holds here because the task read a cache, maybe minutes ago: every memory the change
//! names must still say what the task read, or nothing is applied. Each change is logged
//! with the dreamer as actor and the task's name, so `m[1]` and `memory log` on every
//! machine show which task made it and why.

use mc_core::historian::fact_key;
use mc_store::{Added, Maintenance, MaintenanceKind, MemoryAction, MemorySource, MemoryStatus};

use crate::error::{Result, postgres};
use crate::rows::pg_id;
use crate::writes::{Change, refused};

impl Change<'_> {
    /// Applies `maintenance`; the memory it is about (the kept one of a merge).
    pub(crate) async fn maintain(&self, maintenance: &Maintenance) -> Result<Added> {
        let Some((first, first_seen)) = maintenance.seen.first() else {
            return Err(refused(0, "a dreamer change names no memory"));
        };
        for (index, (id, seen)) in maintenance.seen.iter().enumerate() {
            if maintenance.seen[..index]
                .iter()
                .any(|(other, _)| other == id)
            {
                return Err(refused(*id, "a merge names each memory once"));
            }
            let memory = self.require(*id).await?;
            match memory.record.status {
                MemoryStatus::Active => {}
                MemoryStatus::Permanent => {
                    return Err(refused(
                        *id,
                        "it is permanent; only the operator retires it",
                    ));
                }
                MemoryStatus::Archived => return Err(refused(*id, "it is already archived")),
            }
            if memory.record.content != *seen {
                return Err(refused(
                    *id,
                    "it changed since the dreamer read it; the verdict was about the old text",
                ));
            }
        }
        let by = (MemorySource::Dreamer, Some(maintenance.task.as_str()));
        let single = maintenance.seen.len() == 1;
        match &maintenance.change {
            MaintenanceKind::Archive if single => {
                self.retire(*first, None).await?;
                self.log(
                    *first,
                    MemoryAction::Archived,
                    by,
                    Some(maintenance.reason.as_str()),
                )
                .await?;
            }
            MaintenanceKind::Rewrite { content } if single => {
                let detail = format!("content: {}", maintenance.reason);
                self.rewrite((*first, first_seen), content, by, &detail)
                    .await?;
            }
            MaintenanceKind::Merge { content } if !single => {
                for (other, _) in &maintenance.seen[1..] {
                    self.retire(*other, Some(*first)).await?;
                    let detail = format!("by {first}");
                    self.log(*other, MemoryAction::Superseded, by, Some(&detail))
                        .await?;
                }
                self.rewrite((*first, first_seen), content, by, "content: merged")
                    .await?;
            }
            MaintenanceKind::Archive | MaintenanceKind::Rewrite { .. } => {
                return Err(refused(*first, "an archive or rewrite names one memory"));
            }
            MaintenanceKind::Merge { .. } => {
                return Err(refused(*first, "a merge names two memories or more"));
            }
        }
        Ok(Added::Merged(*first))
    }

    /// Gives memory `id`, which says `current`, the text `content`; nothing when it is the
    /// same text.
    async fn rewrite(
        &self,
        (id, current): (u64, &str),
        content: &str,
        by: (MemorySource, Option<&str>),
        detail: &str,
    ) -> Result<()> {
        let content = content.trim();
        if content == current {
            return Ok(());
        }
        self.refuse_repeat(id, content).await?;
        self.tx
            .execute(
                "UPDATE mc_memories SET content = $2, content_key = $3, updated_ms = $4,
                   version = nextval('mc_version') WHERE id = $1",
                &[&pg_id(id), &content, &fact_key(content), &self.now_ms],
            )
            .await
            .map_err(postgres(self.url, "rewriting a memory"))?;
        self.log(id, MemoryAction::Changed, by, Some(detail)).await
    }
}
