//! The dreamer of Magic Context (DESIGN §5 "Dreamer"): scheduled maintenance that keeps a
//! project's memory true while nobody is waiting for it.
//!
//! Each task runs on its cron (`dreamer.schedules`) over the projects the proxy has served,
//! one at a time per conflict domain: memory-changing tasks take the project's lease in the
//! store, so two proxies on one store never run them at once and a killed one's lease lapses.
//! Every run is recorded (task, project, times, calls, tokens, list-price cost, outcome,
//! failure class, the provider's error). A rate limit or overload backs off; the same failure
//! repeated `stop_after_identical_failures` times stops the task until restart. A run that
//! would ask on the credential a call of its project is using right now waits for that call
//! to end ([`InFlight`]), and so does each of its model calls once it runs, within the
//! run's time, so it never competes with the session for the key's rate limit.
//!
//! The first task, `verify_memories`, gathers deterministic evidence before any model call:
//! each memory is mapped to the paths and identifiers it names, searched in the project's
//! folder (read-only: `.gitignore` honoured, paths outside the root, links out of it and
//! files over a size cap refused). Only a memory the search finds something against goes to
//! the model, with that evidence, to be kept, updated or archived; changes go through the
//! store's memory log with the task's name, so the head shows them on its next natural
//! rebuild. A model that fails or answers garbage changes nothing. The second,
//! `consolidate_memories`, groups memories that share most of their words and lets the model
//! merge the ones that say the same thing. Two need no model: `archive_stale_memories`
//! retires memories nothing has used or restated for `dreamer.archive_after_days`, and
//! `promote_user_profile` adds the user observations seen often enough to the profile.
//! `evaluate_smart_notes` checks each pending smart note's condition against the project (a
//! day, a file, a commit message by rule; plain words by the model, shown the commits since
//! the note) and surfaces the ones that hold. `rewrite_verbose_memories` asks the model for
//! a shorter text of each memory over `dreamer.rewrite_over_chars`, and uses one only when it
//! is shorter and keeps every path, name, value and number the original names.
//!
//! `pin_key_files` needs no model either: it counts the files the project's sessions read
//! (their tool calls in the raw log, weighted by recency) and pins the few read most, as
//! they are now, in `m[0]` within `dreamer.pin_key_files_budget_tokens`.
//!
//! Tasks that need the code run a small agent loop ([`AgentTools`]): the model works in
//! steps with read-only tools over the folder (list, read a line range, regex search,
//! `git log` and `git show` of a path) and the decisions its task offers, within a step cap,
//! a token budget and a time cap per run (`dreamer.agent_*`). `verify_memories` sends it
//! the memories whose file is gone, to learn whether the file was renamed or deleted;
//! `maintain_docs` has it compare ARCHITECTURE.md and STRUCTURE.md with the code and
//! propose a new text, written as a unified diff under the data directory
//! ([`write_proposal`]) when it differs, never into the project; a project with neither doc
//! but a busy last month may be proposed a first ARCHITECTURE.md the same way.
//!
//! It must not: bust a cache (its writes reach the prompt only when a pass rebuilds the head
//! anyway), read the clock in its decisions (cron, backoff and candidates take the time and
//! the project's text as arguments), write into a project folder, or keep a credential
//! anywhere but in memory.
//!
//! ```no_run
//! # fn run(store: &mc_store::Store, model: &dyn mc_dreamer::DreamerModel) -> mc_dreamer::Result<()> {
//! use mc_dreamer::{Limits, Runner, Task, TaskSettings};
//!
//! let clock = || 1_796_504_400_000;
//! let calls = mc_dreamer::InFlightCalls::default();
//! let runner = Runner {
//!     store, model, calls: &calls, owner: "cli-1", clock: &clock,
//!     limits: Limits::default(), settings: TaskSettings::default(), team: None,
//! };
//! let project = mc_core::ProjectId::new("git:abc").expect("a valid id");
//! let run = runner.run(Task::VerifyMemories, &project, Some(std::path::Path::new("/src/shop")))?;
//! println!("{} changes, {} calls", run.changes, run.model_calls);
//! # Ok(()) }
//! ```

mod agent_loop;
mod agent_tools;
mod archive;
mod batches;
mod consolidate;
mod doc_proposals;
mod error;
mod in_flight;
mod maintain_docs;
mod model;
mod model_turn;
mod near_duplicates;
mod note_condition;
mod pin_key_files;
mod project_commits;
mod project_folder;
mod project_index;
mod promote;
mod report;
mod rewrite;
mod rewrite_rule;
mod run;
mod schedule;
mod scheduler;
mod service;
mod smart_notes;
mod suspicion;
mod task;
mod task_clock;
mod task_settings;
mod team_memories;
mod unchanged;
mod verify;

pub use agent_tools::{AgentTools, MAX_READ_LINES, MAX_RESULT_CHARS};
pub use archive::{archive_stale_memories, staleness};
pub use batches::TaskContext;
pub use consolidate::{GROUPS_PER_CALL, consolidate_memories};
pub use doc_proposals::{
    DocProposal, PROPOSALS_DIR, Written, project_key, proposals_dir, read_proposals, write_proposal,
};
pub use error::{DreamerError, Result};
pub use in_flight::{CallGuard, CredentialId, InFlight, InFlightCalls};
pub use maintain_docs::{
    DOCS_OPENING, MAINTAINED_DOCS, NEW_DOC_MIN_COMMITS, NEW_DOC_MIN_FILES, NEW_DOC_OPENING,
    docs_message, maintain_docs, new_doc_message,
};
pub use mc_core::dreamer::{Mention, mentions_of};
pub use model::{DreamerModel, LlmJudge, failure_class, is_transient};
pub use model_turn::SESSION_BUSY;
pub use near_duplicates::{MAX_GROUP, MIN_OVERLAP, near_duplicate_groups};
pub use note_condition::{Condition, ProjectNow, holds, parse_condition};
pub use pin_key_files::{CHARS_PER_TOKEN, MIN_EXCERPT_CHARS, pin_key_files};
pub use project_commits::{MAX_COMMITS, ProjectCommit, commits_since};
pub use project_folder::{DEFAULT_MAX_FILE_BYTES, MAX_LISTED_FILES, ProjectFolder};
pub use project_index::ProjectIndex;
pub use promote::{PROFILE_DOMAIN, promote_user_profile};
pub use report::{Failure, TaskReport};
pub use rewrite::{REWRITES_PER_CALL, rewrite_verbose_memories};
pub use rewrite_rule::{Refusal, check_rewrite};
pub use run::{Limits, Runner};
pub use schedule::Schedule;
pub use scheduler::Scheduler;
pub use service::{Service, StoreHandle};
pub use smart_notes::{NOTES_PER_CALL, evaluate_smart_notes};
pub use suspicion::{candidate_of, evidence_for};
pub use task::Task;
pub use task_clock::{BACKOFF_BASE_MS, BACKOFF_MAX_MS, SweepEnd, TaskClock, backoff_ms};
pub use task_settings::TaskSettings;
pub use team_memories::TeamMemories;
pub use verify::{BATCH, verify_memories};
