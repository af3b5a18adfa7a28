//! What can stop the dreamer from running a task. A model's failure is not an error here: it
//! is part of the run's record (its failure class), and the scheduler backs off or stops.

use std::path::PathBuf;

/// A dreamer error.
#[derive(Debug, thiserror::Error)]
pub enum DreamerError {
    /// The store could not be read or written.
    #[error(transparent)]
    Store(#[from] mc_store::StoreError),
    /// The team store could not renew the run's lease on the project's memories: the run
    /// stops before its next write rather than risk a second dreamer's.
    #[error(
        "the team store could not renew the lease on the project's memories, so nothing more is changed: {reason}"
    )]
    TeamLease {
        /// Why (the URL in it is redacted).
        reason: String,
    },
    /// The task's changes were queued for the team store but could not be handed on; they
    /// stay queued and the sync sends them.
    #[error(
        "the dreamer's changes wait in the team write queue, which could not be read: {reason}"
    )]
    TeamQueue {
        /// Why.
        reason: String,
    },
    /// A task's schedule is not a cron expression.
    #[error("dreamer.schedules.{task}: `{expr}` is not a valid cron expression: {reason}")]
    BadSchedule {
        /// The task.
        task: &'static str,
        /// The expression.
        expr: String,
        /// What the parser said.
        reason: String,
    },
    /// A task name that is not one of the dreamer's.
    #[error("unknown dreamer task `{given}`; the tasks are: {known}")]
    UnknownTask {
        /// What was asked for.
        given: String,
        /// The tasks there are.
        known: String,
    },
    /// The project's folder cannot be opened.
    #[error("cannot open the project folder {}: {source}", .root.display())]
    Folder {
        /// The folder.
        root: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// A path that leaves the project's folder, by `..`, an absolute path or a symlink.
    #[error("`{path}` is outside the project folder; only files inside it can be read")]
    OutsideProject {
        /// The path asked for.
        path: String,
    },
    /// A file over the size cap.
    #[error("`{path}` is {bytes} bytes, over the {cap}-byte cap on files the dreamer reads")]
    TooLarge {
        /// The path asked for.
        path: String,
        /// Its size.
        bytes: u64,
        /// The cap.
        cap: u64,
    },
    /// A file that cannot be read (not text, permissions, gone meanwhile).
    #[error("cannot read `{path}` in the project folder: {source}")]
    Read {
        /// The path asked for.
        path: String,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// A doc proposal could not be written, read or removed under the data directory.
    #[error("cannot write the doc proposal {}: {source}", .path.display())]
    Proposal {
        /// The file or folder.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
}

/// The crate's result.
pub type Result<T, E = DreamerError> = std::result::Result<T, E>;
