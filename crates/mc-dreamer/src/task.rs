//! The dreamer's tasks: their names (the `dreamer.schedules` keys) and the conflict domain
//! each one holds while it runs.

use mc_core::ProjectId;
use mc_core::config::{DreamerSchedules, TaskSchedule};

use crate::error::{DreamerError, Result};
use crate::promote::PROFILE_DOMAIN;

/// One maintenance task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Task {
    /// Merge near-duplicate memories.
    ConsolidateMemories,
    /// Check memories against the project's code.
    VerifyMemories,
    /// Archive memories nothing has used for a long time.
    ArchiveStaleMemories,
    /// Rewrite verbose memories within budget.
    RewriteVerboseMemories,
    /// Propose ARCHITECTURE.md / STRUCTURE.md updates.
    MaintainDocs,
    /// Evaluate smart notes' conditions.
    EvaluateSmartNotes,
    /// Promote recurring user observations to the profile.
    PromoteUserProfile,
    /// Pin the files the agent re-reads most.
    PinKeyFiles,
}

impl Task {
    /// Every task, in the order the configuration lists them.
    pub const ALL: [Self; 8] = [
        Self::ConsolidateMemories,
        Self::VerifyMemories,
        Self::ArchiveStaleMemories,
        Self::RewriteVerboseMemories,
        Self::MaintainDocs,
        Self::EvaluateSmartNotes,
        Self::PromoteUserProfile,
        Self::PinKeyFiles,
    ];

    /// The task's name, as `dreamer.schedules` and the run records spell it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::ConsolidateMemories => "consolidate_memories",
            Self::VerifyMemories => "verify_memories",
            Self::ArchiveStaleMemories => "archive_stale_memories",
            Self::RewriteVerboseMemories => "rewrite_verbose_memories",
            Self::MaintainDocs => "maintain_docs",
            Self::EvaluateSmartNotes => "evaluate_smart_notes",
            Self::PromoteUserProfile => "promote_user_profile",
            Self::PinKeyFiles => "pin_key_files",
        }
    }

    /// Reads a task name, or says which names there are.
    pub fn parse(name: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|task| task.name() == name.trim())
            .ok_or_else(|| DreamerError::UnknownTask {
                given: name.to_owned(),
                known: names(&Self::ALL),
            })
    }

    /// The task's schedule in `schedules`.
    pub fn schedule(self, schedules: &DreamerSchedules) -> &TaskSchedule {
        match self {
            Self::ConsolidateMemories => &schedules.consolidate_memories,
            Self::VerifyMemories => &schedules.verify_memories,
            Self::ArchiveStaleMemories => &schedules.archive_stale_memories,
            Self::RewriteVerboseMemories => &schedules.rewrite_verbose_memories,
            Self::MaintainDocs => &schedules.maintain_docs,
            Self::EvaluateSmartNotes => &schedules.evaluate_smart_notes,
            Self::PromoteUserProfile => &schedules.promote_user_profile,
            Self::PinKeyFiles => &schedules.pin_key_files,
        }
    }

    /// The lease it holds while it runs on `project`: every task that changes memories
    /// shares one domain per project, so two of them never edit the same memories at once;
    /// smart notes and key files have a domain of their own per project (they touch no
    /// memory), and the user's profile is one for every project, so its task holds one
    /// store-wide lease.
    pub fn domain(self, project: &ProjectId) -> String {
        match self {
            Self::PromoteUserProfile => PROFILE_DOMAIN.to_owned(),
            Self::EvaluateSmartNotes => format!("notes:{project}"),
            Self::PinKeyFiles => format!("key_files:{project}"),
            Self::ConsolidateMemories
            | Self::VerifyMemories
            | Self::ArchiveStaleMemories
            | Self::RewriteVerboseMemories
            | Self::MaintainDocs => format!("memories:{project}"),
        }
    }

    /// Whether the task changes the project's memories (or the docs beside them), so holds
    /// the project's memory lease: in the team store when the memories live there.
    pub const fn changes_memories(self) -> bool {
        match self {
            Self::ConsolidateMemories
            | Self::VerifyMemories
            | Self::ArchiveStaleMemories
            | Self::RewriteVerboseMemories
            | Self::MaintainDocs => true,
            Self::EvaluateSmartNotes | Self::PromoteUserProfile | Self::PinKeyFiles => false,
        }
    }

    /// Whether the task cannot run without a model: the deterministic ones decide from the
    /// store alone and run on a project nobody can pay a model for.
    pub const fn needs_model(self) -> bool {
        match self {
            Self::ConsolidateMemories
            | Self::VerifyMemories
            | Self::RewriteVerboseMemories
            | Self::MaintainDocs => true,
            Self::ArchiveStaleMemories
            | Self::EvaluateSmartNotes
            | Self::PromoteUserProfile
            | Self::PinKeyFiles => false,
        }
    }

    /// Whether the task reads the project's folder, so it is skipped when the folder is
    /// not known or gone.
    pub const fn needs_folder(self) -> bool {
        match self {
            Self::VerifyMemories
            | Self::MaintainDocs
            | Self::EvaluateSmartNotes
            | Self::PinKeyFiles => true,
            Self::ConsolidateMemories
            | Self::ArchiveStaleMemories
            | Self::RewriteVerboseMemories
            | Self::PromoteUserProfile => false,
        }
    }
}

fn names(tasks: &[Task]) -> String {
    tasks
        .iter()
        .map(|task| task.name())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_and_unknown_tasks_say_what_exists() {
        for task in Task::ALL {
            assert_eq!(Task::parse(task.name()).unwrap(), task);
        }
        let unknown = Task::parse("sleep").unwrap_err().to_string();
        assert!(
            unknown.contains("verify_memories, archive_stale_memories"),
            "{unknown}"
        );
        assert!(
            unknown.ends_with("promote_user_profile, pin_key_files"),
            "{unknown}"
        );
    }

    #[test]
    fn memory_tasks_of_one_project_share_a_domain() {
        let project = ProjectId::new("git:abc").unwrap();
        assert_eq!(
            Task::VerifyMemories.domain(&project),
            Task::ConsolidateMemories.domain(&project)
        );
        assert_eq!(Task::VerifyMemories.domain(&project), "memories:git:abc");
        let other = ProjectId::new("git:def").unwrap();
        assert_eq!(
            Task::PromoteUserProfile.domain(&project),
            Task::PromoteUserProfile.domain(&other),
            "the profile is the user's, one for every project"
        );
    }
}
